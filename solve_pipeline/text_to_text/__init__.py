"""The solve of a text-to-text target (token normalisation): memorised pairs, spelling rules, the input kept.

May import: base.
"""
