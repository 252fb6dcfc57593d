"""Types of the fault tests' fixtures (the fixtures themselves live in tests/faults/conftest.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

RestartApiServer = Callable[[], Awaitable[float]]
"""Stops kube-apiserver, starts it again and waits until it answers; returns the outage in s."""
