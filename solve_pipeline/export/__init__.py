"""Taking a model away: the predictor a solve leaves (its fitted maps, fold models, calibration,
bags and blender, checked against the solve's own test predictions), `agentk export`'s
self-contained folder and `agentk predict`.

May import: phases and every room below it.
"""
