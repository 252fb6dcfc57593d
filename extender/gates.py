"""Feature gates of the cluster the extender serves, where its allocation search must follow
the allocator's: DRAFractionalCapacityRange decides whether capacity request policies step in
milli-units or in whole units (1.37: beta, off unless the control plane sets it or its
--min-compatibility-version is 1.37; 1.35 and 1.36 have no such gate).

Read once at start from kube-apiserver's /metrics (`kubernetes_feature_enabled`), the one
component both a local cluster and a real one let the extender's own credentials reach (a
sidecar cannot read kube-scheduler's secure port without a token it does not have). A cluster
whose scheduler runs other gates than its API server is told so by the explicit setting.
"""

from __future__ import annotations

import logging

from testbed.cluster import feature_gates
from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

GATE = "DRAFractionalCapacityRange"
FIRST_RELEASE = (1, 37)
"""The first release with the gate: before it the allocator always rounds to whole units."""


def fractional(state: dict[str, bool] | None, release: tuple[int, int] | None) -> bool:
    """Whether the allocator steps capacity ranges in milli-units, from the gates the API
    server reports (`state`; None: unreadable) on `release` (None: unknown, the newest).
    Unreadable on 1.37 or later: milli-units, the error that is harmless here: DRA's own
    filter runs before the extender's, so judging a share smaller than the allocator does
    never refuses a node it accepted, while judging it larger would. (Milli-units round a
    share to at most what whole units do wherever whole units lie on the policy's grid, as
    with the fleet's min and step of 100m; pure.)"""
    if release is not None and release < FIRST_RELEASE:
        return False
    if state is None:
        return True
    return state.get(GATE, False)


async def read_fractional(kube: Kube, release: tuple[int, int] | None) -> bool:
    """`fractional` for the cluster behind `kube`, logged with where it came from."""
    if release is not None and release < FIRST_RELEASE:
        log.info("Kubernetes %d.%d has no %s: capacity ranges in whole units", *release, GATE)
        return False
    state: dict[str, bool] | None = None
    try:
        text = await kube.request("GET", "/metrics", text=True)
        state = feature_gates.enabled_in(str(text)) or None
    except errors.KubeError as e:
        log.warning("cannot read the API server's /metrics (%s)", e)
    on = fractional(state, release)
    if state is None:
        log.warning(
            "%s unknown: judging capacity ranges in milli-units; set fractional_capacity to "
            "say how the scheduler runs",
            GATE,
        )
    else:
        log.info(
            "the API server reports %s %s: capacity ranges in %s",
            GATE,
            "on" if on else "off",
            _unit(on),
        )
    return on


def _unit(on: bool) -> str:
    return "milli-units" if on else "whole units"
