"""The sandbox: untrusted Python run in namespaces with caps on processes, memory and disk.

May import: the core's root modules.
"""
