"""Kubernetes component versions and the supported version skew between them (pure).

Kubernetes supports a kube-scheduler (or kube-controller-manager) of the API server's minor
release or one before it, never a newer one. A preview release runs a newer kube-scheduler
on the previous release's API server: outside that skew, and every status, result and
report of such a cluster says so with `skew`'s sentence.
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def minor(version: str) -> tuple[int, int] | None:
    """(1, 38) of `v1.38.0-beta.0`; None if it is no version."""
    m = _VERSION.match(version.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def skew(apiserver: str, scheduler: str) -> str | None:
    """Why kube-scheduler `scheduler` beside kube-apiserver `apiserver` (gitVersions) is
    outside the supported version skew; None inside it, or when either is unknown."""
    api, sched = minor(apiserver), minor(scheduler)
    if api is None or sched is None:
        return None
    if sched > api:
        why = "newer than"
    elif sched[0] != api[0] or api[1] - sched[1] > 1:
        why = "more than one minor release older than"
    else:
        return None
    return (
        f"version skew: kube-scheduler {scheduler} is {why} kube-apiserver {apiserver}, "
        "outside Kubernetes' supported skew"
    )
