"""Kept scheduler_perf baselines: upstream's DRA workloads that have no `threshold:` yet, run
in-process here (`testbed perf run`), and the threshold each would get, in scheduler_perf's own
form, kept in docs/results/baselines/ and shown on docs/results/scheduler-perf.md.

A threshold is the minimum SchedulingThroughput Average a run must beat (scheduler_perf fails
the workload below it). Upstream sets one from a workload's history, pessimistically, so that
ordinary variation never fails CI: its README takes the minimum Average of the last 250 CI runs
(kubernetes/kubernetes#136276), and its DRA file's older values sit at about 0.8 of the typical
Average ("56 # typically above 70", "64 # typically above 81"). With a few runs here, the
minimum is not yet a history's, so `threshold` takes the lower of the two: 0.8 of the median
Average and the lowest Average, rounded down to two significant digits. A document whose
thresholds are not its runs' own is refused on load.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

import pydantic

from publish import kept
from schedperf import workloads

MARGIN: Final = 0.8
"""Of the median Average: upstream's DRA thresholds against their "typically above"."""
RULE: Final = (
    "the lower of 0.8 x the median SchedulingThroughput Average and the lowest Average, "
    "rounded down to two significant digits"
)


def threshold(averages: Iterable[float]) -> float:
    """The threshold the runs' Averages give (see the module's docstring)."""
    values = list(averages)
    v = min(MARGIN * statistics.median(values), min(values))
    if v <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(v)) - 1)
    return round(float(math.floor(v / step + 1e-9) * step), 6)


class Run(kept.Document):
    average: float
    """SchedulingThroughput Average, pods/s."""
    perc50: float
    load_1m: float
    seconds: float


class Workload(kept.Document):
    name: str
    """<test case>/<workload>, as in upstream's file."""
    file: str
    """Upstream's performance-config.yaml, relative to test/integration/scheduler_perf."""
    topic: str
    """The key of the file's `threshold:` map (its benchmark function's topic)."""
    runs: list[Run] = pydantic.Field(min_length=1)
    threshold: float

    @pydantic.model_validator(mode="after")
    def _threshold_is_the_runs(self) -> Workload:
        if self.threshold != threshold(r.average for r in self.runs):
            raise ValueError(f"{self.name}: threshold is not its runs' ({RULE})")
        return self


class Baseline(kept.Provenance):
    schema_version: Literal[1]
    kind: Literal["SchedulerPerfBaseline"]
    release: str
    rule: str
    """How each threshold comes from its runs (`RULE`)."""
    workloads: list[Workload]
    not_measured: dict[str, str] = {}
    """Workloads run or tried without a throughput sample: name -> what happened."""

    @pydantic.model_validator(mode="after")
    def _rule_is_ours(self) -> Baseline:
        if self.rule != RULE:
            raise ValueError(f"rule: not the one the thresholds are derived by ({RULE})")
        return self


def _topic(result: dict[str, Any]) -> str:
    for arg in result["settings"]["command"]:
        if arg.startswith("-topic="):
            return str(arg.removeprefix("-topic="))
    raise kept.KeptError(f"{result.get('run_id')}: its command names no -topic")


_FILL: Final = ("empty", "half", "full")


def _order(name: str) -> tuple[str, int, int, str]:
    """Upstream's order: by test case, then size, then how full (`Case/half_500nodes`)."""
    case, _, workload = name.partition("/")
    fill, _, size = workload.partition("_")
    nodes = int(size.removesuffix("nodes")) if size.removesuffix("nodes").isdigit() else 0
    return case, nodes, _FILL.index(fill) if fill in _FILL else len(_FILL), workload


def keep(
    results: list[dict[str, Any]], *, not_measured: dict[str, str] | None = None, **meta: str
) -> Baseline:
    """The kept baseline of `testbed perf run` result.json files (one per run, any number of
    workloads, one release and GOMAXPROCS); `meta`: id, command, commit, date, machine,
    source. KeptError (one line) otherwise."""
    files = {f.topic: f.path for f in workloads.UPSTREAM_FILES}
    found: dict[str, tuple[str, list[Run]]] = {}
    releases, procs = set(), set()
    try:
        for r in results:
            if r.get("scenario", {}).get("source") != "scheduler_perf":
                raise kept.KeptError(f"{r.get('run_id')}: not a `testbed perf run` result")
            s = r["settings"]
            releases.add(str(s["kubernetes"]).removeprefix("v"))
            procs.add(int(s["gomaxprocs"]))
            t = r["throughput"]
            run = Run(
                average=round(t["Average"], 3),
                perc50=round(t["Perc50"], 3),
                load_1m=s["load_average_1m_5m_15m"][0],
                seconds=round(r["duration_seconds"], 1),
            )
            found.setdefault(r["scenario"]["workload"], (_topic(r), []))[1].append(run)
    except (KeyError, TypeError) as e:
        raise kept.KeptError(f"not a `testbed perf run` result ({e!r} missing)") from None
    if len(releases) != 1 or len(procs) != 1:
        raise kept.KeptError(
            f"one release and GOMAXPROCS per baseline: got {sorted(releases)}, {sorted(procs)}"
        )
    unknown = sorted({topic for topic, _ in found.values()} - set(files))
    if unknown:
        raise kept.KeptError(f"no upstream file has topic {', '.join(unknown)}")
    try:
        return Baseline(
            schema_version=1,
            kind="SchedulerPerfBaseline",
            release=releases.pop(),
            gomaxprocs=procs.pop(),
            rule=RULE,
            not_measured=not_measured or {},
            workloads=[
                Workload(
                    name=name,
                    file=files[topic],
                    topic=topic,
                    runs=runs,
                    threshold=threshold(x.average for x in runs),
                )
                for name, (topic, runs) in sorted(found.items(), key=lambda kv: _order(kv[0]))
            ],
            **meta,
        )
    except pydantic.ValidationError as e:
        raise kept.KeptError(kept.one_line(e)) from None


def load(path: Path) -> Baseline:
    """A kept baseline; KeptError (one line) if unreadable, malformed, too large or stale."""
    return kept.load_as(path, Baseline)


def load_all(directory: Path) -> list[Baseline]:
    return sorted((load(p) for p in directory.glob("*.json")), key=lambda b: (b.date, b.id))


def dump(b: Baseline) -> str:
    return json.dumps(b.model_dump(mode="json"), indent=1) + "\n"


def yaml_snippet(w: Workload) -> str:
    """The workload's `threshold:` as upstream's file writes it, its evidence in the comment."""
    median = statistics.median(r.average for r in w.runs)
    return (
        f"    threshold:\n      {w.topic}: {w.threshold:g} "
        f"# median {median:.3g} over {len(w.runs)} run(s)"
    )
