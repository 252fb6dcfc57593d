"""What the demo hands the engine's runner: its `Planner` (over `plan`), and the demo's reading
of an experiment file's `builtin:` section (its workload, the check of its names).

Apart from `plan`, which `testbed demo`'s flags need at every `testbed` start: this module
brings in the experiment file's parser, loaded only when a command runs.
"""

from __future__ import annotations

from typing import Any

from experiment.arms import Arm
from experiment.demo import plan
from experiment.demo.plan import (
    ALL_COMPARISONS,
    DEFAULT_COMPARISONS,
    EXTENDER,
    PLAIN,
    PROBE_PHASES,
    Workload,
    fleet_spec,
)
from experiment.fleet_shape import FleetShape
from experiment.matrix import Stage
from experiment.site import SchedulerSetup
from experiment.spec import Builtin, Experiment, SpecError


def workload_of(exp: Experiment) -> Workload:
    """The demo's workload from an experiment file's `builtin:` section (no section: the
    defaults)."""
    b = exp.builtin or Builtin()
    nodes = exp.fleet.nodes or 0
    return Workload(
        pods=b.pods,
        repeat=exp.repeats,
        comparisons=DEFAULT_COMPARISONS if b.comparisons is None else tuple(b.comparisons),
        scale_nodes=b.scale_nodes if b.scale_nodes is not None else 5 * nodes,
        latency_arms=b.latency_arms,
    )


def check(exp: Experiment) -> None:
    """The `builtin:` section names only the demo's comparisons; SpecError names the field."""
    comparisons = workload_of(exp).comparisons
    unknown = [c for c in comparisons if c not in ALL_COMPARISONS]
    if unknown or not comparisons:
        # As the file's other fields are named (`validation.one_line`).
        where = f"builtin.comparisons.{unknown[0]}" if unknown else "builtin.comparisons: []"
        raise SpecError(f"{where}: not a built-in comparison (known: {', '.join(ALL_COMPARISONS)})")


def setups() -> dict[str, SchedulerSetup]:
    """The demo's two schedulers: the cluster's own with the extender, and a plain one."""
    return {EXTENDER: SchedulerSetup(), PLAIN: SchedulerSetup(extender=False)}


class Planner:
    """What the demo hands the runner (`experiment.wing.Planner`): one stage on the file's
    cluster, whose arms are planned once the fleet's shape is known."""

    def stages(self, exp: Experiment) -> list[Stage]:
        return [Stage(exp.clusters()[0], ())]

    def arms(self, exp: Experiment, stage: Stage, shape: FleetShape) -> list[Arm]:
        return plan.arms(shape, workload_of(exp))

    def setups(self, exp: Experiment) -> dict[str, SchedulerSetup]:
        return setups()

    def fleet(self, exp: Experiment, nodes: int, variant: str) -> dict[str, Any]:
        return fleet_spec(nodes, variant=variant)

    def probe_phases(self, arm: Arm) -> tuple[str, ...]:
        return PROBE_PHASES.get(arm.comparison, ())
