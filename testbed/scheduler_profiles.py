"""The shipped kube-scheduler's profiles: one for every pod, one for gangs.

A gang's later pods must be offered the block its first pods took. At the default
`percentageOfNodesToScore` kube-scheduler stops filtering once it has found enough feasible
nodes, starting each cycle where the last stopped, so an extender sees only that window
and a gang lands in the fewest blocks about half the time at 1,000 nodes. The gang profile
scores every feasible node; only pods that name it (`spec.schedulerName`) pay for that.
Extenders are configured per scheduler, not per profile, so both profiles call them.

A scheduler named S (the shipped `default-scheduler`, or a second scheduler of a comparison)
serves its gangs as `S-gang`: loadgen derives the name, and every place that renames the
shipped profiles for another scheduler goes through `renamed`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

DEFAULT_SCHEDULER: Final = "default-scheduler"
GANG_SUFFIX: Final = "-gang"


def gang_profile(scheduler_name: str | None) -> str:
    """The profile that serves the gangs of `scheduler_name` (None: the cluster's default)."""
    return (scheduler_name or DEFAULT_SCHEDULER) + GANG_SUFFIX


def renamed(profiles: Sequence[Mapping[str, Any]], scheduler_name: str) -> list[dict[str, Any]]:
    """The shipped `profiles` served under `scheduler_name`: the first (every pod's) takes
    that name, the gang profile `gang_profile(scheduler_name)`; others are dropped (pure)."""
    if not profiles:
        return [{"schedulerName": scheduler_name}]
    out = [{**profiles[0], "schedulerName": scheduler_name}]
    gang = gang_profile(DEFAULT_SCHEDULER)
    out += [
        {**p, "schedulerName": gang_profile(scheduler_name)}
        for p in profiles[1:]
        if p.get("schedulerName") == gang
    ]
    return out
