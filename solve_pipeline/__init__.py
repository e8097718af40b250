"""Models, HEBO tuning, blending and the solver that runs them (see solver.py).

The environment is set here, once, because a package's __init__ runs before any of its modules
imports numpy, torch or LightGBM, whichever entry point (the sandboxed solver, the meta checks,
a test) comes first.
"""

import os

# Before the first OpenMP load: on a busy 2-core machine spin-waiting threads made LightGBM with
# num_threads=2 measured 7-50x slower, and a small MLP's 2-thread epochs 3-30x slower, than passive waits.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Pretrained models load offline; their progress bars would only clutter the run's output.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
