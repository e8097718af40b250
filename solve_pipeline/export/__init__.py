"""A model to take away (issue #39): the solve's predictor of its submission and its export.

`replay.py` (the recipes a solution's test predictions are made again by), `saved.py` (the solve
writes and checks the predictor), `predictor.py` (runs it on a test folder; travels in the
export), `bundle.py` and `code_closure.py` (`agentk export`), `workspace_predict.py` (`agentk
predict`). Imported by cv.py: nothing here may import a module at load time that imports cv.
"""
