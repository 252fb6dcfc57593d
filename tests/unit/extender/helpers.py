"""Plain objects the extender's unit tests share, and a ready store/index/core built from them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from extender import topology
from extender.cache.index import Index
from extender.cache.store import KINDS, Store
from extender.config import Settings
from extender.core import Core
from extender.topology import Outcome
from tests.support import extender_objects as objects

NS = "ns"

# A one-GPU device as the NVIDIA driver publishes it, for the expression tests.
GPU = topology.device_of(
    "gpu.nvidia.com",
    {
        "name": "gpu-0",
        "attributes": {
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "index": {"int": 0},
            "driverVersion": {"version": "550.54.15"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    },
)


def cluster_objects() -> list[dict[str, Any]]:
    """An aligned DGX node "al", an unaligned node "un" and the claim template "pairs"."""
    tmpl = objects.template(NS, "pairs", objects.pair_spec(8))
    return [*objects.dgx("al"), *objects.unaligned("un"), tmpl]


def pair_pod(**kw: Any) -> dict[str, Any]:
    """A pod with a claim from "pairs" (8 GPU and 8 NIC requests, no constraint)."""
    return objects.pod(NS, "p", templates=["pairs"], **kw)


def store_of(
    objs: Iterable[dict[str, Any]],
    *,
    settings: Settings | None = None,
    placements: list[tuple[Outcome, int]] | None = None,
    with_classes: bool = True,
) -> Store:
    settings = settings or Settings()
    sink = placements
    index = Index(
        settings, on_placement=(lambda o, n: sink.append((o, n))) if sink is not None else None
    )
    store = Store(index)
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for obj in [*(objects.classes() if with_classes else []), *objs]:
        by_kind[obj["kind"]].append(obj)
    for kind in KINDS:
        store.replace(kind, by_kind[kind])
    return store


def core_of(objs: Iterable[dict[str, Any]], settings: Settings | None = None) -> Core:
    settings = settings or Settings()
    store = store_of(objs, settings=settings)
    return Core(store.index, settings, ready=store.ready.is_set, clock=lambda: 0.0)
