"""Raw ResourceClaims and Pods for tests that let the real kube-scheduler allocate devices on a
fleet's fake nodes (kwok runs the pods once they are bound)."""

from __future__ import annotations

from typing import Any

from testbed import vocab
from testbed.kube.client import Kube
from testbed.kube.resources import PODS, RESOURCE_CLAIMS
from tests.support.waiting import wait_for

Obj = dict[str, Any]


def claim(
    name: str,
    device_class: str,
    *,
    selector: str = "",
    memory: str = "",
    compute: str = "",
) -> Obj:
    """A one-device claim of `device_class`, optionally narrowed by a CEL `selector` and
    asking `memory` (and `compute`) of a device's consumable capacity."""
    exactly: Obj = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if memory:
        exactly["capacity"] = {"requests": {vocab.GPU_CAP_MEMORY: memory}}
    if compute:
        requests = exactly.setdefault("capacity", {"requests": {}})["requests"]
        requests[vocab.GPU_CAP_COMPUTE] = compute
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def aligned_claim(name: str, gpus: int, nics: int, attribute: str) -> Obj:
    """`gpus` GPUs and `nics` RDMA NICs in two requests, every device with one value of
    `attribute` (the in-tree `matchAttribute` constraint across both requests)."""

    def request(req: str, device_class: str, count: int) -> Obj:
        exactly = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
        return {"name": req, "exactly": exactly}

    devices = {
        "requests": [
            request("gpu", vocab.CLASS_GPU, gpus),
            request("nic", vocab.CLASS_RDMA_NIC, nics),
        ],
        "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": attribute}],
    }
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def pod(name: str, fleet: str, *, claim_name: str = "", gpus: int = 0) -> Obj:
    """A pod pinned to `fleet`'s nodes, using the claim `claim_name` or asking `gpus` of the
    extended resource nvidia.com/gpu (device plugin or DRA, whichever the node offers)."""
    container: Obj = {"name": "c", "image": "busybox"}
    spec: Obj = {
        "containers": [container],
        "nodeSelector": {vocab.LABEL_FLEET: fleet},
        "tolerations": [
            {"key": vocab.KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        ],
    }
    if claim_name:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if gpus:
        container["resources"] = {"limits": {vocab.EXTENDED_RESOURCE_GPU: str(gpus)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def running(obj: Obj) -> bool:
    return bool((obj.get("status") or {}).get("phase") == "Running")


def unschedulable(obj: Obj) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return bool(c.get("status") == "False" and c.get("reason") == "Unschedulable")
    return False


async def run_with_claim(kube: Kube, ns: str, fleet: str, name: str, body: Obj) -> Obj:
    """Create the claim `body` and a pod using it; return the pod once Running."""
    await kube.create(RESOURCE_CLAIMS, body, ns)
    await kube.create(PODS, pod(name, fleet, claim_name=body["metadata"]["name"]), ns)
    return await wait_for(kube, PODS, running, name=name, namespace=ns, timeout=90)


async def pending_with_claim(kube: Kube, ns: str, fleet: str, name: str, body: Obj) -> Obj:
    """Create the claim `body` and a pod using it; return the pod once the scheduler has
    found it unschedulable."""
    await kube.create(RESOURCE_CLAIMS, body, ns)
    await kube.create(PODS, pod(name, fleet, claim_name=body["metadata"]["name"]), ns)
    return await wait_for(kube, PODS, unschedulable, name=name, namespace=ns, timeout=90)


def allocated_devices(claim_obj: Obj) -> list[str]:
    alloc = (claim_obj.get("status") or {}).get("allocation") or {}
    return [r["device"] for r in (alloc.get("devices") or {}).get("results") or []]
