"""The two seams between the engine and what stands on it: a wing (the demo, in
`experiment.demo`) hands the runner a `Planner` and a `Reporter`; the engine's own pair
(`matrix.Planner`, `variants_report.Reporter`) runs an experiment file's variants x workloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from experiment.arms import Arm
from experiment.figures import Doc
from experiment.fleet_shape import FleetShape
from experiment.matrix import Stage
from experiment.site import SchedulerSetup
from experiment.spec import Experiment


class Planner(Protocol):
    """Which arms run where, and on which schedulers and fleets (pure)."""

    def stages(self, exp: Experiment) -> list[Stage]:
        """Every stage (a cluster and its arms) in run order."""
        ...

    def arms(self, exp: Experiment, stage: Stage, shape: FleetShape) -> list[Arm]:
        """The stage's arms once its fleet is up and its shape known; ValueError if they
        cannot run on it."""
        ...

    def setups(self, exp: Experiment) -> dict[str, SchedulerSetup]:
        """Scheduler key (`Arm.scheduler`) -> what it asks of the site."""
        ...

    def fleet(self, exp: Experiment, nodes: int, variant: str) -> dict[str, Any]:
        """The fleet spec for an arm that needs another size (`Arm.fleet_nodes`) or a fleet
        variant (`Arm.fleet`)."""
        ...

    def probe_phases(self, arm: Arm) -> tuple[str, ...]:
        """The arm's phases whose pods may be refused by design (`accounting.accounted`)."""
        ...


@dataclass(frozen=True)
class Finished:
    """What a run hands its reporter."""

    exp: Experiment
    results: list[tuple[Arm, Doc]]
    """The valid arms' results: the only ones any figure is made of."""
    arms: list[Arm]
    """Every arm run."""
    meta: dict[str, Any]
    """The run's facts (elapsed time, sites, each arm's accounting and validity)."""
    out_dir: Path


class Reporter(Protocol):
    """The run's report over its arms' results."""

    def report(self, run: Finished, console: Console) -> Path:
        """Print the summary, write the report into `run.out_dir` and return its index page."""
        ...

    def undecided(
        self, exp: Experiment, results: list[tuple[Arm, Doc]], arms: list[Arm]
    ) -> list[str]:
        """The headline targets still without a verdict over the valid `results` so far
        (`arms`: every arm run): a sequential run stops once there are none."""
        ...
