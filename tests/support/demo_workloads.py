"""A demo plan's workload for unit tests of the demo wing's planning."""

from __future__ import annotations

from typing import Any

from experiment.demo import plan


def workload(**over: Any) -> plan.Workload:
    """A workload of one repeat, no latency arms and no scale fleet, with `over` laid over."""
    fields: dict[str, Any] = {
        "pods": 100,
        "repeat": 1,
        "comparisons": ("extender", "dra"),
        "latency_arms": False,
        "scale_nodes": 0,
    }
    return plan.Workload(**{**fields, **over})
