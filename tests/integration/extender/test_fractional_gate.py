"""The extender learns DRAFractionalCapacityRange from the cluster it serves: the real API
server's /metrics, on the session cluster (1.37, gate at its default, off), the gated one (on)
and a 1.36 cluster (no such gate), through the app's start as `extender serve` runs it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.config import Settings
from testbed import vocab
from testbed.cluster import local
from testbed.kube.client import Kube

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]


async def learned(kube: Kube, settings: Settings | None = None) -> tuple[bool, object]:
    """The index's `fractional` and `release` once the app has started against `kube`."""
    app = app_mod.build(settings or Settings(), registry=CollectorRegistry(), kube=kube)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await asyncio.wait_for(app[app_mod.STORE].ready.wait(), 120)
        index = app[app_mod.STORE].index
        return index.fractional, index.release
    finally:
        await runner.cleanup()


async def test_off_where_the_api_server_runs_without_the_gate(kube: Kube) -> None:
    assert await learned(kube) == (False, (1, 37))


async def test_on_where_the_api_server_runs_with_it(gated_kube: Kube) -> None:
    assert await learned(gated_kube) == (True, (1, 37))


async def test_the_setting_overrides_what_the_cluster_says(gated_kube: Kube) -> None:
    assert (await learned(gated_kube, Settings(fractional_capacity=False)))[0] is False


@pytest.fixture(scope="module")
def kubeconfig_136() -> Iterator[str]:
    """A 1.36 cluster as the native gang releases module makes it (same name and gates, so
    either reuses the other's); torn down after unless it was already running."""
    base = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    gates = dict.fromkeys(vocab.WORKLOAD_GATES["1.36"], True)
    config = local.ClusterConfig(
        name=f"{base}-r136", extender=False, kubernetes="1.36", feature_gates=gates
    )
    cluster = local.LocalCluster(config)
    status, created = cluster.up(build=False)
    try:
        yield str(status.kubeconfig)
    finally:
        if created and not os.environ.get("DRA_TESTBED_KEEP_CLUSTER"):
            cluster.down()


@pytest.fixture(scope="module")
async def kube_136(kubeconfig_136: str) -> AsyncIterator[Kube]:
    client = await Kube.connect(kubeconfig=kubeconfig_136)
    try:
        yield client
    finally:
        await client.close()


async def test_off_on_a_release_without_the_gate(kube_136: Kube) -> None:
    assert await learned(kube_136) == (False, (1, 36))
