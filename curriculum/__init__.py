"""Memory and curriculum: the setup-fix experience memory (`experience.py`), the campaign's task
memory RAG⁺/RAG⁻ (`task_memory.py`) over tree descriptions (`tree_description.py`), the next-task
selection of Agent K's equation 7 (`selection.py`) and solver warm starts (`warm_start.py`)."""
