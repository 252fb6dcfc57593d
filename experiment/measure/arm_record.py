"""One arm's record: loadgen's result document, parsed (`ResultDoc`), and the engine's own
facts about the arm beside it (the CPU of its path, its injected fault, its placement optimum,
its validity). Figures, verdicts and pages read its attributes; nothing writes into loadgen's
document.

Built once per arm by the runner (`build`), kept beside loadgen's `result.json` in the arm's
directory as `arm.json` (the engine's fields only: the result is not copied), and read back
by `load`, which also reads a directory written before records were kept: its `result.json`
with the `optimum.json` and `fault.json` the runner kept beside it then (no path CPU, no
validity: they were never on disk).

A field renamed or retyped in loadgen's schema fails here, at parse time or in mypy, never
as a figure silently read as None.
"""

from __future__ import annotations

import functools
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from experiment.measure import fault_plan
from loadgen import scenarios
from loadgen.report import document
from loadgen.report.document import ComponentMetrics as ComponentMetrics
from loadgen.report.document import PhaseDoc as PhaseDoc
from loadgen.report.document import ResultDoc as ResultDoc
from loadgen.report.document import Summary as Summary
from loadgen.report.explanation import CpuProfile as CpuProfile
from testbed import files

FILE = "arm.json"
RESULT = "result.json"
OPTIMUM = "optimum.json"
"""Where an arm directory written before `arm.json` keeps its optimum (still written beside
it: the file a reader of one arm looks for)."""
FAULT = "fault.json"
"""Likewise, its injected fault's record."""
KIND = "ArmRecord"
SCHEMA_VERSION: Literal[1] = 1
ScenarioPhase = scenarios.Phase
IN_PROCESS_SOURCE = "scheduler_perf"
"""`scenario.source` of a result scheduler_perf wrote in loadgen's schema (`schedperf.result`)."""
CL2_SOURCE = "clusterloader2"
"""`scenario.source` of a ClusterLoader2 arm's result: its observers' in loadgen's schema
(`experiment.sites.clusterloader2`)."""


class Cl2Row(BaseModel):
    """One agreement row: loadgen observe's figure beside ClusterLoader2's (ms)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    measurement: str
    phase: str
    stat: str
    loadgen_ms: float | None
    cl2_ms: float | None
    diff_ms: float | None
    allowed_ms: float | None
    ok: bool


class Cl2Pods(BaseModel):
    """One ClusterLoader2 measurement's pods: to be created, seen and measured by loadgen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expected: int
    observed: int
    measured: int


class Cl2Section(BaseModel):
    """A ClusterLoader2 arm's own figures and agreement (`experiment.sites.clusterloader2`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    exit_code: int
    overrides: dict[str, Any]
    perfdata: list[str]
    """ClusterLoader2's PerfData files read."""
    figures_ms: dict[str, dict[str, dict[str, float]]]
    """Measurement -> phase -> statistic -> ms, as ClusterLoader2 reported them."""
    pods: dict[str, Cl2Pods]
    tolerance: str
    rows: list[Cl2Row]
    within: int
    met: bool
    command: str = ""
    wall_seconds: float | None = None
    cleaned_up: bool | None = None


class ProcessCpu(BaseModel):
    """Each process's CPU seconds over the arm (`experiment.measure.process_cpu`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    covers: str
    """What the processes are, in words."""
    pods: int
    cpu_seconds: dict[str, float]
    busy_cores: float
    """The machine's busy cores over the arm (every process on it, ours or not)."""
    wall_seconds: float

    def per_pod_ms(self) -> dict[str, float] | None:
        """Each process's CPU per pod (ms); None without pods."""
        if not self.pods:
            return None
        return {n: s / self.pods * 1000 for n, s in self.cpu_seconds.items()}


Number = int | float
"""A figure of the optimum's JSON, kept as it was written: an int stays an int (a sum of no
costs is 0, a count of GPUs may be one), so a document reads back to the same JSON."""


