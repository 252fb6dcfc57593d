"""Does the cluster hold exactly the fleet? Pure checks over listed Nodes and ResourceSlices.

After a fault (an API server restart mid-apply, a retried create whose first answer was lost)
the counts alone can look right while a node has two slices of one driver or a slice points
at a node that no longer exists. `audit` names every such object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fleet import layout

Obj = dict[str, Any]


@dataclass(frozen=True)
class Audit:
    nodes: int
    slices: int
    missing_nodes: list[str] = field(default_factory=list)
    extra_nodes: list[str] = field(default_factory=list)
    missing_slices: list[str] = field(default_factory=list)
    """Names of slices the spec wants that are not there (or only as orphans)."""
    duplicate_slices: list[str] = field(default_factory=list)
    """Slices of a wanted node that the spec does not make (a second copy, a leftover)."""
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


def audit(desired: Iterable[layout.DesiredNode], nodes: list[Obj], slices: list[Obj]) -> Audit:
    """Compare the fleet's desired nodes with the Nodes and ResourceSlices listed by its
    labels."""
    wanted = {d.name: set(layout.slice_names(d)) for d in desired}
    uids = {n["metadata"]["name"]: n["metadata"].get("uid") for n in nodes}
    seen: set[str] = set()
    duplicates, orphans = [], []
    for s in slices:
        name = s["metadata"]["name"]
        node = (s.get("spec") or {}).get("nodeName", "")
        owners = [
            o.get("uid")
            for o in s["metadata"].get("ownerReferences") or []
            if o.get("kind") == "Node"
        ]
        if node not in uids or owners != [uids[node]]:
            orphans.append(name)
        elif name in wanted.get(node, ()):
            seen.add(name)
        else:  # a slice of a wanted node the render does not make: a second copy, a leftover
            duplicates.append(name)
    missing_slices = [
        slice_name
        for node, names in sorted(wanted.items())
        if node in uids
        for slice_name in sorted(names)
        if slice_name not in seen
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
