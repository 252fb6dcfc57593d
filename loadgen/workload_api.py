"""Native gangs need the Workload API served: where it is not, say which release or gate.

Checked before anything is created. A PodGroup the API server does not serve would fail the
first create, and a pod naming a PodGroup on a scheduler without the gang plugin would be
scheduled pod by pod: either way the run would not measure what it says.
"""

from __future__ import annotations

import re

from loadgen.scenarios import Scenario
from testbed import vocab
from testbed.kube import errors, resources
from testbed.kube.client import Kube

_MINOR = re.compile(r"^v?1\.(\d+)")


class Unsupported(Exception):
    """The cluster cannot run the scenario's native gangs: one line naming what is missing."""


def needed(scenario: Scenario) -> bool:
    return any(p.native_gang for p in scenario.phases)


def problem(git_version: str, served: bool) -> str | None:
    """Why native gangs cannot run on a cluster of `git_version` that does (not) serve the
    PodGroups of the Workload API's v1beta1 (pure); None when they can."""
    if served:
        return None
    wanted = f"native gangs need {vocab.WORKLOAD_API_VERSION} PodGroups"
    m = _MINOR.match(git_version)
    if m and int(m.group(1)) < int(vocab.WORKLOAD_RELEASE.split(".")[1]):
        return (
            f"{wanted}: Kubernetes {git_version} has no such API (it starts in "
            f"{vocab.WORKLOAD_RELEASE}; use the gang scenario without native=true)"
        )
    return (
        f"{wanted}: Kubernetes {git_version} serves them only with the feature gate "
        f"{vocab.WORKLOAD_GATE}=true (testbed up --feature-gates {vocab.WORKLOAD_GATE}=true)"
    )


async def check(kube: Kube, scenario: Scenario) -> None:
    """Unsupported unless every native gang of `scenario` can be created and scheduled."""
    if not needed(scenario):
        return
    version = await kube.request("GET", "/version", retry=False)
    git_version = str((version or {}).get("gitVersion", "unknown"))
    try:
        listing = await kube.request("GET", f"/apis/{vocab.WORKLOAD_API_VERSION}")
    except errors.NotFound:
        listing = None
    plurals = {r.get("name") for r in (listing or {}).get("resources") or []}
    served = resources.POD_GROUPS.plural in plurals and resources.WORKLOADS.plural in plurals
    if (text := problem(git_version, served)) is not None:
        raise Unsupported(text)
