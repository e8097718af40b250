"""A run's records: the workspace and its lock, the configuration, the event stream, the solve's and the campaign's records, the LLM solve policy's protocol.

May import: the core's root modules, metrics.
"""
