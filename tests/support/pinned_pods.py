"""Pods pinned to nodes this test made, on the real cluster, against the extender's verdict
beforehand: the nodes, their ResourceSlices, the pods, the pod's outcome as kube-scheduler
decided it, and the extender watching the same cluster."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.config import Settings
from testbed import vocab
from testbed.cluster import ports
from testbed.kube import resources as r
from testbed.kube.client import Kube

Obj = dict[str, Any]


def resource_slice(
    node: str, driver: str, pool: str, devices: list[Obj], count: int = 1, suffix: str = ""
) -> Obj:
    """A ResourceSlice of `driver` for `node`'s pool `pool` (one of `count` slices)."""
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}{'-' + suffix if suffix else ''}"},
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
            "nodeName": node,
            "devices": devices,
        },
    }


@contextlib.asynccontextmanager
async def extender_on(kube: Kube, port: int | None = None) -> AsyncIterator[web.Application]:
    """The extender watching the cluster of `kube`, its store filled. With `port` it serves
    127.0.0.1:`port` too, where the cluster's kube-scheduler calls it; without, the test asks
    its core directly (a cluster whose scheduler does not call it)."""
    if port is not None and ports.in_use(port):
        raise AssertionError(f"127.0.0.1:{port} is busy; stop what listens")
    # debug: the tests read its recent decisions (`handlers.CORE`'s `decisions`).
    app = app_mod.build(Settings(debug=True), registry=CollectorRegistry(), kube=kube)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        if port is not None:
            await web.TCPSite(runner, "127.0.0.1", port).start()
        await asyncio.wait_for(app[app_mod.STORE].ready.wait(), 120)
        yield app
    finally:
        await runner.cleanup()


async def until(what: str, check: Any, timeout: float = 300) -> None:  # noqa: ASYNC109
    """Polls `check` until it holds; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {what}")
        await asyncio.sleep(0.2)


def outcome(pod: Obj) -> str | None:
    """The pod's outcome: "scheduled", "unschedulable" (kube-scheduler said so), or None."""
    if (pod.get("spec") or {}).get("nodeName"):
        return "scheduled"
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return "unschedulable"
    return None


def node(name: str, run: str) -> Obj:
    """A kwok node labelled with `run`, tainted as kwok nodes are, with room for 110 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {vocab.LABEL_RUN: run, "kubernetes.io/hostname": name, "type": "kwok"},
            "annotations": {vocab.KWOK_NODE_ANNOTATION: vocab.KWOK_NODE_ANNOTATION_VALUE},
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
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
        },
    }


async def wait_ready(kube: Kube, nodes: list[str]) -> None:
    """Until every node in `nodes` is Ready and carries only kwok's taint (300 s)."""
    want = set(nodes)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        listed = await kube.list(r.NODES)
        ready = {
            n["metadata"]["name"]
            for n in listed.items
            if n["metadata"]["name"] in want
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions") or []
            )
            and all(
                t.get("key") == vocab.KWOK_TAINT_KEY
                for t in (n.get("spec") or {}).get("taints") or []
            )
        }
        if ready == want:
            return
        await asyncio.sleep(1)
    raise AssertionError("nodes never Ready")


def pod(ns: str, name: str, claim: str, node: str) -> Obj:
    """A pod pinned to `node` by its hostname label, holding the ResourceClaim `claim`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"key": vocab.KWOK_TAINT_KEY, "operator": "Exists"}],
            "resourceClaims": [{"name": "c", "resourceClaimName": claim}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "c"}]},
                }
            ],
        },
    }
