"""Rival systems for `agentk bench`, run on the same workspace, split and budget as agentk:
LightGBM with defaults (`lightgbm_defaults`) and AutoGluon in its own venv (`autogluon_rival`,
`autogluon_runner`). `common` holds the shared record and grading, `memory` the peak-RSS probe,
`frames` the sandboxed formatting side, `splits` the repeated held-out splits."""
