"""A model, not a measurement: the network payoff of GPU–NIC alignment.

kwok nodes move no bytes, so the testbed prices each placement with the bus bandwidths DRANet's
paper measured (arXiv 2506.23628: 2 x GKE a4-highgpu-8g, 8 x B200 + 8 RoCE NICs each, NCCL at
8 GB messages). A GPU whose NIC shares its PCIe root gets the aligned figure; any other pairing
(same NUMA node or not) gets the unaligned one, since the paper published no NUMA-only figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# GB/s, (aligned, unaligned), per collective.
PUBLISHED_BUS_BANDWIDTH: Final = {
    "all_gather": (46.59, 29.20),
    "all_reduce": (46.93, 29.68),
}


@dataclass(frozen=True)
class Payoff:
    collective: str
    gpus: int
    aligned_gpus: int
    mean_gbps: float
    """Expected bus bandwidth per placed GPU under this placement."""
    all_aligned_gbps: float
    """The same if every GPU were aligned (the ceiling)."""

    @property
    def share_of_ceiling(self) -> float:
        return self.mean_gbps / self.all_aligned_gbps if self.gpus else 1.0


def payoff(aligned_gpus: int, gpus: int, collective: str = "all_gather") -> Payoff:
    """Expected per-GPU bus bandwidth when `aligned_gpus` of `gpus` share a root with a NIC."""
    if not 0 <= aligned_gpus <= gpus:
        raise ValueError(f"aligned_gpus={aligned_gpus} must be within 0..gpus={gpus}")
    aligned, unaligned = PUBLISHED_BUS_BANDWIDTH[collective]
    mean = (aligned_gpus * aligned + (gpus - aligned_gpus) * unaligned) / gpus if gpus else 0.0
    return Payoff(collective, gpus, aligned_gpus, mean, aligned)
