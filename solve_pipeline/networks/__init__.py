"""The solver's torch work: the device choice, the one training loop and what torch models share.

May import: base.
"""
