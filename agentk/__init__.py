"""agentk: an autonomous Kaggle competitor (after Agent K v1.0, Grosnit et al., 2024)."""

__version__ = "0.1.0"
