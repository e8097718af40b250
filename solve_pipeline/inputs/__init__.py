"""What a solve starts from: the setup's artifacts read into a FeatureSet (features.py), the
folds that match the test, joins kept when they help, forecast and wide-table features, and sound
windows within the budget.

May import: tables, texts, images, sound, networks, base.
"""
