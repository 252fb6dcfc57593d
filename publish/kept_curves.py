"""Kept cost curves: the compact record of one release's cost curve (a `bench/schedperf_curves.py`
curve.json: scheduler_perf's DRA workload sized to each fleet, several runs per size), kept in
docs/results/curves/ and shown on docs/results/scheduler-perf.md.

Per run only what the page shows (nodes, repeat, CPU per pod, throughput, the load at its
start) and, per figure, its least-squares growth per node of the fleet with the slope's 95 %
interval (`schedperf.curves.fit_line`). A document whose growth is not its runs' own is refused
on load, so a page made from it cannot quote a stale fit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Final, Literal

import pydantic

from publish import kept
from schedperf import curves

KIND: Final = "SchedulerCostCurve"
"""What `bench/schedperf_curves.py` writes as curve.json."""
FIGURES: Final = {
    "cpu_ms_per_pod": ("CPU per pod, the benchmark's process tree", "ms"),
    "throughput": ("SchedulingThroughput Average", "pods/s"),
}
"""The figures a kept curve carries: name -> (what it is, unit)."""


class Run(kept.Document):
    nodes: int = pydantic.Field(ge=1)
    repeat: int = pydantic.Field(ge=1)
    cpu_ms_per_pod: float
    throughput: float | None
    """None: the run took no throughput sample."""
    load_1m: float
    """The machine's 1-minute load average at the run's start."""


class Growth(kept.Document):
    """A figure's least-squares line against the fleet's nodes over every run."""

    per_node: float
    low: float
    high: float
    """The slope's 95 % interval."""
    intercept: float
    r2: float
    runs: int


class Curve(kept.Provenance):
    schema_version: Literal[1]
    kind: Literal["CostCurve"]
    release: str
    """e.g. 1.37.2."""
    workload: str
    pods: int = pydantic.Field(ge=1)
    """Measured pods per run."""
    devices_per_node: int
    runs: list[Run]
    growth: dict[str, Growth]

    @pydantic.model_validator(mode="after")
    def _growth_is_the_runs(self) -> Curve:
        if self.growth != fitted(self.runs):
            raise ValueError("growth is not the runs' least squares: keep the curve again")
        return self


def fitted(runs: list[Run]) -> dict[str, Growth]:
    """Each figure's growth per node over the runs that have it (left out below 3 runs at
    2 sizes), rounded as kept."""
    out = {}
    for figure in FIGURES:
        pts = [(r.nodes, getattr(r, figure)) for r in runs if getattr(r, figure) is not None]
        try:
            line = curves.fit_line([float(n) for n, _ in pts], [float(y) for _, y in pts])
        except ValueError:
            continue
        out[figure] = Growth(
            per_node=_round(line.slope),
            low=_round(line.slope_low),
            high=_round(line.slope_high),
            intercept=_round(line.intercept),
            r2=round(line.r2, 4),
            runs=line.n,
        )
    return out


def _round(v: float) -> float:
    """Six significant digits: enough for any figure the page prints, stable as text."""
    return float(f"{v:.6g}") if v and math.isfinite(v) else v


def by_size(c: Curve, figure: str) -> dict[int, list[float]]:
    """The figure's values at each size, in run order, sizes ascending."""
    out: dict[int, list[float]] = {}
    for r in sorted(c.runs, key=lambda r: (r.nodes, r.repeat)):
        v = getattr(r, figure)
        if v is not None:
            out.setdefault(r.nodes, []).append(float(v))
    return out


def keep(curve: dict[str, Any], **meta: str) -> Curve:
    """The kept document of a curve.json (`meta`: id, commit, date, machine, source);
    KeptError (one line) for anything else, or a curve without runs."""
    if curve.get("kind") != KIND:
        raise kept.KeptError(f"not a cost curve (kind {curve.get('kind')!r}, expected {KIND})")
    try:
        runs = [
            Run(**{k: p[k] for k in ("nodes", "repeat", "cpu_ms_per_pod", "throughput", "load_1m")})
            for p in curve["points"]
        ]
        if not runs:
            raise kept.KeptError("the curve has no runs")
        return Curve(
            schema_version=1,
            kind="CostCurve",
            release=str(curve["kubernetes"]).removeprefix("v"),
            workload=curve["workload"],
            pods=curve["pods"],
            devices_per_node=curve["devices_per_node"],
            command=curve["command"],
            gomaxprocs=curve["gomaxprocs"],
            runs=runs,
            growth=fitted(runs),
            **meta,
        )
    except KeyError as e:
        raise kept.KeptError(f"the curve has no {e.args[0]!r}") from None
    except pydantic.ValidationError as e:
        raise kept.KeptError(kept.one_line(e)) from None


def load(path: Path) -> Curve:
    """A kept curve; KeptError (one line) if unreadable, malformed, too large or stale."""
    return kept.load_as(path, Curve)


def load_all(directory: Path) -> list[Curve]:
    """Every kept curve in `directory`, oldest release first (none if it does not exist)."""
    found = [load(p) for p in sorted(directory.glob("*.json"))]
    return sorted(found, key=lambda c: [int(x) for x in c.release.split(".") if x.isdigit()])


def dump(c: Curve) -> str:
    return json.dumps(c.model_dump(mode="json"), indent=1) + "\n"
