"""What the readers stand on: archives unpacked under checks, bounded records, repeated headers, markdown's structure.

May import: the core's root modules.
"""
