"""The LLM solve policy inside the sandboxed solver, and the model-written feature code it may try (each run in a room of its own).

May import: phases and every room below it.
"""
