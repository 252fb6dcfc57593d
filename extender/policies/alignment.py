"""GPU-NIC alignment: can each GPU the pod asks for get a free NIC on its PCIe root?

DRANet measured ~60 % more all_gather/all_reduce bus bandwidth for GPU-NIC pairs on one PCIe
root than for unaligned pairs; a NUMA-local pair sits in between.
"""

from __future__ import annotations

from extender.demand import Demand
from extender.topology import Summary


def score(demand: Demand, summary: Summary, numa_credit: float) -> float | None:
    """1.0 when every pair can be PCIe-root aligned, `numa_credit` per pair that can only be
    NUMA-local, 0 per unaligned pair, averaged; None when the pod wants no pairs, or its claim
    has DRA enforce NUMA alignment already (the in-tree constraint: never paid twice)."""
    pairs = demand.pairs
    if not pairs or demand.aligned_in_tree or demand.gpu_class is None or demand.nic_class is None:
        return None
    root, numa = summary.pairs(demand.gpu_class, demand.nic_class)
    aligned = min(pairs, root)
    numa_only = min(pairs, numa) - aligned
    return (aligned + numa_credit * numa_only) / pairs


def violation(demand: Demand, summary: Summary) -> str | None:
    """Why the node provably cannot meet the pod's required alignment, or None."""
    level = demand.require_alignment
    pairs = demand.pairs
    if level is None or not pairs or demand.gpu_class is None or demand.nic_class is None:
        return None
    root, numa = summary.pairs(demand.gpu_class, demand.nic_class)
    capacity, where = (root, "PCIe root") if level == "pcie-root" else (numa, "NUMA node")
    if capacity >= pairs:
        return None
    return f"{capacity} of {pairs} GPUs can get a free {demand.nic_class} NIC on their {where}"
