"""The solve's phases after the race, and the one path every solution takes to the submission (`solve_state.Solver.consider`).

May import: race, blend and every room below them.
"""
