"""The extender in the real kube-scheduler's path, on the real local control plane.

The extender runs in this process on 127.0.0.1:8888, where the cluster's kube-scheduler is
configured to call it (filter + prioritize, nodeCacheCapable, ignorable). Each test makes its
own kwok nodes (unique names and a run label), namespace and pods pinned to those nodes, and
removes them afterwards; the DeviceClasses are the testbed's shared ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import handlers
from extender.config import Settings
from testbed import vocab
from testbed.cluster import ports
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import device_classes
from tests.support import extender_objects as objects
from tests.support.waiting import condition, until_changed, wait_for

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]


CHANGED = web.AppKey("changed", asyncio.Event)


async def until(
    app: web.Application,
    predicate: Callable[[], bool],
    what: str,
    timeout: float = 300.0,  # noqa: ASYNC109 (one deadline; the cluster is shared and busy)
) -> None:
    """Wait for the extender's own cache (fed by its watches) to reach a state, re-checking
    after each watch event it applies."""
    await until_changed(app[CHANGED], predicate, f"extender cache: {what}", timeout)


@pytest.fixture(scope="module")
async def extender(kube: Kube, extender_port: int) -> AsyncIterator[web.Application]:
    if ports.in_use(extender_port):
        pytest.fail(
            f"127.0.0.1:{extender_port} is busy; these tests run the extender there for the "
            "cluster's kube-scheduler. Stop whatever listens on it and re-run."
        )
    async with device_classes.present(kube), _served(kube, extender_port) as app:
        yield app


@contextlib.asynccontextmanager
async def _served(kube: Kube, extender_port: int) -> AsyncIterator[web.Application]:
    # debug: the tests read its recent decisions.
    app = app_mod.build(Settings(debug=True), registry=CollectorRegistry(), kube=kube)
    store = app[app_mod.STORE]
    changed = app[CHANGED] = asyncio.Event()
    observe = store.on_event

    def on_event(kind: str, obj: Obj) -> None:
        if observe is not None:
            observe(kind, obj)
        changed.set()

    store.on_event = on_event
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", extender_port).start()
        await asyncio.wait_for(app[app_mod.STORE].ready.wait(), 60)
        yield app
    finally:
        await runner.cleanup()


class World:
    """One test's nodes, slices and namespace."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.run = secrets.token_hex(3)
        self.namespace = f"ext-{self.run}"
        self.nodes: list[str] = []

    def name(self, suffix: str) -> str:
        return f"ext-{self.run}-{suffix}"

    async def add_node(self, objs: list[Obj], cpu: str = "64") -> str:
        node, *slices = objs
        name = str(node["metadata"]["name"])
        node["metadata"]["labels"][vocab.LABEL_RUN] = self.run
        node["metadata"]["annotations"] = {
            vocab.KWOK_NODE_ANNOTATION: vocab.KWOK_NODE_ANNOTATION_VALUE
        }
        node["spec"] = {
            "taints": [
                {
                    "key": vocab.KWOK_TAINT_KEY,
                    "value": vocab.KWOK_TAINT_VALUE,
                    "effect": "NoSchedule",
                }
            ]
        }
        node["status"] = {"allocatable": {"cpu": cpu, "memory": "512Gi", "pods": "110"}}
        node["status"]["capacity"] = dict(node["status"]["allocatable"])
        created = await self.kube.create(r.NODES, node)
        self.nodes.append(name)
        owner = {
            "apiVersion": "v1",
            "kind": "Node",
            "name": name,
            "uid": created["metadata"]["uid"],
        }
        for s in slices:
            s["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
            s["metadata"]["labels"] = {vocab.LABEL_RUN: self.run}
            await self.kube.create(r.RESOURCE_SLICES, s)
        # Until kwok reports it Ready, the node lifecycle controller may taint it not-ready,
        # and a test comparing two nodes would see only one feasible node.
        await wait_for(self.kube, r.NODES, schedulable, name=name, timeout=300)
        return name

    async def add_template(self, app: web.Application, template: Obj) -> None:
        """Create a claim template and wait until the extender has seen it (else a busy
        cluster's watch lag could let the first pod be scored without its demand)."""
        await self.kube.create(r.RESOURCE_CLAIM_TEMPLATES, template)
        name = template["metadata"]["name"]
        index = app[handlers.CORE].index
        await until(app, lambda: index.template(self.namespace, name) is not None, name)

    def pod(self, name: str, template: str, cpu: str = "1", **kw: Any) -> Obj:
        pod = objects.pod(self.namespace, name, templates=[template], **kw)
        del pod["status"]
        del pod["metadata"]["uid"]
        spec = pod["spec"]
        spec["nodeSelector"] = {vocab.LABEL_RUN: self.run}
        spec["tolerations"] = [{"key": vocab.KWOK_TAINT_KEY, "operator": "Exists"}]
        resources = {
            "requests": {"cpu": cpu},
            "claims": [{"name": ref["name"]} for ref in spec["resourceClaims"]],
        }
        spec["containers"][0]["resources"] = objects.routed_to_filter(
            resources, kw.get("annotations")
        )
        return pod

    async def cleanup(self) -> None:
        await self.kube.delete(r.NAMESPACES, self.namespace)
        for n in self.nodes:  # slices go with their node (owner reference)
            await self.kube.delete(r.NODES, n)
        with contextlib.suppress(errors.KubeError):
            await self.kube.delete_collection(
                r.RESOURCE_SLICES, label_selector=f"{vocab.LABEL_RUN}={self.run}"
            )


@pytest.fixture
async def world(kube: Kube) -> AsyncIterator[World]:
    w = World(kube)
    await kube.create(r.NAMESPACES, {"metadata": {"name": w.namespace}})
    try:
        yield w
    finally:
        await w.cleanup()


def devices_known(app: web.Application, nodes: list[str], per_node: int) -> Callable[[], bool]:
    index = app[handlers.CORE].index

    def check() -> bool:
        return all(
            n in index.nodes and index.nodes[n].known and len(index.nodes[n].devices) == per_node
            for n in nodes
        )

    return check


def schedulable(node: Obj) -> bool:
    taints = node.get("spec", {}).get("taints") or []
    return condition(node, "Ready") == "True" and all(
        t.get("key") == vocab.KWOK_TAINT_KEY for t in taints
    )


def scheduled(pod: Obj) -> bool:
    return bool(pod.get("spec", {}).get("nodeName"))


async def test_aligned_pair_lands_on_the_node_the_extender_prefers(
    extender: web.Application, world: World, kube: Kube
) -> None:
    # The default plugins prefer "unaligned": far more CPU left free (LeastAllocated and
    # BalancedAllocation). Only the extender's alignment score can pull the pod to "aligned".
    aligned = await world.add_node(objects.dgx(world.name("aligned")), cpu="4")
    unaligned = await world.add_node(objects.unaligned(world.name("unaligned")), cpu="1000")
    await until(
        extender, devices_known(extender, [aligned, unaligned], 16), "test nodes and slices"
    )
    template = objects.template(world.namespace, "pair", objects.pair_spec(1))
    await world.add_template(extender, template)
    registry = extender[app_mod.REGISTRY]
    calls_before = {
        verb: registry.get_sample_value("extender_requests_total", {"verb": verb, "outcome": "ok"})
        or 0.0
        for verb in ("filter", "prioritize")
    }

    await kube.create(r.PODS, world.pod("p", "pair", cpu="2"))
    pod = await wait_for(kube, r.PODS, scheduled, name="p", namespace=world.namespace, timeout=300)

    mine = [d for d in extender[handlers.CORE].decisions if d["pod"] == f"{world.namespace}/p"]
    assert pod["spec"]["nodeName"] == aligned, f"extender decisions: {mine}"
    calls = {
        verb: (
            registry.get_sample_value("extender_requests_total", {"verb": verb, "outcome": "ok"})
            or 0.0
        )
        - before
        for verb, before in calls_before.items()
    }
    assert calls["prioritize"] > 0, "kube-scheduler made no prioritize call"
    # The pod requires no placement (nor asks for the placement resource): not filtered.
    assert calls["filter"] == 0, "kube-scheduler called the filter for a pod that requires nothing"
    prioritized = [d for d in mine if d["verb"] == "prioritize"]
    assert prioritized, "no prioritize decision recorded for the pod"
    assert prioritized[-1]["top"][0]["node"] == aligned
    assert prioritized[-1]["top"][0]["alignment"] == 1.0


async def test_required_alignment_filters_out_the_unaligned_node(
    extender: web.Application, world: World, kube: Kube
) -> None:
    # As above, the default plugins prefer "numa" (more free CPU); DRA could place the pod
    # on either node, but only "aligned" can give both GPUs a NIC on their own PCIe root.
    aligned = await world.add_node(objects.dgx(world.name("aligned")), cpu="4")
    numa = await world.add_node(objects.numa_only(world.name("numa")), cpu="1000")
    await until(extender, devices_known(extender, [aligned, numa], 16), "test nodes and slices")
    template = objects.template(world.namespace, "pairs", objects.pair_spec(2))
    await world.add_template(extender, template)
    annotations = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"}
    await kube.create(r.PODS, world.pod("p", "pairs", cpu="2", annotations=annotations))
    pod = await wait_for(kube, r.PODS, scheduled, name="p", namespace=world.namespace, timeout=300)
    assert pod["spec"]["nodeName"] == aligned
    mine = [
        d
        for d in extender[handlers.CORE].decisions
        if d["pod"] == f"{world.namespace}/p" and d["verb"] == "filter"
    ]
    assert mine and numa in mine[-1]["rejections"]


async def test_free_devices_match_allocations_after_a_burst(
    extender: web.Application, world: World, kube: Kube
) -> None:
    nodes = [await world.add_node(objects.dgx(world.name(f"n{i}"))) for i in range(3)]
    await until(extender, devices_known(extender, nodes, 16), "test nodes and slices")
    spec = objects.claim_spec(
        [objects.request("gpu", vocab.CLASS_GPU, 2), objects.request("nic", vocab.CLASS_RDMA_NIC)]
    )
    await world.add_template(extender, objects.template(world.namespace, "t", spec))
    gang = {vocab.LABEL_GANG: "burst"}
    placements_before = _placements(extender)
    pods = [world.pod(f"p{i}", "t", labels=gang) for i in range(10)]
    await asyncio.gather(*(kube.create(r.PODS, p) for p in pods))
    for p in pods:
        await wait_for(
            kube,
            r.PODS,
            scheduled,
            name=p["metadata"]["name"],
            namespace=world.namespace,
            timeout=300,
        )

    claims = (await kube.list(r.RESOURCE_CLAIMS, namespace=world.namespace)).items
    assert len(claims) == len(pods)
    allocated: set[tuple[str, str, str]] = set()
    for c in claims:
        results = c["status"]["allocation"]["devices"]["results"]
        allocated |= {(x["driver"], x["pool"], x["device"]) for x in results}
    assert len(allocated) == 30  # 10 pods x (2 GPUs + 1 NIC)
    index = extender[handlers.CORE].index

    def expected(node: str) -> set[tuple[str, str, str]]:
        return set(index.nodes[node].devices) - allocated

    await until(
        extender,
        lambda: all(index.free_devices(n) == expected(n) for n in nodes),
        "free devices equal to the claims' allocation results",
    )
    assert sum(len(index.free_devices(n)) for n in nodes) == 3 * 16 - 30
    # Its pod watch saw the gang run on these nodes, and every allocation was classified.
    await until(
        extender,
        lambda: sum(index.jobs.get(f"{world.namespace}/burst", Counter()).values()) == 10,
        "the gang's 10 running pods",
    )
    assert set(index.jobs[f"{world.namespace}/burst"]) <= set(nodes)
    # One GPU-NIC pair per claim; other tests' claims on the shared cluster may add more.
    assert _placements(extender) - placements_before >= 10


def _placements(app: web.Application) -> float:
    registry = app[app_mod.REGISTRY]
    return sum(
        registry.get_sample_value("extender_observed_placements_total", {"outcome": o}) or 0.0
        for o in ("aligned", "numa", "unaligned")
    )


async def test_gang_pod_joins_its_siblings_rack(
    extender: web.Application, world: World, kube: Kube
) -> None:
    # "far" has far more free CPU (the default plugins prefer it); only the extender's
    # locality term pulls the second gang pod into rack r1, where the first one runs.
    first = await world.add_node(objects.dgx(world.name("first"), rack="r1", block="b1"))
    near = await world.add_node(objects.dgx(world.name("near"), rack="r1", block="b1"), cpu="4")
    far = await world.add_node(objects.dgx(world.name("far"), rack="r2", block="b2"), cpu="1000")
    await until(extender, devices_known(extender, [first, near, far], 16), "test nodes")
    spec = objects.claim_spec([objects.request("gpu", vocab.CLASS_GPU)])
    await world.add_template(extender, objects.template(world.namespace, "one", spec))
    gang = {vocab.LABEL_GANG: "g"}
    # The first pod is pinned to "first" by the scheduler's own filters (a node-name selector).
    pinned = world.pod("p0", "one", cpu="2", labels=gang)
    pinned["spec"]["nodeSelector"][vocab.LABEL_HOSTNAME] = first
    await kube.create(r.PODS, pinned)
    await wait_for(kube, r.PODS, scheduled, name="p0", namespace=world.namespace, timeout=300)
    index = extender[handlers.CORE].index
    await until(
        extender,
        lambda: first in index.jobs.get(f"{world.namespace}/g", ()),
        "the first gang pod running",
    )

    await kube.create(r.PODS, world.pod("p1", "one", cpu="2", labels=gang))
    pod = await wait_for(kube, r.PODS, scheduled, name="p1", namespace=world.namespace, timeout=300)

    mine = [d for d in extender[handlers.CORE].decisions if d["pod"] == f"{world.namespace}/p1"]
    assert pod["spec"]["nodeName"] in (first, near), f"extender decisions: {mine}"
    assert mine[-1]["top"][0]["locality"] == 1.0
