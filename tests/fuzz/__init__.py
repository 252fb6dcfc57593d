"""Fuzz campaigns: the fuzz tests' generators and oracles at scale (100,000 inputs), run by
hand (`python -m tests.fuzz.parsers`, `python -m tests.fuzz.extender`); pytest collects none."""
