"""A fleet sharded across kwok controllers, on a small cluster of its own started with 2 shards.

kwok's node-lease controller writes its own identity (logged at start as `id`) into every
lease it holds, so a lease's holderIdentity says which controller keeps that node alive.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path

import pytest

from fleet import render
from fleet.reconcile import Reconciler
from fleet.spec import from_data
from testbed import vocab
from testbed.cluster import kwok_shards, local
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import LEASES, NODES
from testbed.kube.watching import Snapshot, informer

pytestmark = pytest.mark.cluster


def controller_ids(log: Path) -> set[str]:
    """Every identity a kwok controller logged (one per start)."""
    ids = set()
    for line in log.read_text().splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            continue
    return ids


def processes_mentioning(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


async def lease_holders(kube: Kube, nodes: set[str]) -> dict[str, str]:
    """Each node's lease holder, once every node has a held lease (watched, not polled)."""
    holders: dict[str, str] = {}
    async for ev in informer(kube, LEASES, namespace="kube-node-lease"):
        for lease in ev.items if isinstance(ev, Snapshot) else [ev.object]:
            holder = (lease.get("spec") or {}).get("holderIdentity")
            if holder:
                holders[lease["metadata"]["name"]] = holder
        if nodes <= holders.keys():
            break
    return holders


@pytest.mark.timeout(240)
async def test_each_kwok_shard_readies_and_leases_its_own_nodes_and_down_stops_them(
    tmp_path: Path,
) -> None:
    # A throwaway cluster with 2 kwok shards (no extender: nothing is scheduled here).
    cfg = local.ClusterConfig(
        name=f"shards-{secrets.token_hex(3)}", home=tmp_path, extender=False, kwok_shards=2
    )
    cluster = local.LocalCluster(cfg)
    try:
        await asyncio.to_thread(cluster.up, build=False)
        await _check_shards(cluster)
        # Asking for another shard count on the running cluster is refused, changing nothing.
        other = local.LocalCluster(local.ClusterConfig(name=cfg.name, home=tmp_path, kwok_shards=3))
        with pytest.raises(local.ClusterError, match="runs 2 kwok shard"):
            await asyncio.to_thread(other.up, build=False)
        assert cluster.status().ready
    finally:
        await asyncio.to_thread(cluster.down)
    assert processes_mentioning(str(cfg.cluster_dir)) == []
    assert not cfg.cluster_dir.exists()


async def _check_shards(cluster: local.LocalCluster) -> None:
    cfg = cluster.config
    running = {c.name: c.pid for c in cluster.status().components}
    shard1 = kwok_shards.shard_name(1)
    assert running["kwok-controller"] and running[shard1]
    assert cluster.kwok_shards() == 2
    # 5 kwokctl components + shard 1, all of this cluster
    assert len(processes_mentioning(str(cfg.cluster_dir))) == 6

    two = from_data(
        {
            "metadata": {"name": "two"},
            "spec": {"kwokShards": 2, "pools": [{"name": "a", "profile": "dgx-h100", "count": 12}]},
        }
    )
    # Wider than the cluster (shard 2) and unsharded nodes: the default controller keeps them.
    three = from_data(
        {
            "metadata": {"name": "three"},
            "spec": {"kwokShards": 3, "pools": [{"name": "a", "profile": "cpu-only", "count": 3}]},
        }
    )
    plain = from_data(
        {
            "metadata": {"name": "plain"},
            "spec": {"pools": [{"name": "a", "profile": "cpu-only", "count": 2}]},
        }
    )
    kube = await Kube.connect(kubeconfig=cfg.kubeconfig, settings=ClientSettings(qps=0))
    try:
        rec = Reconciler(kube)
        for fleet in (two, three, plain):
            await rec.apply(render.validate(fleet))
        for fleet in (two, three, plain):
            assert (
                await rec.wait_ready(render.validate(fleet), within=120) == fleet.spec.total_nodes
            )
        nodes = (await kube.list(NODES)).items
        leases = await asyncio.wait_for(
            lease_holders(kube, {n["metadata"]["name"] for n in nodes}), 60
        )
    finally:
        await kube.close()

    default_ids = controller_ids(cfg.cluster_dir / "logs" / "kwok-controller.log")
    shard_ids = controller_ids(cfg.cluster_dir / "logs" / f"{shard1}.log")
    assert default_ids and shard_ids and not default_ids & shard_ids
    by_controller: dict[str, list[str]] = {"default": [], "shard-1": []}
    for node in nodes:
        name = node["metadata"]["name"]
        holder = leases.get(name)
        assert holder in default_ids | shard_ids, f"node {name} lease held by {holder!r}"
        by_controller["shard-1" if holder in shard_ids else "default"].append(name)
        shard = (node["metadata"].get("labels") or {}).get(vocab.LABEL_KWOK_SHARD)
        assert (holder in shard_ids) == (shard == "1"), f"node {name} (shard {shard})"
    # 12 nodes round-robin over 2 shards, 3 over 3 (one of them shard 1), 2 unsharded.
    assert len(by_controller["shard-1"]) == 6 + 1
    assert len(by_controller["default"]) == 6 + 2 + 2
