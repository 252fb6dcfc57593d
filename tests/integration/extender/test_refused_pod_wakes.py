"""A pod refused only by the extender is placed promptly once room appears, not after
kube-scheduler's periodic flush of unschedulable pods (5 minutes), on 1.37, on 1.37 with
SchedulerPreQueueingHints on, and on the 1.38 preview, whose queue (the gate on by default
there) re-evaluates fewer pods per event: the gate apart from the release.

One node with two PCIe roots, a GPU and an RDMA NIC on each. A blocker pod holds the GPU of
one root and the NIC of the other, so a pod asking for one GPU and one NIC with
`require-alignment: pcie-root` fits for DRA (a GPU and a NIC are free) but not for the
extender (they share no root): only the extender refuses it. Deleting the blocker (its
generated claim goes with it: the other pod's claim events) frees an aligned pair.

1.37 runs on the session cluster; 1.37 with the gate on `<test cluster>-r137q` and the
preview on `<test cluster>-r138b`, whose kube-schedulers call the extender on
$DRA_TESTBED_EXTENDER_PORT, where this module serves it in-process.
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web

from extender import handlers
from loadgen import pathologies
from testbed import vocab
from testbed.cluster import feature_gates as fg
from testbed.cluster import local
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import device_classes, own_clusters, pinned_pods
from tests.support import extender_objects as objects
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

Obj = dict[str, Any]
PREVIEW = "1.38-beta"
GATED = "1.37+hints"
"""1.37 with the gate that 1.38 turns on by default."""
PROMPT_SECONDS = 60.0
"""Room to be placed in after the blocker goes: kube-scheduler's backoff is 10 s at most; the
flush of unschedulable pods comes after 300 s."""
FLUSH_SECONDS = 300.0
ROOTS = ("pci0000:00", "pci0000:01")
AFTER_FLUSH = re.compile(r"^scheduler_pod_scheduled_after_flush_total(?:\{[^}]*\})? (\S+)$", re.M)


@pytest.fixture(scope="module", params=["1.37", GATED, PREVIEW])
def cluster(
    request: pytest.FixtureRequest, cluster_config: local.ClusterConfig, extender_port: int
) -> Iterator[local.LocalCluster]:
    """The session cluster (1.37), or a cluster of its own with the extender entry: 1.37
    with the gate on, or the preview."""
    if os.environ.get("DRA_TESTBED_KUBECONFIG"):
        pytest.skip("reads kube-scheduler's /metrics: needs the local clusters")
    if request.param == "1.37":
        request.getfixturevalue("kubeconfig")  # up for the session
        yield local.LocalCluster(cluster_config)
        return
    if request.param == GATED:
        config = local.ClusterConfig(
            name=f"{cluster_config.name}-r137q",
            kubernetes="1.37",
            extender_port=extender_port,
            feature_gates={pathologies.GATE: True},
        )
    else:
        config = local.ClusterConfig(
            name=f"{cluster_config.name}-r138b", kubernetes=PREVIEW, extender_port=extender_port
        )
    with own_clusters.running(config):
        yield local.LocalCluster(config)


@pytest.fixture(scope="module")
async def cluster_kube(cluster: local.LocalCluster) -> AsyncIterator[Kube]:
    kubeconfig = str(cluster.config.kubeconfig)
    async with own_clusters.client(kubeconfig) as client, device_classes.present(client):
        yield client


@pytest.fixture(scope="module")
async def extender(cluster_kube: Kube, extender_port: int) -> AsyncIterator[web.Application]:
    async with pinned_pods.extender_on(cluster_kube, extender_port) as app:
        yield app


def _scheduler_metrics(cluster: local.LocalCluster) -> str:
    port = cluster.component_flag("kube-scheduler", "secure-port")
    assert port, "kube-scheduler is not running"
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=10, context=ctx) as f:
        return str(f.read().decode())


def after_flush(metrics: str) -> float | None:
    """scheduler_pod_scheduled_after_flush_total (new in 1.38); None where it is absent."""
    found = AFTER_FLUSH.findall(metrics)
    return sum(float(v) for v in found) if found else None


def _root_selector(root: str) -> list[Obj]:
    attr = vocab.ATTR_PCIE_ROOT.split("/")
    expr = f"device.attributes['{attr[0]}'].{attr[1]} == '{root}'"
    return [{"cel": {"expression": expr}}]


def _blocker_spec() -> Obj:
    """The GPU of the first root and the NIC of the second: no aligned pair left."""
    gpu = objects.request("gpu", vocab.CLASS_GPU)
    gpu["exactly"]["selectors"] = _root_selector(ROOTS[0])
    nic = objects.request("nic", vocab.CLASS_RDMA_NIC)
    nic["exactly"]["selectors"] = _root_selector(ROOTS[1])
    return objects.claim_spec([gpu, nic])


def _pod(ns: str, name: str, template: str, node: str, annotations: dict[str, str]) -> Obj:
    pod = objects.pod(ns, name, templates=[template], annotations=annotations)
    del pod["status"], pod["metadata"]["uid"]
    spec = pod["spec"]
    spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    spec["tolerations"] = [{"key": vocab.KWOK_TAINT_KEY, "operator": "Exists"}]
    spec["containers"][0]["resources"] = objects.routed_to_filter(
        {"claims": [{"name": "t0"}]}, annotations
    )
    return pod


def scheduled(pod: Obj) -> bool:
    return pinned_pods.outcome(pod) == "scheduled"


def unschedulable(pod: Obj) -> bool:
    return pinned_pods.outcome(pod) == "unschedulable"


async def test_pod_refused_only_by_the_extender_is_placed_once_room_appears(
    request: pytest.FixtureRequest,
    cluster: local.LocalCluster,
    cluster_kube: Kube,
    extender: web.Application,
) -> None:
    kube = cluster_kube
    run = secrets.token_hex(3)
    node = f"wake-{run}"
    created = await kube.create(r.NODES, pinned_pods.node(node, run))
    owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": created["metadata"]["uid"]}
    slices = [
        objects.gpu_slice(node, [(root, 0) for root in ROOTS]),
        objects.nic_slice(node, [(root, 0, True) for root in ROOTS]),
    ]
    async with own_clusters.namespace(kube, f"wake-{run}") as ns:
        try:
            for s in slices:
                s["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
                await kube.create(r.RESOURCE_SLICES, s)
            await pinned_pods.wait_ready(kube, [node])
            index = extender[handlers.CORE].index
            await pinned_pods.until(
                "the extender knows the node's 4 devices",
                lambda: node in index.nodes and len(index.nodes[node].devices) == 4,
            )
            await kube.create(
                r.RESOURCE_CLAIM_TEMPLATES, objects.template(ns, "blocker", _blocker_spec())
            )
            await kube.create(
                r.RESOURCE_CLAIM_TEMPLATES, objects.template(ns, "pair", objects.pair_spec(1))
            )
            await pinned_pods.until(
                "the extender knows the templates",
                lambda: index.template(ns, "pair") is not None,
            )
            await kube.create(r.PODS, _pod(ns, "blocker", "blocker", node, {}))
            await wait_for(kube, r.PODS, scheduled, name="blocker", namespace=ns, timeout=300)

            aligned = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"}
            await kube.create(r.PODS, _pod(ns, "pair", "pair", node, aligned))
            await wait_for(kube, r.PODS, unschedulable, name="pair", namespace=ns, timeout=300)
            refusals = [
                d
                for d in extender[handlers.CORE].decisions
                if d["pod"] == f"{ns}/pair" and d["verb"] == "filter" and node in d["rejections"]
            ]
            assert refusals, "the extender never refused the pod: DRA did, the test proves nothing"

            metrics = _scheduler_metrics(cluster)
            hints = fg.enabled_in(metrics).get(pathologies.GATE)
            gated = request.node.callspec.params["cluster"] != "1.37"
            assert hints is gated, f"{pathologies.GATE} {hints}"
            flushed_before = after_flush(metrics)
            await kube.delete(r.PODS, "blocker", namespace=ns)
            gone = time.monotonic()
            await wait_for(
                kube, r.PODS, scheduled, name="pair", namespace=ns, timeout=FLUSH_SECONDS + 60
            )
            waited = time.monotonic() - gone
            flushed_after = after_flush(_scheduler_metrics(cluster))
            evidence = (
                f"placed {waited:.1f}s after the blocker went; "
                f"scheduler_pod_scheduled_after_flush_total {flushed_before} -> {flushed_after}"
            )
            print(f"{request.node.callspec.params['cluster']}: {evidence}")
            assert waited < PROMPT_SECONDS, evidence
            if flushed_before is not None:
                assert flushed_after == flushed_before, evidence
        finally:
            await kube.delete(r.NODES, node)
