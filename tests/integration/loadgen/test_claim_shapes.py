"""Claim shapes against the real allocator (kube-scheduler's DynamicResources plugin) on a
private dgx-h100 fleet: prioritized alternatives, allocationMode All, one claim shared by
several pods, admin access."""

from __future__ import annotations

import pytest

from loadgen import runner, scenarios, templates
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.integration.loadgen.conftest import Fleet

pytestmark = pytest.mark.cluster


def _gpus(claim: dict[str, object]) -> int:
    results = claim["status"]["allocation"]["devices"]["results"]  # type: ignore[index]
    return sum(1 for x in results if x["driver"] == vocab.GPU_DRIVER)


async def test_first_available_falls_back_when_the_first_choice_cannot_fit(
    kube: Kube, fleet: Fleet
) -> None:
    # No node has 16 GPUs: the scheduler takes the second choice, two GPUs.
    params = {"pods": "2", "first_available": "16,2", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(keep=True))
    try:
        assert res.error is None and res.records.total.running == 2
        claims = await kube.list(r.RESOURCE_CLAIMS, namespace=res.namespace)
        assert [_gpus(c) for c in claims.items] == [2, 2]
        chosen = {
            x["request"]
            for c in claims.items
            for x in c["status"]["allocation"]["devices"]["results"]
        }
        assert chosen == {"gpu/alt1"}
    finally:
        await kube.delete(r.NAMESPACES, res.namespace)


async def test_allocation_mode_all_takes_every_gpu_of_the_node(kube: Kube, fleet: Fleet) -> None:
    params = {"pods": "1", "all_gpus": "true", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings())
    assert res.error is None and res.records.total.running == 1
    (claim,) = res.records.claims.values()
    assert len(claim.gpu_pcie) == 8  # a dgx-h100 node's GPUs, all of them


async def test_one_claim_is_shared_by_three_pods(kube: Kube, fleet: Fleet) -> None:
    params = {"pods": "3", "shared_by": "3", "gpus": "2", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(keep=True))
    try:
        assert res.error is None and res.records.total.running == 3
        (claim,) = (await kube.list(r.RESOURCE_CLAIMS, namespace=res.namespace)).items
        assert claim["metadata"]["name"] == "pods-shared-000000" and _gpus(claim) == 2
        users = {u["name"] for u in claim["status"]["reservedFor"]}
        assert users == {f"pods-{i:06d}" for i in range(3)}
        assert len({p.node for p in res.records.pods.values()}) == 1  # where its devices are
        assert res.records.fleet.peak_gpus_allocated == 2
    finally:
        await kube.delete(r.NAMESPACES, res.namespace)


async def test_an_admin_access_claim_gets_its_namespace_label_and_runs(
    kube: Kube, fleet: Fleet
) -> None:
    params = {"pods": "1", "admin_access": "true", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(keep=True))
    try:
        assert res.error is None and res.records.total.running == 1
        ns = await kube.get(r.NAMESPACES, res.namespace)
        assert ns["metadata"]["labels"][templates.LABEL_ADMIN_ACCESS] == "true"
        (claim,) = (await kube.list(r.RESOURCE_CLAIMS, namespace=res.namespace)).items
        results = claim["status"]["allocation"]["devices"]["results"]
        assert all(x.get("adminAccess") for x in results)
    finally:
        await kube.delete(r.NAMESPACES, res.namespace)
