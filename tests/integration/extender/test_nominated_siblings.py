"""A gang's pod that the scheduler has chosen a node for but not bound yet counts as placed
at its nominated node in the extender's cache (its nominated-pods watches), on the session's
real local control plane.

The extender runs in this process and only its watches are under test: the pod names a
scheduler that does not exist, so no scheduler binds it, and the test writes
`status.nominatedNodeName` itself, as kube-scheduler's binding cycle does first for a DRA pod
(1.35 on, NominatedNodeNameForExpectation).
"""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.config import Settings
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import own_clusters
from tests.support.waiting import until_changed

pytestmark = pytest.mark.cluster


async def test_a_nominated_unbound_gang_pod_counts_at_its_nominated_node(kube: Kube) -> None:
    async with own_clusters.namespace(kube, "nominated") as ns:
        app = app_mod.build(Settings(), registry=CollectorRegistry(), kube=kube)
        store = app[app_mod.STORE]
        changed = asyncio.Event()
        store.on_event = lambda kind, obj: changed.set()
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()  # starts the watches (cleanup_ctx), serves nothing
        try:
            await asyncio.wait_for(store.ready.wait(), 60)
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "g-0", "namespace": ns, "labels": {vocab.LABEL_GANG: "g"}},
                "spec": {
                    "schedulerName": "no-such-scheduler",
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            }
            await kube.create(r.PODS, pod, namespace=ns)
            jobs = store.index.jobs
            await kube.patch(
                r.PODS,
                "g-0",
                {"status": {"nominatedNodeName": "chosen-node"}},
                namespace=ns,
                subresource="status",
            )
            gang = f"{ns}/g"
            await until_changed(
                changed,
                lambda: jobs.get(gang) == {"chosen-node": 1},
                "nominated",
                state=lambda: jobs.get(gang),
            )
            await kube.delete(r.PODS, "g-0", ns, grace_seconds=0)
            await until_changed(
                changed,
                lambda: gang not in jobs,
                "deleted pod forgotten",
                state=lambda: jobs.get(gang),
            )
        finally:
            await runner.cleanup()
