"""Pure placement quality: GPU-NIC alignment inside a claim and a gang's topology span."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def aligned_pairs(gpu_values: Iterable[str | None], nic_values: Iterable[str | None]) -> int:
    """How many GPUs can each be paired with a distinct NIC of the same value.

    Values are a topology attribute (PCIe root or NUMA node) per device; a device without
    the attribute pairs with nothing.
    """
    gpus = Counter(v for v in gpu_values if v is not None)
    nics = Counter(v for v in nic_values if v is not None)
    return sum(min(n, nics[v]) for v, n in gpus.items())


def span(nodes: Iterable[str], node_labels: Mapping[str, Mapping[str, str]], key: str) -> int:
    """Distinct values of label `key` over `nodes` (nodes without it count as one each)."""
    seen: set[str] = set()
    for node in nodes:
        value = node_labels.get(node, {}).get(key)
        seen.add(f"={value}" if value is not None else f"node:{node}")
    return len(seen)
