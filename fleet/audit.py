"""Does the cluster hold exactly the fleet? Pure checks over listed Nodes and ResourceSlices.

After a fault (an API server restart mid-apply, a retried create whose first answer was lost)
the counts alone can look right while a node has two slices of one driver or a slice points
at a node that no longer exists. `audit` names every such object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fleet import render

Obj = dict[str, Any]


@dataclass(frozen=True)
class Audit:
    nodes: int
    slices: int
    missing_nodes: list[str] = field(default_factory=list)
    extra_nodes: list[str] = field(default_factory=list)
    missing_slices: list[str] = field(default_factory=list)
    """`node/driver` pairs the spec wants and no slice covers."""
    duplicate_slices: list[str] = field(default_factory=list)
    """Slices beyond the first for one node and driver."""
    orphan_slices: list[str] = field(default_factory=list)
    """Slices whose node is missing, or whose owner is not that node (a stale uid)."""

    @property
    def converged(self) -> bool:
        return not (
            self.missing_nodes
            or self.extra_nodes
            or self.missing_slices
            or self.duplicate_slices
            or self.orphan_slices
        )

    def summary(self) -> str:
        """One line: the counts, then the first few names of each kind of problem."""
        parts = [f"{self.nodes} nodes, {self.slices} slices"]
        for label, names in (
            ("missing nodes", self.missing_nodes),
            ("extra nodes", self.extra_nodes),
            ("missing slices", self.missing_slices),
            ("duplicate slices", self.duplicate_slices),
            ("orphan slices", self.orphan_slices),
        ):
            if names:
                parts.append(f"{len(names)} {label} (e.g. {', '.join(names[:3])})")
        return "; ".join(parts)


def audit(desired: Iterable[render.DesiredNode], nodes: list[Obj], slices: list[Obj]) -> Audit:
    """Compare the fleet's desired nodes with the Nodes and ResourceSlices listed by its
    labels."""
    wanted: dict[str, set[str]] = {}
    for d in desired:
        # slice_name() is `<node>-<driver>`: the drivers this node's slices are for.
        wanted[d.name] = {n.removeprefix(f"{d.name}-") for n in render.slice_names(d)}
    uids = {n["metadata"]["name"]: n["metadata"].get("uid") for n in nodes}
    seen: set[tuple[str, str]] = set()
    duplicates, orphans = [], []
    for s in sorted(slices, key=lambda o: str(o["metadata"].get("creationTimestamp", ""))):
        name = s["metadata"]["name"]
        spec = s.get("spec") or {}
        node, driver = spec.get("nodeName", ""), spec.get("driver", "")
        owners = [
            o.get("uid")
            for o in s["metadata"].get("ownerReferences") or []
            if o.get("kind") == "Node"
        ]
        if node not in uids or owners != [uids[node]]:
            orphans.append(name)
        elif (node, driver) in seen:
            duplicates.append(name)
        else:
            seen.add((node, driver))
    missing_slices = [
        f"{node}/{driver}"
        for node, drivers in sorted(wanted.items())
        if node in uids
        for driver in sorted(drivers)
        if (node, driver) not in seen
    ]
    return Audit(
        nodes=len(nodes),
        slices=len(slices),
        missing_nodes=sorted(set(wanted) - set(uids)),
        extra_nodes=sorted(set(uids) - set(wanted)),
        missing_slices=missing_slices,
        duplicate_slices=sorted(duplicates),
        orphan_slices=sorted(orphans),
    )
