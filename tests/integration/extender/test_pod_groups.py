"""Pods that name their gang only through the Workload API (`spec.schedulingGroup`, no gang
or Job label), on the gated 1.37 cluster (GenericWorkload on): the extender discovers the API,
watches such pods, and counts a bound group's pods as the gang's placed siblings.

The extender runs in this process against the gated cluster (whose kube-scheduler has no
extender entry): only its watches are under test here, not the scheduler's calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.cache.store import GROUP_WATCH
from extender.config import Settings
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube import workloads
from testbed.kube.client import Kube
from tests.support import own_clusters
from tests.support.private_fleet import Fleet, private_fleet

pytestmark = pytest.mark.cluster


@pytest.fixture
async def group_fleet(gated_kube: Kube, gated_kubeconfig: str) -> AsyncIterator[Fleet]:
    async with private_fleet(gated_kube, gated_kubeconfig, nodes=2) as f:
        yield f


@pytest.fixture
async def namespace(gated_kube: Kube) -> AsyncIterator[str]:
    async with own_clusters.namespace(gated_kube, "pg") as name:
        yield name


def _pod(ns: str, name: str, group: str, fleet: Fleet) -> dict[str, Any]:
    """A CPU-only pod of `group` on the fleet's nodes, with no label at all."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "nodeSelector": fleet.selector,
            "tolerations": [{"key": vocab.KWOK_TAINT_KEY, "operator": "Exists"}],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


async def test_a_bound_group_of_unlabelled_pods_is_one_gang_in_the_extenders_index(
    gated_kube: Kube, group_fleet: Fleet, namespace: str
) -> None:
    kube, ns = gated_kube, namespace
    version = await workloads.served_version(kube)
    assert version == vocab.WORKLOAD_VERSION
    policy = {"gang": {"minCount": 2}}
    await kube.create(
        workloads.workloads(version),
        {
            "apiVersion": f"{vocab.SCHEDULING_GROUP}/{version}",
            "kind": "Workload",
            "metadata": {"name": "pg", "namespace": ns},
            "spec": {"podGroupTemplates": [{"name": "w", "schedulingPolicy": policy}]},
        },
    )
    await kube.create(
        workloads.pod_groups(version),
        {
            "apiVersion": f"{vocab.SCHEDULING_GROUP}/{version}",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": ns},
            "spec": {
                "workloadRef": {"workloadName": "pg", "templateName": "w"},
                "schedulingPolicy": policy,
            },
        },
    )

    app = app_mod.build(Settings(), registry=CollectorRegistry(), kube=kube)
    store = app[app_mod.STORE]
    changed = asyncio.Event()
    store.on_event = lambda kind, obj: changed.set()
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()  # starts the watches (cleanup_ctx), serves nothing
    try:
        await asyncio.wait_for(store.ready.wait(), 60)
        assert GROUP_WATCH in store.watches and GROUP_WATCH in store.kinds
        for i in range(2):
            await kube.create(r.PODS, _pod(ns, f"p{i}", "pg", group_fleet), namespace=ns)

        async def both_placed() -> None:  # re-checked after each watch event applied
            while sum(store.index.jobs.get(f"{ns}/pg", {}).values()) < 2:
                changed.clear()
                await changed.wait()

        await asyncio.wait_for(both_placed(), 120)
        assert set(store.index.jobs[f"{ns}/pg"]) <= set(group_fleet.nodes)
    finally:
        await runner.cleanup()
