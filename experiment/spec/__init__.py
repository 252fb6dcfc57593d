"""Experiment files: what a file may say, checked before anything is created.

    spec.py         parsing and checks (one line naming the field)
    mixed_fleet.py  the mixed fleet `fleet.profile: PROFILE` names

A file is checked before anything is created.
"""
