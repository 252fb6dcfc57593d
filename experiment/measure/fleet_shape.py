"""What a provisioned fleet offers, read back from its ResourceSlices (pure): the runner
prints it and a planner sizes its arms by it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed import vocab


@dataclass(frozen=True)
class FleetShape:
    """What the provisioned fleet offers, read back from its ResourceSlices."""

    nodes: int
    gpus: int
    eight_gpu_nodes: int
    """Nodes with 8 GPUs: where whole-node (8-GPU) pods fit."""
    aligned_eight_nodes: int
    """Nodes with 8 GPUs and 8 RDMA NICs: where 8 aligned GPU+NIC pairs fit."""


def shape_of(slices: list[dict[str, Any]]) -> FleetShape:
    """The fleet's shape from its ResourceSlices (GPU and RDMA NIC counts per node)."""
    gpus: dict[str, int] = {}
    rdma: dict[str, int] = {}
    for s in slices:
        spec = s.get("spec", {})
        node = spec.get("nodeName", "")
        devices = spec.get("devices") or []
        if spec.get("driver") == vocab.GPU_DRIVER:
            gpus[node] = gpus.get(node, 0) + len(devices)
        elif spec.get("driver") == vocab.NIC_DRIVER:
            n = sum(
                1
                for d in devices
                if (d.get("attributes") or {}).get(vocab.NIC_ATTR_RDMA, {}).get("bool")
            )
            rdma[node] = rdma.get(node, 0) + n
    nodes = set(gpus) | set(rdma)
    return FleetShape(
        nodes=len(nodes),
        gpus=sum(gpus.values()),
        eight_gpu_nodes=sum(1 for n in nodes if gpus.get(n, 0) >= 8),
        aligned_eight_nodes=sum(1 for n in nodes if gpus.get(n, 0) >= 8 and rdma.get(n, 0) >= 8),
    )
