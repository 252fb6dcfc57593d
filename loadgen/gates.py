"""Feature gates a scenario needs beyond DRA's own, checked before anything is created.

A gate the API server runs with off drops the fields it guards from what loadgen creates
(a ResourceClaimTemplate's `derivedAttributes`), and a scheduler with it off refuses them: the
run would then measure refusals, not what it says. What the cluster runs with is read from
the API server's /metrics (`kubernetes_feature_enabled`; the local cluster's components share
one gate set). Native gangs' own check (the Workload API served) is `workload_api`.
"""

from __future__ import annotations

import logging
import re

from loadgen.scenarios import Scenario
from testbed import vocab
from testbed.cluster import binaries, feature_gates
from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

_MINOR = re.compile(r"^v?1\.(\d+)")


class Unsupported(Exception):
    """The cluster cannot run the scenario as written: one line naming what is missing."""


def release_of(git_version: str) -> str | None:
    """`1.NN` of a `/version` gitVersion (`v1.36.4` -> `1.36`); None if unreadable (pure)."""
    m = _MINOR.match(git_version)
    return f"1.{m.group(1)}" if m else None


async def reported(kube: Kube) -> dict[str, bool] | None:
    """Each gate's state as the API server reports it; None when it does not say (a cluster
    that hides its metrics is not refused on a guess)."""
    try:
        text = await kube.request("GET", "/metrics", retry=False, text=True)
    except errors.KubeError:
        return None
    return feature_gates.enabled_in(str(text)) or None


def derived_needed(scenario: Scenario) -> bool:
    return any(p.claim.derived for p in scenario.phases)


def derived_problem(git_version: str, state: dict[str, bool] | None) -> str | None:
    """Why derived attributes cannot run on a cluster of `git_version` whose API server
    reports the gates `state` (None: unknown); None when they can, or cannot be told (pure)."""
    gate, first = vocab.DERIVED_GATE, vocab.DERIVED_RELEASE
    flag = f"testbed up --feature-gates {gate}=true"
    release = release_of(git_version)
    if release is not None and not binaries.at_least(release, first):
        return (
            f"derived attributes need Kubernetes {first} or later with the alpha gate {gate} "
            f"on: Kubernetes {git_version} has no such gate (use numa=true without derived)"
        )
    if state is None or state.get(gate):
        return None
    return (
        f"derived attributes need the alpha feature gate {gate}, off on Kubernetes "
        f"{git_version} ({flag})"
    )


async def check_derived(kube: Kube, scenario: Scenario) -> None:
    """Unsupported unless the cluster can allocate the scenario's derived attributes."""
    if not derived_needed(scenario):
        return
    info = await kube.request("GET", "/version", retry=False)
    git_version = str((info or {}).get("gitVersion", "unknown"))
    state = await reported(kube)
    if state is None:
        log.warning("the API server does not report its gates: %s not checked", vocab.DERIVED_GATE)
    if (text := derived_problem(git_version, state)) is not None:
        raise Unsupported(text)
