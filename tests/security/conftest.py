"""The hostile cases of the hardening issue: each asserts a property (a secret not found, a file
not written, a process gone), not the mechanism that gives it."""

import sys
from pathlib import Path

# The shared test helpers (scripted LLM server, fake Kaggle) live one folder up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
