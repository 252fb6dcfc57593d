"""The real local control plane: kwok nodes, DRA allocation by kube-scheduler, kwok pods."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.waiting import condition, wait_for

pytestmark = pytest.mark.cluster


class Env:
    """One test's private world: a node, a driver/DeviceClass of its own, a namespace."""

    def __init__(self) -> None:
        suffix = secrets.token_hex(3)
        self.node = f"it-node-{suffix}"
        self.namespace = f"it-{suffix}"
        self.driver = f"gpu-{suffix}.example.com"
        self.device_class = f"gpu-{suffix}"
        self.slice = f"{self.node}-{self.driver}"


def fake_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {vocab.KWOK_NODE_ANNOTATION: vocab.KWOK_NODE_ANNOTATION_VALUE},
            "labels": {vocab.LABEL_HOSTNAME: name, "type": "kwok"},
        },
        "spec": {
            "taints": [
                {
                    "key": vocab.KWOK_TAINT_KEY,
                    "value": vocab.KWOK_TAINT_VALUE,
                    "effect": "NoSchedule",
                }
            ]
        },
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
    }


def gpu_slice(env: Env, node_uid: str, devices: int) -> dict[str, Any]:
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {
            "name": env.slice,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": env.node,
                    "uid": node_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": env.driver,
            "nodeName": env.node,
            "pool": {"name": env.node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "type": {"string": "gpu"},
                        vocab.ATTR_PCIE_ROOT: {"string": f"pci0000:{i:02x}"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def claim_template(env: Env, name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": env.device_class,
                                "allocationMode": "ExactCount",
                                "count": count,
                            },
                        }
                    ]
                }
            }
        },
    }


def pod(env: Env, name: str, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "nodeSelector": {vocab.LABEL_HOSTNAME: env.node},
            "tolerations": [
                {"key": vocab.KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1",
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


@pytest.fixture
async def env(kube: Kube) -> AsyncIterator[Env]:
    e = Env()
    await kube.create(r.NAMESPACES, {"metadata": {"name": e.namespace}})
    await kube.create(
        r.DEVICE_CLASSES,
        {
            "metadata": {"name": e.device_class},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{e.driver}'"}}]},
        },
    )
    try:
        yield e
    finally:
        await kube.delete(r.NAMESPACES, e.namespace)
        await kube.delete(r.NODES, e.node)  # its ResourceSlice goes with it (owner reference)
        await kube.delete(r.DEVICE_CLASSES, e.device_class)


async def ready_node_with_gpus(kube: Kube, env: Env, gpus: int) -> dict[str, Any]:
    node = await kube.create(r.NODES, fake_node(env.node))
    await kube.create(r.RESOURCE_SLICES, gpu_slice(env, node["metadata"]["uid"], gpus))
    return await wait_for(kube, r.NODES, schedulable, name=env.node)


def schedulable(node: dict[str, Any]) -> bool:
    """Ready, and the node lifecycle controller has lifted its not-ready taint."""
    taints = {t["key"] for t in node.get("spec", {}).get("taints") or []}
    return condition(node, "Ready") == "True" and taints == {vocab.KWOK_TAINT_KEY}


async def test_kwok_node_becomes_ready(kube: Kube, env: Env) -> None:
    await kube.create(r.NODES, fake_node(env.node))
    node = await wait_for(kube, r.NODES, lambda n: condition(n, "Ready") == "True", name=env.node)
    assert node["status"]["allocatable"]["cpu"] == "32"


async def test_pod_with_one_gpu_claim_is_allocated_scheduled_and_running(
    kube: Kube, env: Env
) -> None:
    await ready_node_with_gpus(kube, env, gpus=2)
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, claim_template(env, "one-gpu", 1))
    await kube.create(r.PODS, pod(env, "trainer", "one-gpu"))

    running = await wait_for(
        kube,
        r.PODS,
        lambda p: p.get("status", {}).get("phase") == "Running",
        name="trainer",
        namespace=env.namespace,
    )
    assert running["spec"]["nodeName"] == env.node

    statuses = running["status"].get("resourceClaimStatuses") or []
    assert [s["name"] for s in statuses] == ["gpu"]
    claim = await kube.get(r.RESOURCE_CLAIMS, statuses[0]["resourceClaimName"], env.namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1
    assert results[0]["driver"] == env.driver
    assert results[0]["pool"] == env.node
    assert results[0]["device"] in {"gpu-0", "gpu-1"}
    assert [c["name"] for c in claim["status"]["reservedFor"]] == ["trainer"]


async def test_pod_asking_more_gpus_than_the_node_has_stays_pending(kube: Kube, env: Env) -> None:
    await ready_node_with_gpus(kube, env, gpus=2)
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, claim_template(env, "three-gpus", 3))
    await kube.create(r.PODS, pod(env, "greedy", "three-gpus"))

    # The reason must name the claim: the node is there and tolerated, only devices are short.
    await wait_for(
        kube,
        r.EVENTS,
        lambda e: (
            e.get("reason") == "FailedScheduling"
            and e["involvedObject"]["name"] == "greedy"
            and "claim" in e.get("message", "").lower()
        ),
        namespace=env.namespace,
    )
    current = await kube.get(r.PODS, "greedy", env.namespace)
    assert current["status"]["phase"] == "Pending"
    assert not current["spec"].get("nodeName")
    assert condition(current, "PodScheduled") == "False"
