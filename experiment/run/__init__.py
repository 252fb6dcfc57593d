"""A run end to end: sites, fleet, schedulers, arms, then the report (`runner.py`)."""
