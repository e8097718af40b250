"""Experience memory and curriculum task selection (built by a later issue)."""
