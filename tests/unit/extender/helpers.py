"""Build a ready store/index/core from plain objects."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from extender.cache.index import Index
from extender.cache.store import KINDS, Store
from extender.config import Settings
from extender.core import Core
from extender.topology import Outcome
from tests.support import extender_objects as objects


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
