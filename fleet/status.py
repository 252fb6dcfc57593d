"""What `fleet status` reports: per pool, the desired, present and Ready nodes and slices,
and why the cluster does not hold exactly the recorded fleet (pure: the reconciler lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleet import audit, layout, record, render
from fleet.layout import DesiredFleet
from fleet.profiles import ProfileError
from fleet.spec import SpecError
from testbed import vocab
from testbed.kube import resources

Obj = dict[str, Any]


@dataclass(slots=True)
class PoolStatus:
    pool: str
    profile: str
    desired: int | None
    nodes: int = 0
    ready: int = 0
    slices: int = 0
    desired_slices: int | None = None


@dataclass(slots=True)
class FleetStatus:
    name: str
    recorded: bool
    pools: list[PoolStatus] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Why the cluster does not hold exactly the recorded fleet (empty when it does)."""

    @property
    def complete(self) -> bool:
        return not self.problems

    @property
    def desired(self) -> int | None:
        values = [p.desired for p in self.pools]
        return None if any(v is None for v in values) else sum(v or 0 for v in values)

    @property
    def nodes(self) -> int:
        return sum(p.nodes for p in self.pools)

    @property
    def ready(self) -> int:
        return sum(p.ready for p in self.pools)


def status_problems(
    record: Obj | None,
    nodes: list[Obj],
    slices: list[Obj],
    expected: DesiredFleet | None,
    expected_error: str = "",
) -> list[str]:
    """Why the listed objects are not exactly the recorded fleet, one phrase per reason."""
    if record is None:
        return ["no record of a finished apply (one was cut short)"] if nodes or slices else []
    problems: list[str] = []
    started = (record["metadata"].get("annotations") or {}).get(vocab.ANNOTATION_FLEET_APPLYING)
    if started:
        problems.append(f"an apply of a changed spec started {started} and did not finish")
    if expected is None:
        problems.append(f"the record cannot be checked ({expected_error})")
        return problems
    found = audit.audit(expected.nodes, nodes, slices)
    if not found.converged:
        problems.append(found.summary())
    return problems


def fleet_status(name: str, cm: Obj | None, nodes: list[Obj], slices: list[Obj]) -> FleetStatus:
    """Desired, present and Ready nodes per pool, and whether the listed `nodes` and `slices`
    (the fleet's, by its labels) are exactly the fleet its record ConfigMap `cm` keeps."""
    expected: DesiredFleet | None = None
    why = ""
    if cm is not None:
        try:
            recorded = record.recorded_fleet(name, cm)
            expected = render.validate(recorded) if recorded else None
        except (SpecError, ProfileError, ValueError) as e:
            why = str(e).splitlines()[0][:200]
    pools: dict[str, PoolStatus] = {}
    if expected is not None:
        for pool in expected.fleet.spec.pools:
            pools[pool.name] = PoolStatus(pool.name, pool.profile, pool.count, desired_slices=0)
        for node in expected.nodes:
            ps = pools[node.pool]
            ps.desired_slices = (ps.desired_slices or 0) + len(layout.slice_names(node))
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        pool_name = labels.get(vocab.LABEL_POOL, "?")
        ps = pools.setdefault(
            pool_name, PoolStatus(pool_name, labels.get(vocab.LABEL_PROFILE, "?"), None)
        )
        ps.nodes += 1
        ps.ready += resources.node_ready(n)
    for s in slices:
        pool_name = (s["metadata"].get("labels") or {}).get(vocab.LABEL_POOL, "?")
        pools.setdefault(pool_name, PoolStatus(pool_name, "?", None)).slices += 1
    problems = status_problems(cm, nodes, slices, expected, why)
    return FleetStatus(
        name=name, recorded=cm is not None, pools=list(pools.values()), problems=problems
    )
