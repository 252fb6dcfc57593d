"""A run's gangs, read from its `loadgen.records`: how much of each was bound and Running,
where it landed, and the refusals a native gang's all-or-nothing binding makes on the way
(pure)."""

from __future__ import annotations

from dataclasses import dataclass

from loadgen import placement
from loadgen.records import PodRecord, Records
from testbed import vocab


@dataclass(frozen=True, slots=True)
class GangState:
    """One gang as the run left it: how many of its pods were seen, bound and Running, where
    they landed, and when its first pod was created and its last one seen Running."""

    size: int
    """Pods the gang needs at once (its phase's concurrent pods; seen pods if unknown)."""
    seen: int
    scheduled: int
    running: int
    nodes: int
    racks: int
    blocks: int
    first_created: float
    all_running: float | None
    """When the last of `size` pods was first seen Running; None if they never all were."""

    @property
    def partial(self) -> bool:
        """Some but not all of its pods bound to nodes: what all-or-nothing forbids."""
        return 0 < self.scheduled < self.size

    @property
    def time_to_running(self) -> float | None:
        """From the gang's first pod created to its last pod Running (seconds)."""
        return None if self.all_running is None else self.all_running - self.first_created


def refusals_on_the_way(rec: Records, phase: str) -> int:
    """Pods of `phase` found unschedulable, not scheduled, whose gang has a pod scheduled.
    A native gang binds all or nothing, so such a refusal is a verdict on the way (an
    earlier attempt's condition on a pod whose gang is being bound), not the last word."""
    pods = [r for r in rec.pods.values() if r.phase == phase and r.gang]
    placed = {r.gang for r in pods if r.scheduled is not None}
    return sum(1 for r in pods if r.gang in placed and r.unschedulable and r.scheduled is None)


def gang_states(rec: Records, sizes: dict[str, int] | None = None) -> dict[str, GangState]:
    """Every gang of the run (pods with a PodGroup or gang label); `sizes` gives each phase's
    gang size (pods at once), else a gang is as large as the pods of it seen."""
    members: dict[str, list[PodRecord]] = {}
    for r in rec.pods.values():
        if r.gang:
            members.setdefault(r.gang, []).append(r)
    labels = rec.fleet.node_labels
    out: dict[str, GangState] = {}
    for gang, pods in members.items():
        size = (sizes or {}).get(pods[0].phase) or len(pods)
        nodes = [r.node for r in pods if r.node]
        runs = sorted(r.running for r in pods if r.running is not None)
        out[gang] = GangState(
            size=size,
            seen=len(pods),
            scheduled=len(nodes),
            running=sum(1 for r in pods if r.ran),
            nodes=len(set(nodes)),
            racks=placement.span(nodes, labels, vocab.LABEL_RACK) if nodes else 0,
            blocks=placement.span(nodes, labels, vocab.LABEL_BLOCK) if nodes else 0,
            first_created=min(r.created for r in pods),
            all_running=runs[size - 1] if len(runs) >= size else None,
        )
    return out


def gang_spans(rec: Records) -> dict[str, dict[str, int]]:
    """Per gang with a pod on a node: its pods there, and how many nodes, racks and blocks
    they landed on."""
    return {
        gang: {"pods": g.scheduled, "nodes": g.nodes, "racks": g.racks, "blocks": g.blocks}
        for gang, g in gang_states(rec).items()
        if g.scheduled
    }
