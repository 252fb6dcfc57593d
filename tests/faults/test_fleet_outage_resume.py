"""Fault: the API server is unreachable for longer than one request's retries, mid-apply.

Seen through a TCP relay the test cuts (the shared control plane keeps running): requests in
flight fail, their retries run out, and the reconciler must cancel the pass, wait for the
server, and resume with a fresh list-and-diff pass that converges to exactly the spec.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from fleet import audit, layout, render
from fleet.metrics import FleetMetrics
from fleet.reconcile import Reconciler
from fleet.spec import for_profile
from testbed.kube import resources as r
from testbed.kube.client import ClientSettings, Kube
from tests.support import api_proxy

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

NODES = 300


async def test_apply_resumes_with_a_fresh_pass_after_an_outage(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    proxy, via_proxy = await api_proxy.proxied(kube, kubeconfig, tmp_path)
    registry = CollectorRegistry()
    metrics = FleetMetrics(registry)
    # Few, quick retries per request: a 3 s outage outlasts them for sure.
    settings = ClientSettings(qps=500, burst=1000, max_retries=2, backoff_max=0.5)
    own = await Kube.connect(kubeconfig=via_proxy, settings=settings)
    fleet = for_profile("dgx-h100", NODES, name=f"resume-{secrets.token_hex(3)}")
    selector = layout.fleet_selector(fleet.name)
    rec = Reconciler(own, metrics=metrics)
    # The DeviceClasses every fleet shares count as created if no fleet made them before.
    present = {r.name_of(o) for o in (await kube.list(r.DEVICE_CLASSES)).items}
    classes = sum(1 for d in render.device_classes() if r.name_of(d) not in present)
    try:
        apply = asyncio.create_task(rec.apply(render.validate(fleet)))
        while len((await kube.list(r.NODES, label_selector=selector)).items) < NODES // 5:
            assert not apply.done(), "apply finished before the outage"
            await asyncio.sleep(0.1)
        await proxy.stop()
        await asyncio.sleep(3.0)  # the outage itself: longer than any request's retries
        await proxy.start()  # same port
        counts = await asyncio.wait_for(apply, 240)

        outages = registry.get_sample_value("fleet_errors_total", {"kind": "outage"})
        assert outages is not None and outages >= 1, "the pass was never resumed"
        nodes, slices = await asyncio.gather(
            kube.list(r.NODES, label_selector=selector),
            kube.list(r.RESOURCE_SLICES, label_selector=selector),
        )
        result = audit.audit(layout.desired_nodes(fleet), nodes.items, slices.items)
        assert result.converged, result.summary()
        assert (result.nodes, result.slices) == (NODES, 2 * NODES)
        # Every object written once, or found already there by the resumed pass.
        assert counts.created + counts.unchanged == 3 * NODES + classes, counts
        assert counts.failed == 0
    finally:
        await own.close()
        await proxy.stop()
        await Reconciler(kube).delete(fleet.name)
