"""DRA device shapes judged by the real kube-scheduler: MIG partitions on shared counters,
consumable capacity, `nvidia.com/gpu` pods served by DRA, device taints.

Each test applies a tiny fleet of its own, creates raw ResourceClaims and Pods in its own
namespace, and lets the real allocator decide; the fields these shapes need are beta (on by
default) in Kubernetes 1.36: a gate turned off would make the API server drop them, which the
read-backs here catch.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from fleet import layout, profiles, render
from fleet.reconcile import Reconciler
from fleet.spec import from_data
from testbed import vocab
from testbed.cluster import local
from testbed.kube import watching
from testbed.kube.client import Kube
from testbed.kube.resources import (
    DEVICE_CLASSES,
    EVENTS,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
)
from tests.integration.fleet import dra_objects as dra
from tests.integration.fleet import fleet_cli
from tests.support import own_clusters
from tests.support.reported_gates import reported_gates
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
GPU = vocab.GPU_DRIVER


def _one_gpu(base: str, name: str) -> Obj:
    """A built-in GPU profile cut down to a single GPU and no NIC: every claim lands on it."""
    prof = profiles.builtin()[base].model_dump(by_alias=True)
    prof.update(name=name, roots=[{"bus": 0x10, "gpus": 1}], nics={})
    return prof


@pytest.fixture
async def ns(kube: Kube) -> AsyncIterator[str]:
    async with own_clusters.namespace(kube, "dra") as name:
        yield name


async def _apply(kube: Kube, spec: Obj) -> layout.DesiredFleet:
    """Apply, wait for Ready, and check a re-apply writes nothing (what the API server gives
    back, quantities and taint times included, matches the render)."""
    desired = render.validate(from_data(spec))
    rec = Reconciler(kube)
    await rec.apply(desired)
    await rec.wait_ready(desired, within=120)
    assert (await rec.apply(desired)).writes == 0
    return desired


async def _claim(kube: Kube, ns: str, name: str) -> Obj:
    return await kube.get(RESOURCE_CLAIMS, name, ns)


async def test_an_allocated_mig_partition_consumes_counters_so_the_full_gpu_is_refused(
    kube: Kube, ns: str
) -> None:
    fleet = f"mig-{secrets.token_hex(3)}"
    spec = {
        "name": fleet,
        "pools": [{"name": "p", "profile": "mig1", "count": 1}],
        "profiles": [_one_gpu("dgx-h100-mig", "mig1")],
    }
    try:
        await _apply(kube, spec)
        listed = await kube.list(RESOURCE_SLICES, label_selector=layout.fleet_selector(fleet))
        shapes = {s["metadata"]["name"]: s["spec"] for s in listed.items}
        counters = next(v for k, v in shapes.items() if k.endswith("-counters-0"))
        assert counters["sharedCounters"][0]["name"] == "gpu-0-counter-set"  # gate on: kept
        devices = next(v for k, v in shapes.items() if k.endswith("-gpu-0"))["devices"]
        assert all("consumesCounters" in d for d in devices)

        one_g = f"device.attributes['{GPU}'].{vocab.GPU_ATTR_MIG_PROFILE} == '1g.10gb'"
        await dra.run_with_claim(
            kube, ns, fleet, "mig-a", dra.claim("mig-a", vocab.CLASS_MIG, selector=one_g)
        )
        (device,) = dra.allocated_devices(await _claim(kube, ns, "mig-a"))
        assert device.startswith("gpu-0-mig-1g10gb-19-")

        # The whole GPU would need every counter; one slice is taken: refused.
        await dra.pending_with_claim(kube, ns, fleet, "full", dra.claim("full", vocab.CLASS_GPU))
        # Another 1g.10gb still fits beside the first (its own memory slice).
        await dra.run_with_claim(
            kube, ns, fleet, "mig-b", dra.claim("mig-b", vocab.CLASS_MIG, selector=one_g)
        )
        (other,) = dra.allocated_devices(await _claim(kube, ns, "mig-b"))
        assert other != device

        # Free the partitions: the counters come back and the full GPU is allocated.
        for name in ("mig-a", "mig-b"):
            await kube.delete(PODS, name, ns)
            await kube.delete(RESOURCE_CLAIMS, name, ns)
        await wait_for(kube, PODS, dra.running, name="full", namespace=ns, timeout=120)
        assert dra.allocated_devices(await _claim(kube, ns, "full")) == ["gpu-0"]
    finally:
        await Reconciler(kube).delete(fleet)


async def test_the_in_tree_numa_constraint_matches_the_fleets_standard_attribute(
    kube: Kube, ns: str
) -> None:
    """GPUs and NICs publish resource.kubernetes.io/numaNode, so the real allocator puts a
    claim's 4 GPUs and 4 NICs on one NUMA node (a dgx-h100 has 4 + 4 on each), and refuses
    5 + 5, which no NUMA node holds, though the node has 8 of each."""
    fleet = f"numa-{secrets.token_hex(3)}"
    try:
        await _apply(
            kube, {"name": fleet, "pools": [{"name": "p", "profile": "dgx-h100", "count": 1}]}
        )
        numa_of: dict[str, int] = {}
        for s in (
            await kube.list(RESOURCE_SLICES, label_selector=layout.fleet_selector(fleet))
        ).items:
            for d in s["spec"]["devices"]:
                numa_of[d["name"]] = d["attributes"][vocab.ATTR_NUMA_NODE]["int"]
        body = dra.aligned_claim("four", 4, 4, vocab.ATTR_NUMA_NODE)
        await dra.run_with_claim(kube, ns, fleet, "four", body)
        devices = dra.allocated_devices(await _claim(kube, ns, "four"))
        assert len(devices) == 8 and len({numa_of[d] for d in devices}) == 1, devices
        await dra.pending_with_claim(
            kube, ns, fleet, "five", dra.aligned_claim("five", 5, 5, vocab.ATTR_NUMA_NODE)
        )
    finally:
        await Reconciler(kube).delete(fleet)


async def test_two_capacity_claims_share_one_gpu_and_a_third_over_capacity_stays_pending(
    kube: Kube, ns: str
) -> None:
    fleet = f"cap-{secrets.token_hex(3)}"
    spec = {
        "name": fleet,
        "pools": [{"name": "p", "profile": "shared1", "count": 1}],
        "profiles": [_one_gpu("dgx-h100-shared", "shared1")],
    }
    try:
        await _apply(kube, spec)
        (gpu_slice,) = (
            await kube.list(RESOURCE_SLICES, label_selector=layout.fleet_selector(fleet))
        ).items
        (dev,) = gpu_slice["spec"]["devices"]
        assert dev["allowMultipleAllocations"] is True  # gate on: kept
        assert dev["capacity"]["memory"]["requestPolicy"]["validRange"]["step"] == "1Gi"

        for name in ("cap-a", "cap-b"):
            body = dra.claim(name, vocab.CLASS_GPU, memory="30Gi")
            await dra.run_with_claim(kube, ns, fleet, name, body)
        results = [
            (await _claim(kube, ns, n))["status"]["allocation"]["devices"]["results"][0]
            for n in ("cap-a", "cap-b")
        ]
        assert {r["device"] for r in results} == {"gpu-0"}
        assert [r["consumedCapacity"]["memory"] for r in results] == ["30Gi", "30Gi"]
        assert results[0].get("shareID") != results[1].get("shareID")

        # 60Gi taken of 81559Mi (79.6Gi): a third 30Gi cannot fit.
        await dra.pending_with_claim(
            kube, ns, fleet, "cap-c", dra.claim("cap-c", vocab.CLASS_GPU, memory="30Gi")
        )
        assert "allocation" not in ((await _claim(kube, ns, "cap-c")).get("status") or {})
    finally:
        await Reconciler(kube).delete(fleet)


async def test_an_nvidia_gpu_pod_runs_through_dra_or_the_device_plugin_by_node(
    kube: Kube, ns: str
) -> None:
    dra_fleet, dp_fleet = f"er-{secrets.token_hex(3)}", f"dp-{secrets.token_hex(3)}"
    try:
        cls = await kube.get(DEVICE_CLASSES, vocab.CLASS_GPU)
        await _apply(
            kube, {"name": dra_fleet, "pools": [{"name": "p", "profile": "l4-4gpu", "count": 1}]}
        )
        cls = await kube.get(DEVICE_CLASSES, vocab.CLASS_GPU)
        assert cls["spec"]["extendedResourceName"] == vocab.EXTENDED_RESOURCE_GPU  # gate on: kept
        await _apply(
            kube,
            {
                "name": dp_fleet,
                "extendedResources": True,
                "pools": [{"name": "p", "profile": "l4-4gpu", "count": 1}],
            },
        )
        await kube.create(PODS, dra.pod("via-dra", dra_fleet, gpus=1), ns)
        await kube.create(PODS, dra.pod("via-dp", dp_fleet, gpus=1), ns)
        by_dra = await wait_for(kube, PODS, dra.running, name="via-dra", namespace=ns, timeout=90)
        by_dp = await wait_for(kube, PODS, dra.running, name="via-dp", namespace=ns, timeout=90)

        # On a node without nvidia.com/gpu capacity, the scheduler made a claim for the pod
        # and the allocator gave it a whole GPU. (Claims of earlier, failed attempts may linger
        # a moment, unallocated, so look for the allocated one.)
        assert by_dra["status"].get("extendedResourceClaimStatus"), by_dra["status"]
        claims = (await kube.list(RESOURCE_CLAIMS, namespace=ns)).items
        owners = {o["name"] for c in claims for o in c["metadata"].get("ownerReferences") or []}
        assert owners == {"via-dra"}, owners  # the device-plugin pod got no claim
        allocated = [d for c in claims for d in dra.allocated_devices(c)]
        assert len(allocated) == 1 and allocated[0].startswith("gpu-"), allocated
        assert not by_dp["status"].get("extendedResourceClaimStatus")
    finally:
        for name in (dra_fleet, dp_fleet):
            await Reconciler(kube).delete(name)


async def test_a_noschedule_device_taint_keeps_new_pods_off_that_device(
    kube: Kube, ns: str, kubeconfig: str
) -> None:
    fleet = f"tnt-{secrets.token_hex(3)}"
    try:
        await _apply(
            kube, {"name": fleet, "pools": [{"name": "p", "profile": "l4-4gpu", "count": 1}]}
        )
        code, _, err = await fleet_cli.run(
            "taint", "--name", fleet, "--share", "0.5", "--value", "xid-79", kubeconfig=kubeconfig
        )
        assert code == 0 and "2 of 4 GPUs" in err, err
        (gpu_slice,) = [
            s
            for s in (
                await kube.list(RESOURCE_SLICES, label_selector=layout.fleet_selector(fleet))
            ).items
            if s["spec"]["driver"] == GPU
        ]
        tainted = {d["name"] for d in gpu_slice["spec"]["devices"] if d.get("taints")}
        assert len(tainted) == 2  # gate on: taints kept
        (taint,) = next(d for d in gpu_slice["spec"]["devices"] if d.get("taints"))["taints"]
        assert (taint["key"], taint["value"], taint["effect"]) == (
            vocab.DEVICE_TAINT_KEY,
            "xid-79",
            "NoSchedule",
        )

        used: set[str] = set()
        for i in range(2):
            await dra.run_with_claim(kube, ns, fleet, f"t{i}", dra.claim(f"t{i}", vocab.CLASS_GPU))
            used.update(dra.allocated_devices(await _claim(kube, ns, f"t{i}")))
        assert len(used) == 2 and not used & tainted
        await dra.pending_with_claim(kube, ns, fleet, "t2", dra.claim("t2", vocab.CLASS_GPU))

        # Clearing the taint frees the devices for the waiting pod.
        code, _, err = await fleet_cli.run(
            "taint", "--name", fleet, "--clear", kubeconfig=kubeconfig
        )
        assert code == 0, err
        await wait_for(kube, PODS, dra.running, name="t2", namespace=ns, timeout=120)
        assert set(dra.allocated_devices(await _claim(kube, ns, "t2"))) <= tainted
    finally:
        await Reconciler(kube).delete(fleet)


EVICTION_EVENT = "DeviceTaintManagerEviction"


def _evicted(obj: Obj) -> bool:
    """Being deleted, or marked for it by the device taint eviction controller."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return True
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions
    )


