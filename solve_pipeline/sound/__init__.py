"""Sound: each clip summarised as a row of numbers the table families read.

May import: networks, base.
"""
