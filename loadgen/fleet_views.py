"""The fleet as a run saw it, read from its `loadgen.records`: its nodes and GPUs, who holds
them, how full each node is and what is stranded (pure)."""

from __future__ import annotations

from loadgen.records import Fleet, Records
from testbed import vocab


def busy_memory(fleet: Fleet) -> int:
    """Memory of the physical GPUs the run keeps busy (each whole)."""
    memory = fleet.gpu_memory
    return sum(memory.get(gpu, 0) for gpu in fleet.busy)


def fleet_nodes(rec: Records) -> list[str]:
    """Nodes matching the run's node selector (all nodes when there is none)."""
    return sorted(rec.fleet.nodes)


def gpus_by_node(rec: Records) -> dict[str, int]:
    """GPUs each fleet node publishes (newest pool generation only)."""
    fleet = rec.fleet
    newest: dict[str, int] = {}
    for pool, generation, _, _ in fleet.gpu_slices.values():
        newest[pool] = max(newest.get(pool, 0), generation)
    out: dict[str, int] = {}
    for pool, generation, node, devices in fleet.gpu_slices.values():
        if node in fleet.nodes and generation == newest[pool]:
            out[node] = out.get(node, 0) + devices
    return out


def gpus_held_by_others(rec: Records) -> dict[str, int]:
    """Per other namespace, the fleet GPUs its claims hold now."""
    out: dict[str, int] = {}
    for key, (_, gpus) in rec.fleet.gpus_by_claim.items():
        ns = key.split("/", 1)[0]
        if not rec.scope.matches(ns):
            out[ns] = out.get(ns, 0) + gpus
    return out


def compute_max(rec: Records) -> int | None:
    """The most `compute` one claim may take of any GPU of the fleet's nodes, milli-units;
    None when none of them publishes compute."""
    fleet = rec.fleet
    found = [
        most
        for (pool, _), most in fleet.compute_max.items()
        if fleet.pool_node.get((vocab.GPU_DRIVER, pool)) in fleet.nodes
    ]
    return max(found, default=None)


def fleet_gpus(rec: Records) -> int:
    """GPUs published in ResourceSlices of the fleet's nodes."""
    return sum(gpus_by_node(rec).values())


def _used_by_node(rec: Records) -> dict[str, int]:
    used = dict(rec.fleet.plugin_gpus_by_node)
    for node, gpus in rec.fleet.gpus_by_claim.values():
        used[node] = used.get(node, 0) + gpus
    return used


def occupancy(rec: Records) -> dict[str, tuple[int, int]]:
    """Per fleet node: (GPUs allocated on it by anyone, GPUs it publishes)."""
    used = _used_by_node(rec)
    return {node: (min(used.get(node, 0), cap), cap) for node, cap in gpus_by_node(rec).items()}


def gpus_stranded(rec: Records) -> int:
    """Free GPUs on fleet nodes that already have some allocated: the fragmentation a
    whole-node (8-GPU) pod cannot use."""
    used = _used_by_node(rec)
    return sum(
        capacity - used[node]
        for node, capacity in gpus_by_node(rec).items()
        if 0 < used.get(node, 0) < capacity
    )