class OptimumPart(BaseModel):
    """Every part of the optimum's JSON, an arm's (`Optimum`) and a run's section
    (`oracle.optimum_report.Section`): no key it does not know, never changed once built, and
    written as it was read or built: a key with a default that its document lacked (one
    written before the key was) is not written, so an old document reads back to the same
    JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


class OptimumBound(OptimumPart):
    """One optimum of a figure (`oracle.solve.Bound` as JSON): the best placement found and
    the limit no placement passes (None where the solver found none: not finite)."""

    objective: str
    sense: Literal["max", "min"]
    value: Number | None
    bound: Number | None
    optimal: bool
    seconds: Number
    gap: Number
    """|bound - value| relative to the bound (0 when proven optimal)."""


class OptimumFigure(OptimumPart):
    """One metric of the arm against its optima (`oracle.arms.Figure.record`)."""

    metric: str
    unit: str
    sense: Literal["max", "min"]
    measured: Number | None
    batch: OptimumBound
    online: OptimumBound | None
    """None: no scheduler that places what fits ends with the arm's pods per phase."""
    share_of_online: Number | None
    share_of_batch: Number | None
    beats: str
    """Why the arm's figure is past a limit; "" when it is not."""


class Optimum(OptimumPart):
    """The arm against its placement optimum (`oracle.arms.arm_optimum`), as `optimum.json`
    holds it."""

    error: str | None
    """Why it was not computed; None when it was."""
    figures: list[OptimumFigure]
    seconds: Number | None = None
    """What the solves took (not written where the oracle failed outright)."""
    definitions: dict[str, str] | None = None
    """The optima's definitions (written with the figures, not with an error)."""


@dataclass(frozen=True)
class Validity:
    """Whether the arm ran as labelled (`experiment.measure.validity`)."""

    valid: bool
    reason: str
    unjudged_share: float | None = None
    """Requests the extender left to DRA unjudged, per filter call answered (None: not an
    extender arm, or no filter call)."""


VALID = Validity(True, "ok")


@dataclass(frozen=True)
class ArmRecord:
    """An arm's result and the engine's facts about it (immutable)."""

    result: ResultDoc
    """loadgen's document (or scheduler_perf's in its schema), as loadgen wrote it."""
    process_cpu: ProcessCpu | None = None
    """The CPU of every process on the arm's path; None where it was not measured."""
    fault: fault_plan.Outcome | None = None
    """What became of the arm's injected fault; None without one."""
    optimum: Optimum | None = None
    """The arm against its placement optimum (`oracle.arms.arm_optimum`); None where the arm
    asks no placement question or was not solved."""
    validity: Validity | None = None
    """None in a record read from a directory written before validity was kept."""
    clusterloader2: Cl2Section | None = None
    """A ClusterLoader2 arm's own figures and agreement rows; None for every other arm."""

    @property
    def source(self) -> str:
        """Who wrote the result in loadgen's schema when loadgen did not run the scenario
        (`scenario.source`: scheduler_perf, ClusterLoader2); "" for loadgen's own runs."""
        return str(self.result.scenario.get("source") or "")

    @property
    def in_process(self) -> bool:
        """Whether scheduler_perf ran the arm in-process (`experiment.sites.in_process`)."""
        return self.source == IN_PROCESS_SOURCE

    @functools.cached_property
    def scenario(self) -> scenarios.Scenario | None:
        """The scenario as run, parsed by loadgen's own model (pydantic's ValidationError
        when it no longer reads it); None for a result scheduler_perf wrote, which runs no
        loadgen scenario (or another harness's: `source`), or one that records none (a
        modelled result)."""
        if self.source or not self.result.scenario:
            return None
        return scenarios.Scenario.model_validate(self.result.scenario)

    def phase(self, name: str) -> PhaseDoc | None:
        """The result's phase `name`; None without one."""
        return next((p for p in self.result.phases if p.name == name), None)

    @property
    def optimum_figures(self) -> list[OptimumFigure]:
        """The optimum's figures (`oracle.arms.Figure.record`); none without one."""
        return list(self.optimum.figures) if self.optimum else []

    @property
    def optimum_error(self) -> str | None:
        """Why the optimum was not computed; None when it was, or not asked."""
        return self.optimum.error if self.optimum and self.optimum.error else None


