"""Apply snapshots and changes of each watch to the index; track readiness.

Readiness means every watch has had its first full list (a snapshot); until then the handlers
judge nothing (filter passes every node, prioritize scores 0).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from extender import cpu_stages
from extender.cache.index import Index
from extender.config import Settings
from testbed import vocab
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

# Only scheduled, unfinished pods matter (job siblings); the API server filters the rest.
# A pod that finishes leaves the selection, which the watch reports as DELETED.
POD_FIELD_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
NOMINATED_FIELD_SELECTOR = "spec.nodeName=,status.nominatedNodeName!="
"""Pods the scheduler has chosen a node for but not bound yet: from 1.35
(NominatedNodeNameForExpectation, on by default) its binding cycle first writes the chosen
node to `status.nominatedNodeName` when PreBind has work to do, as DRA's claim writes do.
That is the earliest the choice shows outside the scheduler, before the claims and the
binding are written (seconds on a busy API server), so a gang's next pods follow it rather
than being scored as if they had no sibling. Disjoint from POD_FIELD_SELECTOR: a pod leaves
this selection when it is bound and enters that one."""
NOMINATED = "/nominated"
"""Suffix of the name of each pod selection's nominated-pods twin."""


@dataclass(frozen=True, slots=True)
class Watch:
    """One list+watch: the index kind it feeds and the server-side selection."""

    kind: str
    field_selector: str | None = None
    label_selector: str | None = None

    @property
    def resource(self) -> resources.Resource:
        return KINDS[self.kind]

    @property
    def nominated(self) -> bool:
        """This watch reads pods nominated to a node but not bound to it."""
        return self.field_selector == NOMINATED_FIELD_SELECTOR


def _pods(name: str, labels: str) -> dict[str, Watch]:
    """The bound and the nominated pods of one label selection."""
    return {
        name: Watch("Pod", POD_FIELD_SELECTOR, labels),
        name + NOMINATED: Watch("Pod", NOMINATED_FIELD_SELECTOR, labels),
    }


def watches(settings: Settings) -> dict[str, Watch]:
    """Every watch by name. Pods are read only for job siblings, so only pods of a gang or a
    Job are watched (two disjoint label selections: a selector cannot say "or"), each bound
    and nominated (`NOMINATED_FIELD_SELECTOR`); a pod without either label would cost a
    decode per status change and change nothing."""
    out = {kind: Watch(kind) for kind in KINDS if kind != "Pod"}
    gang = settings.gang_label
    out.update(_pods("Pod/gang", gang))
    if gang != vocab.LABEL_JOB_NAME:
        out.update(_pods("Pod/job", f"{vocab.LABEL_JOB_NAME},!{gang}"))
    return out


GROUP_WATCH: Final = "Pod/group"


def group_watch(settings: Settings) -> Watch:
    """Scheduled pods with neither label: where the Workload API is served, a pod may name
    its gang only there (`spec.schedulingGroup`, or on 1.35 `spec.workloadRef`), which no
    field selector can pick, so all of them are read (the index keeps only those naming a
    group). Disjoint from the two label selections."""
    gang = settings.gang_label
    unlabelled = f"!{vocab.LABEL_JOB_NAME}" + (f",!{gang}" if gang != vocab.LABEL_JOB_NAME else "")
    return Watch("Pod", POD_FIELD_SELECTOR, unlabelled)


EventObserver = Callable[[str, dict[str, Any]], None]


class Store:
    def __init__(
        self,
        index: Index,
        *,
        kinds: tuple[str, ...] | None = None,
        on_event: EventObserver | None = None,
        stages: cpu_stages.CpuStages | None = None,
    ) -> None:
        self.index = index
        self.stages = stages if stages is not None else cpu_stages.CpuStages()
        self.watches = watches(index.settings)
        self.kinds = kinds if kinds is not None else tuple(self.watches)
        self._every_watch = kinds is None
        """The watches that must list before the store is ready."""
        self.on_event = on_event
        self.synced: set[str] = set()
        self.ready = asyncio.Event()
        self._owner: dict[str, str] = {}
        """Pod key -> the watch that last reported it (a relabelled pod moves between the
        pod selections, and their streams are not ordered with each other)."""

    def watch_groups(self) -> None:
        """Also follow pods that name their gang only through the Workload API (before the
        watches start: the store is then ready only once this one has listed too)."""
        self.watches[GROUP_WATCH] = group_watch(self.index.settings)
        if self._every_watch:
            self.kinds = tuple(self.watches)

    def _kind(self, watch: str) -> str:
        w = self.watches.get(watch)
        return w.kind if w is not None else watch

    def feed(self, watch: str, item: Snapshot | Change) -> None:
        t = self.stages.start()
        if isinstance(item, Snapshot):
            self.replace(watch, item.items)
        else:
            self.apply(watch, item)
        self.stages.lap("events", t)

    def replace(self, watch: str, items: list[dict[str, Any]]) -> None:
        """A full list of one watch, or with a kind's name (offline files, tests) of all
        of that kind: objects it lacks are deleted, the rest upserted."""
        kind = self._kind(watch)
        present = {resources.key_of(obj) for obj in items}
        held = self.index.keys(kind)
        if kind == "Pod" and watch in self.watches:
            held = [k for k in held if self._owner.get(k, watch) == watch]
        for key in set(held) - present:
            self.index.delete(kind, _stub(key))
            self._owner.pop(key, None)
        for obj in items:
            self._upsert(watch, kind, obj)
        if watch in self.watches:
            self.synced.add(watch)
        else:
            self.synced.update(n for n, w in self.watches.items() if w.kind == watch)
        if self.synced.issuperset(self.kinds):
            self.ready.set()

    def apply(self, watch: str, change: Change) -> None:
        kind = self._kind(watch)
        if change.type == "DELETED":
            if kind == "Pod":
                key = resources.key_of(change.object)
                if self._owner.get(key, watch) != watch:
                    return  # the other selection holds it now
                self._owner.pop(key, None)
            self.index.delete(kind, change.object)
        else:
            self._upsert(watch, kind, change.object)
        if self.on_event is not None:
            self.on_event(kind, change.object)

    def _upsert(self, watch: str, kind: str, obj: dict[str, Any]) -> None:
        if kind == "Pod":
            key = resources.key_of(obj)
            if self._nominated(watch) and not self._nominated(self._owner.get(key, watch)):
                return  # bound already: a late report of it still nominated says nothing new
            self._owner[key] = watch
        self.index.upsert(kind, obj)

    def _nominated(self, watch: str) -> bool:
        w = self.watches.get(watch)
        return w is not None and w.nominated


def _stub(key: str) -> dict[str, Any]:
    ns, _, name = key.rpartition("/")
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    return {"metadata": meta}
