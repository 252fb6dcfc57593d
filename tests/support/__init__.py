"""Helpers the tests share across tiers: child processes, waiting on watches, test objects,
private fleets, document generators. No tests here; test modules and conftests import from
this package only, never from each other."""
