"""Fault: watches expire (410 Gone) under the extender and the fleet service.

etcd is compacted to its current revision, then kube-apiserver is restarted: every watch
breaks, and resuming it from the resourceVersion it had is refused with 410 (the restarted
server's watch cache starts after it, and etcd no longer holds the history). Both services
must relist and count it in their watch-restart metric: reason `gone` when they tried to
resume and got 410, or `hung` when their liveness probe saw the restart as an outage and
they relisted on recovery without trying. Then they carry on: a Fleet scaled up after the
outage gets its new node, and the extender learns its devices.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fleet import crd, layout
from fleet.reconcile import Reconciler
from fleet.spec import from_data
from testbed import vocab
from testbed.cluster import etcd, local, ports
from testbed.kube import errors
from testbed.kube.client import Kube
from tests.support import admin_http, children, fleet_objects
from tests.support.faults import RestartApiServer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(360)]


def _gone_relists(port: int, metric: str) -> float:
    """Sum of `metric`'s relists (reason gone or hung) on a service's /metrics."""
    text = admin_http.get(port, "/metrics").decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == metric and s.labels.get("reason") in ("gone", "hung")
    )


def _free_gpus(port: int, node: str) -> int | None:
    """GPUs the extender believes free on `node`; None while it does not know the node."""
    try:
        devices = admin_http.get_json(port, f"/debug/nodes/{node}/free")
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    return sum(1 for d in devices if d["driver"] == vocab.GPU_DRIVER)


async def _eventually(check: Any, what: str, within: float = 90.0) -> Any:
    """Poll an HTTP-side `check` (no watch to wait on) until it returns a truthy value."""
    deadline = time.monotonic() + within
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {within:.0f}s (last: {value!r})")
        await asyncio.sleep(0.5)


async def test_extender_and_fleet_service_relist_after_410_and_carry_on(
    kube: Kube,
    kubeconfig: str,
    extender_port: int,
    local_cluster: local.LocalCluster,
    restart_apiserver: RestartApiServer,
    tmp_path: Path,
) -> None:
    name = f"gone-{secrets.token_hex(3)}"
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    fleet_port = ports.free_port()
    extender = children.extender(env, tmp_path / "extender.log", extender_port)
    service = children.fleet_service(env, tmp_path / "fleet-serve.log", fleet_port)
    try:
        with extender, service:
            await kube.create(crd.FLEETS, fleet_objects.fleet_object(name, 2))
            await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(1, 2), name=name, timeout=120)

            url = etcd.client_url(local_cluster)
            compacted = await asyncio.to_thread(etcd.compact, url)
            outage = await restart_apiserver()

            fleet_gone = await _eventually(
                lambda: _gone_relists(fleet_port, "fleet_watch_restarts_total"),
                "a relist in fleet_watch_restarts_total",
            )
            extender_gone = await _eventually(
                lambda: _gone_relists(extender_port, "extender_watch_restarts_total"),
                "a relist in extender_watch_restarts_total",
            )

            # Both carry on: a scale-up made after the outage is acted on and seen.
            await kube.patch(
                crd.FLEETS, name, {"spec": fleet_objects.fleet_object(name, 3)["spec"]}
            )
            await wait_for(kube, crd.FLEETS, fleet_objects.ready_at(2, 3), name=name, timeout=120)
            newest = layout.desired_nodes(from_data(fleet_objects.fleet_object(name, 3)))[-1].name
            gpus = await _eventually(
                lambda: _free_gpus(extender_port, newest), f"node {newest} in the extender"
            )
            assert gpus == 8
            print(
                f"compacted etcd at revision {compacted}; API down {outage:.1f}s; relists "
                f"(410 or outage): fleet service {fleet_gone:.0f}, extender {extender_gone:.0f}"
            )
    finally:
        with contextlib.suppress(errors.NotFound):
            await kube.patch(crd.FLEETS, name, {"metadata": {"finalizers": None}})
            await kube.delete(crd.FLEETS, name)
        await Reconciler(kube).delete(name)
