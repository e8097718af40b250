"""Blending: solutions' out-of-fold predictions combined, and the stacking level's learners.

May import: base.
"""
