"""Native gangs need the Workload API served: find the version the cluster serves, or say
which release or gate is missing.

Checked before anything is created. A PodGroup the API server does not serve would fail the
first create, and a pod naming a group on a scheduler without the gang plugin would be
scheduled pod by pod: either way the run would not measure what it says. Each release serves
one version (`vocab.WORKLOAD_VERSIONS`: v1beta1 in 1.37, v1alpha2 in 1.36, v1alpha1 in
1.35), so the version is discovered, never assumed from the release.
"""

from __future__ import annotations

from loadgen import gates as loadgen_gates
from loadgen.scenarios import Scenario
from testbed import vocab
from testbed.cluster import binaries
from testbed.kube import workloads as workloads_api
from testbed.kube.client import Kube

Unsupported = loadgen_gates.Unsupported
"""The cluster cannot run the scenario's native gangs: one line naming what is missing."""
release_of = loadgen_gates.release_of


def needed(scenario: Scenario) -> bool:
    return any(p.native_gang for p in scenario.phases)


def problem(git_version: str, version: str | None, off: tuple[str, ...] = ()) -> str | None:
    """Why native gangs cannot run on a cluster of `git_version` that serves the Workload API
    as `version` (None: not at all) and reports the gates `off` (pure); None when they can."""
    release = release_of(git_version)
    gates = vocab.WORKLOAD_GATES.get(release or "", (vocab.WORKLOAD_GATE,))
    flags = ",".join(f"{g}=true" for g in gates)
    if version is not None and not off:
        return None
    if version is not None:
        return (
            f"native gangs need the scheduler's gang plugin: Kubernetes {git_version} serves "
            f"the Workload API but runs with {' and '.join(off)} off "
            f"(testbed up --feature-gates {flags})"
        )
    first = vocab.WORKLOAD_RELEASE
    if release is not None and not binaries.at_least(release, first):
        return (
            f"native gangs need the Workload API: Kubernetes {git_version} has no such API (it "
            f"starts in {first}; use the gang scenario without native=true)"
        )
    return (
        f"native gangs need the Workload API: Kubernetes {git_version} serves it only with "
        f"the feature gates {flags} (testbed up --feature-gates {flags})"
    )


async def _gates_off(kube: Kube, release: str | None) -> tuple[str, ...]:
    """The gates native gangs need on `release` that the API server reports off (its
    /metrics; the local cluster's components share one gate set). Nothing when it does not
    say: a cluster that hides its metrics is not refused on a guess."""
    needed_gates = vocab.WORKLOAD_GATES.get(release or "", ())
    if len(needed_gates) < 2:
        return ()  # 1.37: serving the API is the gate
    state = await loadgen_gates.reported(kube) or {}
    return tuple(g for g in needed_gates if state.get(g) is False)


async def check(kube: Kube, scenario: Scenario) -> str | None:
    """The Workload API version the scenario's native gangs are made with (None: it has
    none); Unsupported unless every one of them can be created and scheduled."""
    if not needed(scenario):
        return None
    info = await kube.request("GET", "/version", retry=False)
    git_version = str((info or {}).get("gitVersion", "unknown"))
    version = await workloads_api.served_version(kube)
    off = await _gates_off(kube, release_of(git_version)) if version is not None else ()
    if (text := problem(git_version, version, off)) is not None:
        raise Unsupported(text)
    return version
