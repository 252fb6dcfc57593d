"""A test's private little cluster world: one kwok node with a few GPUs of its own driver."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.waiting import condition, wait_for


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


async def ready_node_with_gpus(kube: Kube, env: Env, gpus: int) -> dict[str, Any]:
    node = await kube.create(r.NODES, fake_node(env.node))
    await kube.create(r.RESOURCE_SLICES, gpu_slice(env, node["metadata"]["uid"], gpus))
    return await wait_for(kube, r.NODES, schedulable, name=env.node)


def schedulable(node: dict[str, Any]) -> bool:
    """Ready, and the node lifecycle controller has lifted its not-ready taint."""
    taints = {t["key"] for t in node.get("spec", {}).get("taints") or []}
    return condition(node, "Ready") == "True" and taints == {vocab.KWOK_TAINT_KEY}


@contextlib.asynccontextmanager
async def world(kube: Kube) -> AsyncIterator[Env]:
    """A fresh Env with its namespace and DeviceClass made; afterwards the namespace, the node
    (its ResourceSlice goes with it, by owner reference) and the class are deleted."""
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
        await kube.delete(r.NODES, e.node)
        await kube.delete(r.DEVICE_CLASSES, e.device_class)


async def one_gpu_pod_running(kube: Kube, env: Env, *, node_gpus: int) -> dict[str, Any]:
    """A pod `trainer` with a one-GPU claim, on the env's fresh node of `node_gpus` GPUs,
    scheduled by the real scheduler (DRA's allocation) and Running; returns the pod."""
    await ready_node_with_gpus(kube, env, gpus=node_gpus)
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
    return running
