"""Benchmark scripts (`python bench/NAME.py --help`); what they share is in `common.py`.
A package only so that import-linter can check what the benches import."""
