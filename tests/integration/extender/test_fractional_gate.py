"""The extender learns DRAFractionalCapacityRange from the cluster it serves: the real API
server's /metrics, on the session cluster (1.37, gate at its default, off), the gated one (on)
and 1.36 and 1.35 clusters (no such gate), through the app's start as `extender serve` runs it."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender.config import Settings
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


async def test_off_on_a_release_without_the_gate(
    older_kube: Kube, older_kubeconfig: tuple[str, str]
) -> None:
    major, minor = older_kubeconfig[0].split(".")
    assert await learned(older_kube) == (False, (int(major), int(minor)))
