"""What a parsed file runs: its arms in stages, its design, and the seams a wing plans through.

    matrix.py  a file's variants x workloads in stages; the engine's Planner
    design.py  how many paired repeats a comparison runs, and each look's test level
    wing.py    the registry of wings, and the Planner and Reporter a wing hands the runner

None of them touches a cluster: the runner hands them a parsed file and a fleet's shape.
"""
