"""Best fit on devices: prefer the node the pod fills most, so whole nodes stay free for
8-GPU pods (less fragmentation)."""

from __future__ import annotations

from extender.demand import Demand
from extender.topology import Summary


def score(demand: Demand, summary: Summary) -> float | None:
    """1.0 when the pod takes exactly the node's free devices of its main class, falling
    with the share of devices it would leave free; None when the pod asks for no devices."""
    if demand.gpus and demand.gpu_class is not None:
        cls, want = demand.gpu_class, demand.gpus
    elif demand.nics and demand.nic_class is not None:
        cls, want = demand.nic_class, demand.nics
    else:
        return None
    c = summary.classes.get(cls)
    if c is None or c.free < want:
        return 0.0  # DRA cannot place it here anyway
    return 1.0 - (c.free - want) / c.total
