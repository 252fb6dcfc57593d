"""The gang placer: a gated gang is narrowed to the fewest topology blocks that hold it.

kube-scheduler offers the extender only the feasible nodes of its rotating window, so a
gang's later pods may never be offered the block its first pods took. As Kueue's Topology
Aware Scheduling does, the placer decides a whole gang's domain before any of its pods is
scheduled: pods created with the gate `vocab.GATE_GANG_PLACEMENT` (and `LABEL_GANG`,
`ANNOTATION_GANG_SIZE`) wait until every member is present; the placer then chooses the
blocks (`blocks.choose`: the fullest block that holds the gang whole, else the fewest that
hold it together), holds their room in its own books until the pods are bound, and releases
each pod with a required node affinity on the block label (`affinity.released`). The
scheduler's cheap NodeAffinity filter then drops every other node before DRA's, and the
extender's scores still choose inside the blocks.

Off the scheduler's calls: it reads pending pods of gangs only (its own watch) and the
index as the informers keep it, and no call waits for it. A gang that fits nowhere stays
gated and is said once (log, metric, and a condition on its pods, `vocab.CONDITION_GANG_
PLACEMENT`); its pods are never lost or placed half.

State: `Placer.feed` (watch items) and `Placer.due` (decisions, patches to send); I/O: `run`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from extender.core import Core
from extender.gangs import affinity, blocks
from testbed import runtime, vocab
from testbed.kube import errors, resources
from testbed.kube.client import Kube
from testbed.kube.watching import Change, Liveness, RestartReason, Snapshot, informer

log = logging.getLogger(__name__)

PENDING: Final = "spec.nodeName="
"""Pods not bound yet (a bound pod leaves the selection: the watch says DELETED)."""
TICK_SECONDS: Final = 1.0
"""How often waiting gangs are looked at again without an event (room freed by a pod that
finished elsewhere, a hold run out)."""
PATCHES_AT_ONCE: Final = 8

Outcome = Callable[[str], None]
"""Called with what became of a gang or pod: placed_one_block, placed_blocks, no_room,
bad_input, hold_expired (the metric's label)."""


@dataclass(frozen=True, slots=True)
class Write:
    """A patch to send a pod: its release (spec), or a condition on its status."""

    pod: dict[str, Any]
    patch: dict[str, Any]
    status: bool = False


REASONS: Final = {"no_room": "NoRoom", "bad_input": "BadInput"}
"""The condition reason of what is said of a waiting pod (the rest is said in the log only)."""


@dataclass(slots=True)
class Gang:
    size: int
    order: int
    """When it was first seen: gangs are placed first come, first served."""
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Its pending pods (gated, or released by the placer and not bound yet), by key."""
    blocks: tuple[str, ...] | None = None
    """Where it was placed; None while it waits."""
    held: dict[str, int] = field(default_factory=dict)
    """Pods of it each block is held for until they are bound (or the hold runs out)."""
    placed_at: float = 0.0


@dataclass(slots=True)
class Placer:
    core: Core
    hold_seconds: float
    clock: Callable[[], float] = time.monotonic
    on_outcome: Outcome | None = None
    gangs: dict[str, Gang] = field(default_factory=dict)
    _of_pod: dict[str, str] = field(default_factory=dict)
    """Pod key -> its gang's key, for every pod followed."""
    _sent: dict[str, str] = field(default_factory=dict)
    """Pod key -> the resourceVersion a release was last sent for (not sent again for it)."""
    _said: set[str] = field(default_factory=set)
    _notes: list[Write] = field(default_factory=list)
    """Conditions to write on pods said to wait (`_say`), sent with the next `due`."""
    _waited: set[str] = field(default_factory=set)
    """Pods whose condition says they wait: set True when they are released."""
    _seen: int = 0

    # -- what the watch says -------------------------------------------------------------

    def feed(self, item: Snapshot | Change) -> None:
        if isinstance(item, Snapshot):
            fresh = {resources.key_of(p): p for p in item.items}
            for key in [k for k in self._of_pod if k not in fresh]:
                self._gone(key, None)
            for pod in item.items:
                self._upsert(pod)
        elif item.type == "DELETED":
            self._gone(resources.key_of(item.object), item.object)
        else:
            self._upsert(item.object)

    def _upsert(self, pod: dict[str, Any]) -> None:
        key = resources.key_of(pod)
        gang_key = self._of_pod.get(key)
        if gang_key is not None:
            self.gangs[gang_key].pods[key] = pod
            return
        if not affinity.gated(pod.get("spec") or {}, vocab.GATE_GANG_PLACEMENT):
            return  # a gang the placer does not place: not followed
        meta = pod.get("metadata") or {}
        name = (meta.get("labels") or {}).get(self.core.settings.gang_label)
        size = _size((meta.get("annotations") or {}).get(vocab.ANNOTATION_GANG_SIZE))
        if not name or size is None:
            self._say(
                key,
                "bad_input",
                "pod %s is gated for gang placement (%s) but names no %s: it stays gated "
                "(label it %s=<gang> and annotate %s=<pods in the gang>)",
                key,
                vocab.GATE_GANG_PLACEMENT,
                f"gang ({self.core.settings.gang_label} label)"
                if not name
                else f"gang size ({vocab.ANNOTATION_GANG_SIZE} annotation, a positive integer)",
                self.core.settings.gang_label,
                vocab.ANNOTATION_GANG_SIZE,
                pods=(pod,),
            )
            return
        gang_key = f"{meta.get('namespace') or 'default'}/{name}"
        gang = self.gangs.get(gang_key)
        if gang is None:
            self._seen += 1
            gang = self.gangs[gang_key] = Gang(size=size, order=self._seen)
        gang.pods[key] = pod
        self._of_pod[key] = gang_key

    def _gone(self, key: str, pod: dict[str, Any] | None) -> None:
        """A followed pod was bound (it left the pending selection) or deleted: what its
        gang held for it is released (in the block it went to, if bound)."""
        gang_key = self._of_pod.pop(key, None)
        self._sent.pop(key, None)
        self._waited.discard(key)
        if gang_key is None:
            return
        gang = self.gangs[gang_key]
        gang.pods.pop(key, None)
        if gang.held:
            node = ((pod or {}).get("spec") or {}).get("nodeName")
            view = self.core.index.nodes.get(node) if node else None
            block = view.block if view is not None else None
            if block not in gang.held:
                block = max(gang.held, key=lambda b: gang.held[b])
            gang.held[block] -= 1
            if gang.held[block] <= 0:
                del gang.held[block]
        if not gang.pods:
            del self.gangs[gang_key]

    # -- decisions -----------------------------------------------------------------------

    def due(self) -> list[Write]:
        """Place every gang whose pods are all present (first come, first served) and let
        go of holds that ran out; the releases and conditions to send now."""
        now = self.clock()
        if self.core.ready():
            for gang_key, gang in sorted(self.gangs.items(), key=lambda kv: kv[1].order):
                if gang.blocks is None:
                    self._place(gang_key, gang, now)
        out, self._notes = self._notes, []
        for gang_key, gang in self.gangs.items():
            if gang.blocks is None:
                continue
            if gang.held and now - gang.placed_at > self.hold_seconds:
                self._expired(gang_key, gang)
            for key, pod in gang.pods.items():
                if not affinity.gated(pod.get("spec") or {}, vocab.GATE_GANG_PLACEMENT):
                    continue
                version = str((pod.get("metadata") or {}).get("resourceVersion"))
                if self._sent.get(key) == version:
                    continue
                self._sent[key] = version
                label = self.core.settings.block_label
                release = affinity.released(pod, vocab.GATE_GANG_PLACEMENT, label, gang.blocks)
                out.append(Write(pod, release))
                if key in self._waited:
                    self._waited.discard(key)
                    where = f"placed in {', '.join(gang.blocks)}"
                    out.append(Write(pod, affinity.waiting("Placed", where, placed=True), True))
        return out

    def _place(self, gang_key: str, gang: Gang, now: float) -> None:
        gated = [
            p
            for p in gang.pods.values()
            if affinity.gated(p.get("spec") or {}, vocab.GATE_GANG_PLACEMENT)
        ]
        if len(gated) < gang.size:
            return
        reserved: dict[str, int] = {}
        for other in self.gangs.values():
            for b, n in other.held.items():
                reserved[b] = reserved.get(b, 0) + n
        room = blocks.room(self._slots(gated[0]), reserved)
        chosen = blocks.choose(room, gang.size)
        if chosen is None:
            self._say(
                gang_key,
                "no_room",
                "gang %s of %d pods fits in no blocks now (%d pods of its shape fit in all %d "
                "blocks together, the roomiest %d): its pods stay gated until room frees",
                gang_key,
                gang.size,
                sum(room.values()),
                len(room),
                max(room.values(), default=0),
                pods=gated,
            )
            return
        self._said.discard(gang_key)  # said again if it ever waits again
        gang.blocks = chosen
        gang.held = blocks.shares(room, chosen, gang.size)
        gang.placed_at = now
        outcome = "placed_one_block" if len(chosen) == 1 else "placed_blocks"
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        log.info(
            "gang %s of %d pods placed in %s %s (room there: %s)",
            gang_key,
            gang.size,
            "block" if len(chosen) == 1 else "blocks",
            ", ".join(chosen),
            ", ".join(f"{b} {room[b]}" for b in chosen),
        )

    def _slots(self, pod: dict[str, Any]) -> Iterator[tuple[str | None, int]]:
        """(block, pods of `pod`'s shape the node holds now) of every known node in a block
        that the pod's nodeSelector allows (its own required node affinity is not read):
        DRA's verdict on its claims (judged by the extender's allocator, remembered per node
        until the node changes, as the scheduler's calls share it), then how many times its
        GPU and NIC counts go into the node's free ones."""
        core = self.core
        index = core.index
        wanted = ((pod.get("spec") or {}).get("nodeSelector") or {}).items()
        names = [
            n
            for n, v in index.nodes.items()
            if v.known and v.block is not None and all(v.labels.get(k) == x for k, x in wanted)
        ]
        d = core.demand(pod)
        verdicts = core.verdicts(d, names)
        for name in names:
            v = verdicts.get(name)
            if v is not None and v.fits is False:
                continue
            view = index.nodes[name]
            per = [
                c.free // count
                for cls, count in ((d.gpu_class, d.gpus), (d.nic_class, d.nics))
                if cls is not None and count > 0
                for c in (index.summary(view).classes.get(cls),)
                if c is not None
            ]
            yield view.block, max(1, min(per)) if per else 1

    def _expired(self, gang_key: str, gang: Gang) -> None:
        pending = sum(gang.held.values())
        profile = next(iter(gang.pods.values()), {}).get("spec", {}).get("schedulerName")
        self._say(
            gang_key + "/hold",
            "hold_expired",
            "gang %s: %d of its pods not bound %.0fs after it was placed in %s; their room is "
            "no longer held (does a scheduler serve their profile %s? are they schedulable?)",
            gang_key,
            pending,
            self.hold_seconds,
            ", ".join(gang.blocks or ()),
            profile or "default-scheduler",
        )
        gang.held = {}

    def _say(
        self,
        key: str,
        outcome: str,
        message: str,
        *args: object,
        pods: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Log `message` and count `outcome`, the first time it is said of `key`; the
        `pods` it is said of carry it in their condition too (`REASONS`)."""
        if key in self._said:
            return
        if len(self._said) >= 4096:
            self._said.clear()
        self._said.add(key)
        if self.on_outcome is not None:
            self.on_outcome(outcome)
        log.warning(message, *args)
        reason = REASONS.get(outcome)
        if reason is not None:
            line = message % args
            self._notes += [Write(p, affinity.waiting(reason, line), status=True) for p in pods]
            self._waited.update(resources.key_of(p) for p in pods)

    # -- I/O -----------------------------------------------------------------------------

    async def run(
        self,
        kube: Kube,
        *,
        on_restart: Callable[[str, RestartReason], None] | None = None,
        stop: asyncio.Event | None = None,
        liveness: Liveness | None = None,
    ) -> None:
        """Follow pending gang pods and release placed ones, until cancelled (or `stop`)."""
        wake = asyncio.Event()
        loan = self.core.index.loan
        limit = asyncio.Semaphore(PATCHES_AT_ONCE)
        sending: set[asyncio.Task[None]] = set()

        def restarted(reason: RestartReason) -> None:
            if on_restart is not None:
                on_restart(resources.PODS.kind, reason)

        async def follow() -> None:
            async for item in informer(
                kube,
                resources.PODS,
                field_selector=PENDING,
                label_selector=self.core.settings.gang_label,
                on_restart=restarted,
                stop=stop,
                liveness=liveness,
            ):
                # Not while a call is judged on the index in a thread (`extender.cache.loan`).
                await loan.back()
                self.feed(item)
                wake.set()

        async def send(w: Write) -> None:
            meta = w.pod.get("metadata") or {}
            key = resources.key_of(w.pod)
            async with limit:
                try:
                    await kube.patch(
                        resources.PODS,
                        meta["name"],
                        w.patch,
                        namespace=meta.get("namespace"),
                        patch_type="strategic" if w.status else "merge",
                        subresource="status" if w.status else None,
                    )
                except (errors.NotFound, errors.Conflict):
                    pass  # gone, or changed meanwhile: the watch brings its new version
                except errors.KubeError as e:
                    what = "say why it waits on" if w.status else "release"
                    log.warning("cannot %s pod %s: %s", what, key, e)
                    if not w.status:
                        self._sent.pop(key, None)  # tried again next tick
            wake.set()

        watch = asyncio.create_task(follow(), name="watch-pending-gangs")
        try:
            while not watch.done() and (stop is None or not stop.is_set()):
                await loan.back()  # `due` reads the index: with no await until it returns
                for w in self.due():
                    task = asyncio.create_task(send(w))
                    sending.add(task)
                    task.add_done_callback(sending.discard)
                wake.clear()
                await runtime.wait_set(wake, TICK_SECONDS)
            await watch  # its exception, if it ended with one
        finally:
            for t in (watch, *sending):
                t.cancel()
            await asyncio.gather(watch, *sending, return_exceptions=True)


def _size(value: object) -> int | None:
    try:
        n = int(str(value))
    except ValueError:
        return None
    return n if n >= 1 else None
