"""The race: the model families' registry, successive halving under K-fold CV, HEBO tuning, bagging, calibration and warm starts from a campaign's memory.

May import: inputs, fusion and every room below them.
"""
