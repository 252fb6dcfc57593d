"""Fault: kube-apiserver is stopped and started again while `fleet apply` is writing.

A kwokctl user expects the apply to ride through a few seconds of API outage (its requests
retry with backoff) and to leave exactly the spec behind: every node, exactly one slice per
node and driver, no slice whose owner node is missing.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from pathlib import Path

import pytest

from fleet import audit, layout
from fleet.spec import for_profile
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.faults import RestartApiServer

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

NODES = 800
BIN = Path(sys.executable).parent


async def _count(kube: Kube, selector: str) -> int:
    return len((await kube.list(r.NODES, label_selector=selector)).items)


async def test_fleet_apply_rides_through_an_api_server_restart(
    kube: Kube, kubeconfig: str, restart_apiserver: RestartApiServer, tmp_path: Path
) -> None:
    name = f"fault-{secrets.token_hex(3)}"
    selector = layout.fleet_selector(name)
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    log = tmp_path / "apply.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            str(BIN / "fleet"),
            "apply",
            "--profile",
            "dgx-h100",
            "--nodes",
            str(NODES),
            "--name",
            name,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=out,
        )
    try:
        # Restart once a tenth of the nodes exist: well inside the write phase.
        deadline = time.monotonic() + 120
        while (before := await _count(kube, selector)) < NODES // 10:
            assert proc.returncode is None, log.read_text()
            assert time.monotonic() < deadline, f"only {before} nodes after 120s"
            await asyncio.sleep(0.2)
        assert before < NODES and proc.returncode is None, "apply done: not a mid-apply fault"
        started = time.monotonic()
        outage = await restart_apiserver()
        code = await asyncio.wait_for(proc.wait(), 300)
        took = time.monotonic() - started
        assert code == 0, log.read_text()

        fleet = for_profile("dgx-h100", NODES, name=name)
        nodes, slices = await asyncio.gather(
            kube.list(r.NODES, label_selector=selector),
            kube.list(r.RESOURCE_SLICES, label_selector=selector),
        )
        result = audit.audit(layout.desired_nodes(fleet), nodes.items, slices.items)
        assert result.converged, result.summary()
        assert result.nodes == NODES and result.slices == 2 * NODES, result.summary()
        # And regardless of labels: every slice of this fleet's nodes is one of those.
        ours = [
            sl
            for sl in (await kube.list(r.RESOURCE_SLICES)).items
            if (sl["spec"].get("nodeName") or "").startswith(f"{name}-")
            or sl["metadata"]["name"].startswith(f"{name}-")
        ]
        assert len(ours) == 2 * NODES, f"{len(ours)} slices name this fleet's nodes"
        print(
            f"restart at {before}/{NODES} nodes; API down {outage:.1f}s; apply exited 0 "
            f"{took:.1f}s after the restart began"
        )
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        delete = await asyncio.create_subprocess_exec(
            str(BIN / "fleet"),
            "delete",
            "--name",
            name,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.wait_for(delete.wait(), 300)
