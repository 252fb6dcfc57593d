"""Apply snapshots and changes of each watched kind to the index; track readiness.

Readiness means every kind has had its first full list (a snapshot); until then the handlers
judge nothing (filter passes every node, prioritize scores 0).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from extender.cache.index import Index
from testbed.kube import resources
from testbed.kube.watching import Change, Snapshot

KINDS: Final[dict[str, resources.Resource]] = {
    "DeviceClass": resources.DEVICE_CLASSES,
    "Node": resources.NODES,
    "ResourceSlice": resources.RESOURCE_SLICES,
    "ResourceClaimTemplate": resources.RESOURCE_CLAIM_TEMPLATES,
    "ResourceClaim": resources.RESOURCE_CLAIMS,
    "Pod": resources.PODS,
}
"""Watched kinds, classes first so the first summaries already know them."""

EventObserver = Callable[[str, dict[str, Any]], None]


class Store:
    def __init__(
        self,
        index: Index,
        *,
        kinds: tuple[str, ...] = tuple(KINDS),
        on_event: EventObserver | None = None,
    ) -> None:
        self.index = index
        self.kinds = kinds
        self.on_event = on_event
        self.synced: set[str] = set()
        self.ready = asyncio.Event()

    def feed(self, kind: str, item: Snapshot | Change) -> None:
        if isinstance(item, Snapshot):
            self.replace(kind, item.items)
        else:
            self.apply(kind, item)

    def replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A full list: objects it lacks are deleted, the rest upserted."""
        present = {resources.key_of(obj) for obj in items}
        for key in set(self.index.keys(kind)) - present:
            self.index.delete(kind, _stub(key))
        for obj in items:
            self.index.upsert(kind, obj)
        self.synced.add(kind)
        if self.synced.issuperset(self.kinds):
            self.ready.set()

    def apply(self, kind: str, change: Change) -> None:
        if change.type == "DELETED":
            self.index.delete(kind, change.object)
        else:
            self.index.upsert(kind, change.object)
        if self.on_event is not None:
            self.on_event(kind, change.object)


def _stub(key: str) -> dict[str, Any]:
    ns, _, name = key.rpartition("/")
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    return {"metadata": meta}
