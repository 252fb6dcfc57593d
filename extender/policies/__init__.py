"""Scoring and filtering policies: pure functions over plain data, no I/O, no clock."""
