"""What the demo hands the engine's runner: its `Planner` (over `plan`), and its reading of
an experiment file's `builtin:` section (the section's schema, its workload, its checks).

Apart from `plan` and `defaults`, which `testbed demo`'s flags need at every `testbed` start:
this module brings in the experiment file's parser, loaded only when a command runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from experiment.demo import defaults, plan
from experiment.demo.plan import ALL_COMPARISONS, EXTENDER, PLAIN, Workload
from experiment.measure.arms import Arm
from experiment.measure.fleet_shape import FleetShape
from experiment.plan.matrix import Stage
from experiment.sites.site import SchedulerSetup
from experiment.spec import mixed_fleet
from experiment.spec.spec import Experiment, SpecError
from testbed import validation


class Section(BaseModel):
    """An experiment file's `builtin:` section: the demo's comparisons, each with its own
    pair of variants (`plan`). A field left out is the built-in file's (`demo.yaml`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    comparisons: list[str] | None = None
    pods: int | None = Field(None, ge=1)
    scale_nodes: int | None = Field(None, ge=1, alias="scaleNodes")
    """None: five times the fleet (`plan.scale_nodes`)."""
    latency_arms: bool | None = Field(None, alias="latencyArms")
    """An unsaturated latency arm after each throughput arm (`plan`)."""


class _Sections(BaseModel):
    builtin: Section


def section(exp: Experiment) -> Section:
    """The file's `builtin:` section; SpecError names the field (`builtin.pods: ...`)."""
    try:
        return _Sections.model_validate({"builtin": exp.builtin or {}}).builtin
    except ValidationError as e:
        raise SpecError(validation.one_line(e)) from None


def workload_of(exp: Experiment) -> Workload:
    """The demo's workload: the file's `builtin:` section over the built-in file's."""
    s, d = section(exp), defaults.defaults()
    return Workload(
        pods=s.pods if s.pods is not None else d.pods,
        repeat=exp.repeats,
        comparisons=d.comparisons if s.comparisons is None else tuple(s.comparisons),
        scale_nodes=plan.scale_nodes(exp.fleet.nodes or 0, s.scale_nodes),
        latency_arms=s.latency_arms if s.latency_arms is not None else d.latency_arms,
    )


def check(exp: Experiment) -> None:
    """The file fits the demo: its `builtin:` section names only the demo's comparisons, its
    fleet is the mixed one, and a sequential budget fits one pair; SpecError names the
    field."""
    w = workload_of(exp)
    unknown = [c for c in w.comparisons if c not in ALL_COMPARISONS]
    if unknown or not w.comparisons:
        # As the file's other fields are named (`validation.one_line`).
        where = f"builtin.comparisons.{unknown[0]}" if unknown else "builtin.comparisons: []"
        raise SpecError(f"{where}: not a built-in comparison (known: {', '.join(ALL_COMPARISONS)})")
    if exp.fleet.profile != mixed_fleet.PROFILE or (exp.fleet.nodes or 0) < plan.MIN_NODES:
        raise SpecError(
            f"fleet: the built-in comparisons run on profile: {mixed_fleet.PROFILE} with at "
            f"least {plan.MIN_NODES} nodes"
        )
    # A lower bound of one pair of every comparison: two arms each (and their latency arms).
    exp.check_budget(2 * len(w.comparisons) * (2 if w.latency_arms else 1), w.pods)


def describe(exp: Experiment) -> str:
    return f"built-in comparisons {', '.join(workload_of(exp).comparisons)}"


def setups() -> dict[str, SchedulerSetup]:
    """The demo's two schedulers: the cluster's own with the extender, and a plain one."""
    return {EXTENDER: SchedulerSetup(), PLAIN: SchedulerSetup(extender=False)}


class Planner:
    """What the demo hands the runner (`experiment.plan.wing.Planner`): one stage on the file's
    cluster, whose arms are planned once the fleet's shape is known."""

    def stages(self, exp: Experiment) -> list[Stage]:
        return [Stage(exp.clusters()[0], ())]

    def arms(self, exp: Experiment, stage: Stage, shape: FleetShape) -> list[Arm]:
        return plan.arms(shape, workload_of(exp))

    def setups(self, exp: Experiment) -> dict[str, SchedulerSetup]:
        return setups()

    def fleet(self, exp: Experiment, nodes: int, variant: str) -> dict[str, Any]:
        return plan.fleet_spec(nodes, variant=variant)
