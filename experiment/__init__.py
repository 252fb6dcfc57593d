"""Experiments above the three services: a fleet, variants, workloads and repeats, run through
the services' CLIs and public APIs, and the comparison report. `testbed demo` is the built-in one.
"""