async def _gone(kube: Kube, ns: str, name: str, timeout: float) -> None:  # noqa: ASYNC109
    """Block until pod `name` no longer exists (a watch, not a poll)."""

    async def watch() -> None:
        async for ev in watching.informer(
            kube, PODS, namespace=ns, field_selector=f"metadata.name={name}"
        ):
            if isinstance(ev, watching.Snapshot) and not ev.items:
                return
            if isinstance(ev, watching.Change) and ev.type == "DELETED":
                return

    await asyncio.wait_for(watch(), timeout)


def test_the_device_taint_eviction_controller_runs_with_its_gates_on(
    kubeconfig: str, cluster_config: local.ClusterConfig
) -> None:
    """kube-controller-manager starts the eviction controller only with these gates on."""
    name = cluster_config.name
    cluster = local.LocalCluster(local.ClusterConfig(name=name))
    assert str(cluster.config.kubeconfig) == kubeconfig, "this test needs the local cluster"
    gates = reported_gates(cluster)["kube-controller-manager"]
    assert gates.get("DRADeviceTaints") and gates.get("DynamicResourceAllocation"), gates


async def test_a_noexecute_device_taint_evicts_running_pods_and_clear_lets_new_ones_on(
    kube: Kube, ns: str, kubeconfig: str
) -> None:
    fleet = f"nex-{secrets.token_hex(3)}"
    try:
        await _apply(
            kube, {"name": fleet, "pools": [{"name": "p", "profile": "l4-4gpu", "count": 1}]}
        )
        # Every GPU of the node runs a pod, so the taint hits running pods whatever it picks.
        device_of: dict[str, str] = {}
        for i in range(4):
            await dra.run_with_claim(kube, ns, fleet, f"r{i}", dra.claim(f"r{i}", vocab.CLASS_GPU))
            (device_of[f"r{i}"],) = dra.allocated_devices(await _claim(kube, ns, f"r{i}"))
        code, _, err = await fleet_cli.run(
            "taint", "--name", fleet, "--share", "0.5", "--effect", "NoExecute",
            kubeconfig=kubeconfig,
        )  # fmt: skip
        assert code == 0 and "2 of 4 GPUs" in err, err
        (gpu_slice,) = [
            s
            for s in (
                await kube.list(RESOURCE_SLICES, label_selector=layout.fleet_selector(fleet))
            ).items
            if s["spec"]["driver"] == GPU
        ]
        tainted = {d["name"] for d in gpu_slice["spec"]["devices"] if d.get("taints")}
        assert len(tainted) == 2
        hit = sorted(p for p, d in device_of.items() if d in tainted)
        spared = sorted(p for p, d in device_of.items() if d not in tainted)
        assert len(hit) == 2

        # kube-controller-manager's device taint eviction controller deletes the pods whose
        # claims hold a NoExecute-tainted device (and says so in an event); the others run on.
        for pod in hit:
            await _gone(kube, ns, pod, 120)
            await wait_for(
                kube,
                EVENTS,
                lambda e, pod=pod: (
                    e.get("reason") == EVICTION_EVENT
                    and (e.get("involvedObject") or {}).get("name") == pod
                ),
                namespace=ns,
                timeout=60,
            )
        for pod in spared:
            obj = await kube.get(PODS, pod, ns)
            assert dra.running(obj) and not _evicted(obj), obj["status"]

        # With the evicted pods' claims gone, the only free GPUs are the tainted ones: a new
        # pod waits, until the taint is cleared.
        for pod in hit:
            await kube.delete(RESOURCE_CLAIMS, pod, ns)
        await dra.pending_with_claim(kube, ns, fleet, "new", dra.claim("new", vocab.CLASS_GPU))
        code, _, err = await fleet_cli.run(
            "taint", "--name", fleet, "--clear", kubeconfig=kubeconfig
        )
        assert code == 0, err
        await wait_for(kube, PODS, dra.running, name="new", namespace=ns, timeout=120)
        assert set(dra.allocated_devices(await _claim(kube, ns, "new"))) <= tainted
    finally:
        await Reconciler(kube).delete(fleet)