class _Kept(BaseModel):
    """`arm.json`: the engine's fields of a record (loadgen's result stays in its own file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["ArmRecord"] = "ArmRecord"
    result: str = RESULT
    """The loadgen result the record is over, beside it."""
    process_cpu: ProcessCpu | None = None
    fault: fault_plan.Outcome | None = None
    optimum: Optimum | None = None
    validity: Validity | None = None
    clusterloader2: Cl2Section | None = None


def read_result(path: Path) -> ResultDoc:
    """A loadgen result file, parsed by loadgen's schema (OSError; ValueError, pydantic's
    ValidationError among them, when it is not of the schema)."""
    return document.load(path)


def build(
    result: ResultDoc | dict[str, Any] | str,
    *,
    process_cpu: ProcessCpu | None = None,
    fault: fault_plan.Outcome | None = None,
    optimum: Optimum | None = None,
    validity: Validity | None = None,
    clusterloader2: Cl2Section | None = None,
) -> ArmRecord:
    """The record of an arm whose loadgen result is `result` (a parsed document, or its JSON
    as a dict or text: validated against loadgen's schema, pydantic's ValidationError on a
    field missing or of the wrong type)."""
    if isinstance(result, str):
        result = ResultDoc.model_validate_json(result)
    elif not isinstance(result, ResultDoc):
        result = ResultDoc.model_validate(result)
    return ArmRecord(result, process_cpu, fault, optimum, validity, clusterloader2)


def write(record: ArmRecord, arm_dir: Path) -> Path:
    """Keep the record's own fields as `arm.json` in `arm_dir`, beside its `result.json`
    (which loadgen wrote and which stays as it is)."""
    kept = _Kept(
        process_cpu=record.process_cpu,
        fault=record.fault,
        optimum=record.optimum,
        validity=record.validity,
        clusterloader2=record.clusterloader2,
    )
    path = arm_dir / FILE
    files.write_atomic(path, kept.model_dump_json(indent=1) + "\n")
    return path


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return doc if isinstance(doc, dict) else None


def load(arm_dir: Path) -> ArmRecord:
    """The record kept in an arm's directory: `result.json` and `arm.json`, or for a
    directory written before records were kept, `result.json` with the `optimum.json` and
    `fault.json` beside it (the one reader of that older shape). OSError without a result;
    ValueError (pydantic's ValidationError among them) when a file is not of its schema."""
    result = read_result(arm_dir / RESULT)
    kept_doc = _json_file(arm_dir / FILE)
    if kept_doc is not None:
        kept = _Kept.model_validate(kept_doc)
        return ArmRecord(
            result, kept.process_cpu, kept.fault, kept.optimum, kept.validity, kept.clusterloader2
        )
    optimum = _json_file(arm_dir / OPTIMUM)
    fault = _json_file(arm_dir / FAULT)
    return ArmRecord(
        result,
        None,
        None if fault is None else fault_plan.Outcome.model_validate(fault),
        None if optimum is None else Optimum.model_validate(optimum),
    )


def modelled(partial: dict[str, Any], **engine: Any) -> ArmRecord:
    """The record of a result given in part, every field it leaves out zero, empty or None
    (`engine`: the record's own fields): for benches and tests that model a run rather than
    run one. The fields given are validated as loadgen's schema reads them."""
    return build(_complete(ResultDoc, partial), **engine)


def _complete(model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    out = dict(given)
    for name, f in model.model_fields.items():
        if name in given:
            out[name] = _filled(f.annotation, given[name])
        elif f.is_required():
            out[name] = _zero(f.annotation)
    return out


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in (annotation, *typing.get_args(annotation)) if _is_model(a)]


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _filled(annotation: Any, value: Any) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return [_filled(args[0], v) for v in value] if isinstance(value, list) else value
    if origin is dict:
        return (
            {k: _filled(args[1], v) for k, v in value.items()} if isinstance(value, dict) else value
        )
    if isinstance(value, dict) and (models := _models(annotation)):
        return _complete(models[0], value)
    return value


def _zero(annotation: Any) -> Any:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in (int, float):
        return 0
    if annotation is str:
        return ""
    if annotation is bool:
        return False
    if origin is Literal:
        return args[0]
    if origin in (list, tuple):
        return []
    if origin is dict:
        return {}
    if type(None) in args:
        return None
    if _is_model(annotation):
        return _complete(annotation, {})
    raise TypeError(f"no zero for {annotation!r}")
