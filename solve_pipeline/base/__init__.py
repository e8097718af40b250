"""What every room of the solve stands on: the setup's artifacts, the FeatureSet, the model
protocol, K-fold CV and its scoring, decoding, the choice among candidates within noise, and the
submission's record.

May import: nothing of solve_pipeline.
"""
