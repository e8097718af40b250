"""HTML reports a data scientist looks at: one self-contained page per run and per campaign (#15)."""
