"""Fault: kube-controller-manager is held (SIGSTOP) while a loadgen run starts, as it is while
it restarts or is starved of CPU. A new namespace then has no `default` ServiceAccount, and the
API server refuses every pod in it ("error looking up service account"); the claims' templates
wait for kcm's resourceclaim controller too. loadgen must wait for the account, not fail the
run: once kcm runs again, every pod is created and Running."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loadgen import explaining
from loadgen.report import document
from testbed.cluster import local
from testbed.kube.client import Kube
from tests.support.private_fleet import LOADGEN, Fleet, loadgen_args, private_fleet

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

HELD = explaining.SCRAPE_SECONDS + 8.0
"""Seconds kcm is held from loadgen's start: loadgen's first scrape of the components waits up
to SCRAPE_SECONDS for the held kcm's /metrics before the run creates anything, so kcm is held
past that, then 8 s more while the run's pods are refused."""


@pytest.fixture
async def fleet(kube: Kube, kubeconfig: str) -> AsyncIterator[Fleet]:
    async with private_fleet(kube, kubeconfig, nodes=1) as f:
        yield f


def _pid(cluster: local.LocalCluster, name: str) -> int:
    for c in cluster.status().components:
        if c.name == name and c.pid is not None:
            return c.pid
    raise AssertionError(f"{name} is not running")


async def test_pods_wait_for_the_namespaces_service_account_while_kcm_is_held(
    local_cluster: local.LocalCluster, kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    pid = _pid(local_cluster, "kube-controller-manager")
    run_id = f"held-{fleet.suffix}"
    os.kill(pid, signal.SIGSTOP)
    try:
        proc = await asyncio.create_subprocess_exec(
            LOADGEN, "--pods", "4", *loadgen_args(fleet, kubeconfig, tmp_path / "r", run_id),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await asyncio.sleep(HELD)
        assert proc.returncode is None, "loadgen gave up while kcm was held"
    finally:
        os.kill(pid, signal.SIGCONT)
    _, err = await asyncio.wait_for(proc.communicate(), 240)
    assert proc.returncode == 0, err.decode()
    doc = document.load(tmp_path / "r" / "result.json")
    assert doc.counts.pods_running == 4 and doc.counts.create_failures == 0
    # The refusals were seen and waited out, not absent: the account came after the first try.
    assert doc.counts.create_retries >= 1
