"""The image-to-image room: a target that is a picture (agentk.core.pixels), learnt pixel by pixel.

It owns the per-pixel features, the pixel model and the solve of such a task; it imports the core's
contract (agentk.core), the setup's artifacts (solve_pipeline.base.setup_modules) and the submission
record, never the table solver's race, which rows of pixels do not fit.

May import: base.
"""
