"""The ground floor: what every other package may import, and which imports none of them.

Workspace layout and locking, the sandbox that runs generated code (with its isolation, cgroups
and secret scrubbing), events, errors, metrics, table readers and archives, and the run config."""
