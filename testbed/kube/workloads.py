"""Which Workload API version the cluster serves, if any (discovery).

Each release serves one (`vocab.WORKLOAD_VERSIONS`: v1beta1 in 1.37, v1alpha2 in 1.36,
v1alpha1 in 1.35, each behind GenericWorkload), so it is discovered, never assumed from the
release: loadgen makes its native gangs in it, the extender watches group-only pods where it
is served.
"""

from __future__ import annotations

from testbed import vocab
from testbed.kube import errors
from testbed.kube.client import Kube
from testbed.kube.resources import Resource


def standalone(version: str) -> bool:
    """The version has PodGroup objects (v1alpha2 on); v1alpha1 holds groups in the Workload."""
    return version != "v1alpha1"


def workloads(version: str) -> Resource:
    return Resource(vocab.SCHEDULING_GROUP, version, "workloads", "Workload", namespaced=True)


def pod_groups(version: str) -> Resource:
    return Resource(vocab.SCHEDULING_GROUP, version, "podgroups", "PodGroup", namespaced=True)


async def served_version(kube: Kube) -> str | None:
    """The Workload API version the cluster serves with everything a gang is made of
    (Workload, and PodGroup where the version has them), newest first; None if none."""
    for version in dict.fromkeys(vocab.WORKLOAD_VERSIONS.values()):
        try:
            listing = await kube.request("GET", f"/apis/{vocab.SCHEDULING_GROUP}/{version}")
        except errors.NotFound:
            continue
        plurals = {r.get("name") for r in (listing or {}).get("resources") or []}
        if workloads(version).plural in plurals and (
            not standalone(version) or pod_groups(version).plural in plurals
        ):
            return version
    return None
