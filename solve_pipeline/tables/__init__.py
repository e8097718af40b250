"""Tables: the tabular block's columns, target encoding and scaling, the extra tree families and ordinal grades.

May import: networks, base.
"""
