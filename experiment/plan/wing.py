"""The seams between the engine and the wings that stand on it, and the registry the engine
knows them by.

A wing registers itself by name (`register`), as kwok's runtimes do: its built-in experiment
files (`builtin:NAME`), the check of a file's `builtin:` section (its schema), the `Planner`
(its arms and their probe phases) and `Reporter` it hands the runner, and its result kind
(the top-level JSON file and the page `testbed report` rebuilds from it). The commands above
the engine register the wings; the engine's own pair (`matrix.Planner`,
`variants_report.Reporter`) runs an experiment file's variants x workloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from experiment.measure.arm_record import ArmRecord
from experiment.measure.arms import Arm
from experiment.measure.fleet_shape import FleetShape
from experiment.plan.matrix import Stage
from experiment.sites.site import SchedulerSetup
from experiment.spec.spec import Experiment, SpecError


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


@dataclass(frozen=True)
class Finished:
    """What a run hands its reporter."""

    exp: Experiment
    results: list[tuple[Arm, ArmRecord]]
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
        self, exp: Experiment, results: list[tuple[Arm, ArmRecord]], arms: list[Arm]
    ) -> list[str]:
        """The headline targets still without a verdict over the valid `results` so far
        (`arms`: every arm run): a sequential run stops once there are none."""
        ...


PageWriter = Callable[[Path, dict[str, Any]], Path]
"""Rebuilds a top-level page from its directory and its JSON document; returns the page."""


@dataclass(frozen=True)
class ResultKind:
    """A wing's top-level result document."""

    kind: str
    """Its `kind` field."""
    file: str
    """Its name in a run's directory."""
    page: PageWriter
    """Writes the run's `index.html` from it (`testbed report`)."""


@dataclass(frozen=True)
class Wing:
    """What a wing registers: everything the engine and the commands learn of it."""

    name: str
    builtins: Callable[[str], Experiment]
    """The built-in experiment file `builtin:NAME`; FileNotFoundError if it has none."""
    builtin_names: tuple[str, ...]
    check: Callable[[Experiment], None]
    """Checks a file's `builtin:` section (the wing's schema) and the rest of the file
    against it; SpecError names the field."""
    describe: Callable[[Experiment], str]
    """What the file runs, for `testbed experiment validate`'s line."""
    planner: Callable[[], Planner]
    reporter: Callable[[], Reporter]
    result: ResultKind


class Registry:
    """Wings by name (kwok's runtimes are registered so); `WINGS` is the commands'."""

    def __init__(self) -> None:
        self._wings: dict[str, Wing] = {}

    def register(self, wing: Wing) -> None:
        """Add `wing` (again: replaced, so registering twice is harmless)."""
        self._wings[wing.name] = wing

    def wings(self) -> list[Wing]:
        return list(self._wings.values())

    def builtin(self, name: str) -> Experiment:
        """The registered built-in experiment file `name`; SpecError names the known ones."""
        for wing in self._wings.values():
            if name in wing.builtin_names:
                return wing.builtins(name)
        known = ", ".join(n for w in self._wings.values() for n in w.builtin_names)
        raise SpecError(f"no built-in experiment {name!r} (known: {known or 'none'})")

    def of(self, exp: Experiment) -> Wing | None:
        """The wing that plans a file with a `builtin:` section (None: a file of variants x
        workloads, the engine's own). One wing registers built-in comparisons today; a
        second would name itself in its section."""
        if exp.builtin is None:
            return None
        if not self._wings:
            raise SpecError("builtin: no wing with built-in comparisons is registered")
        return next(iter(self._wings.values()))


WINGS = Registry()
"""The wings the commands above the engine registered (`experiment.cli`)."""
