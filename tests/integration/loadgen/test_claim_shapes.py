"""Claim shapes against the real allocator (kube-scheduler's DynamicResources plugin) on a
private dgx-h100 fleet: prioritized alternatives, allocationMode All, one claim shared by
several pods, admin access."""

from __future__ import annotations

import pytest

from loadgen import runner, scenarios, templates
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import Fleet, make_fleet, remove_fleet

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


async def test_mig_profile_pods_get_partitions_of_that_profile(kube: Kube, kubeconfig: str) -> None:
    fleet = await make_fleet(kube, kubeconfig, nodes=1, profile="dgx-h100-mig")
    try:
        params = {"pods": "3", "mig_profile": "1g.10gb"}
        res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(keep=True))
        assert res.error is None and res.records.total.running == 3
        assert res.fleet_gpus == 8  # physical GPUs: the partitions are not counted as GPUs
        claims = (await kube.list(r.RESOURCE_CLAIMS, namespace=res.namespace)).items
        devices = {
            (x["pool"], x["device"])
            for c in claims
            for x in c["status"]["allocation"]["devices"]["results"]
        }
        assert len(devices) == 3
        slices = await kube.list(r.RESOURCE_SLICES)
        profiles = {
            (s["spec"]["pool"]["name"], d["name"]): d["attributes"]
            for s in slices.items
            for d in s["spec"].get("devices") or []
        }
        for key in devices:
            attrs = profiles[key]
            assert attrs[vocab.GPU_ATTR_TYPE]["string"] == vocab.GPU_TYPE_MIG
            assert attrs[vocab.GPU_ATTR_MIG_PROFILE]["string"] == "1g.10gb"
    finally:
        await remove_fleet(kube, kubeconfig, fleet)


async def test_capacity_shares_put_several_inference_pods_on_one_gpu(
    kube: Kube, kubeconfig: str
) -> None:
    fleet = await make_fleet(kube, kubeconfig, nodes=1, profile="dgx-h100-shared")
    try:
        # 16 pods of 30 GB on 8 GPUs of 81559Mi that allow multiple allocations: two fit
        # per GPU, three do not, so all 16 run only with two on every GPU.
        params = {"shape": "capacity", "jobs": "16", "footprints": "30", "completions": "1",
                  "run_time": "20s"}  # fmt: skip
        res = await runner.run(kube, scenarios.load("inference", params), fleet.settings())
        assert res.error is None and res.records.total.succeeded == 16
        busy = max(s.gpus_busy for s in res.records.timeline)
        running = max(s.running - s.finished for s in res.records.timeline)
        assert running == 16 and busy == 8  # every GPU busy, each with two pods
    finally:
        await remove_fleet(kube, kubeconfig, fleet)
