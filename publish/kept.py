"""Kept result documents: the compact, committed record behind each published figure.

One document per published run: what ran (command), on what (release, commit, date, machine,
load), how often (repeats) and, per figure, each arm's value in every repeat, nothing more
(no pod lists: a document is a few kilobytes). Every published number is derived from those
values here, with the engine's paired method (`intervals`), so a page and a test derive the
same figures from the same data; `keep` makes a document from a run's result file (an
experiment's, or a wing's rows of A and B arms).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import pydantic

from experiment.measure import figures, intervals
from experiment.oracle import optimum_report
from experiment.plan import design

SCHEMA_VERSION = 1
QUESTIONS: dict[str, str] = {
    "startup": "How fast do pods start at 1,000-5,000 nodes?",
    "cost": "What do DRA and a scheduler extender cost?",
    "placement": (
        "How much better does topology-aware placement pack GPUs and align them with NICs?"
    ),
}
"""The three questions the README asks, in the order the results page answers them."""
Question = Literal["startup", "cost", "placement"]
MAX_DOCUMENT_BYTES = 16_000
"""A kept document's size budget: per-repeat figures only, never raw pod lists."""


class KeptError(ValueError):
    """A kept document, or a result to keep, that cannot be used: one line naming why."""


class Document(pydantic.BaseModel):
    """Every kept document and its parts: no field it does not know, never changed once read."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Provenance(Document):
    """What ran, where and from what: the fields a kept scheduler_perf document (a cost curve,
    a baseline) starts with."""

    id: str
    command: str
    commit: str
    date: str
    machine: str
    gomaxprocs: int
    source: str
    """Where the full result files are (or were) kept."""


class Arm(Document):
    label: str
    values: list[float | None]
    """One value per repeat, in repeat order (the pairs are by position); null where the
    repeat has none. A missing, infinite or impossible value (a cost of 0 or less) drops its
    pair from every figure, counted (`Figure.dropped`)."""


class Target(Document):
    goal: str
    threshold: float
    """For the A/B ratio."""
    at_least: bool


class Row(Document):
    comparison: str
    metric: str
    unit: str
    a: Arm
    b: Arm
    headline: bool = False
    """Shown on the results page (every row is kept and derivable)."""
    target: Target | None = None

    @property
    def name(self) -> str:
        return f"{self.comparison}: {self.metric}"


class Sequential(Document):
    """A sequential run's design: its most pairs, and the pairs of the closing look its budget
    or an interrupt forced (None: it stopped at a planned look or ran them all)."""

    max_pairs: int = pydantic.Field(ge=1)
    closed_at: int | None = None


class Kept(Document):
    schema_version: Literal[1]
    id: str
    title: str
    question: Question
    command: str
    release: str
    commit: str
    date: str
    machine: str
    load: str
    repeats: int = pydantic.Field(ge=1)
    source: str
    """Where the full result files are (or were) kept."""
    rows: list[Row]
    sequential: Sequential | None = None
    """A sequential run's design (None: fixed, every repeat run, judged at ALPHA)."""

    @property
    def plan(self) -> design.Design:
        """The design its verdicts are taken in: a sequential run's at the look it stopped at."""
        if self.sequential is None:
            return design.Design(self.repeats)
        return design.Design(self.sequential.max_pairs, True, closed_at=self.sequential.closed_at)

    @pydantic.model_validator(mode="after")
    def _paired(self) -> Kept:
        for row in self.rows:
            for arm in (row.a, row.b):
                if len(arm.values) != self.repeats:
                    raise ValueError(
                        f"{row.name}: {arm.label} has {len(arm.values)} values for "
                        f"{self.repeats} repeats"
                    )
        return self


@dataclass(frozen=True)
class Figure:
    """A row's published figures, derived from its values."""

    row: Row
    a_median: float
    a_range: tuple[float, float]
    b_median: float
    b_range: tuple[float, float]
    ratio: intervals.Interval | None
    verdict: str | None
    """Against the row's target (None: it has none)."""
    dropped: tuple[str, ...] = ()
    """One line per pair left out for an impossible value, naming the arm and the figure."""


def derive(row: Row, plan: design.Design | None = None) -> Figure:
    """The row's figures from the pairs it can judge (`intervals.split`): medians, ranges,
    ratio and verdict alike; the verdict at the level `plan` (its document's, `Kept.plan`)
    gives the pairs judged: a fixed design's at ALPHA (the default), a sequential one's at
    the look they reached, none from fewer pairs than its first look's."""
    a, b = ([math.nan if v is None else v for v in arm.values] for arm in (row.a, row.b))
    pairs, refused = intervals.split(a, b, figures.kind(row.metric, row.unit))
    ratio = intervals.ratio_interval(a, b, figures.kind(row.metric, row.unit))
    verdict = None
    if row.target is not None:
        level = (plan or design.Design(len(a))).level(ratio.runs if ratio is not None else 0)
        verdict = intervals.verdict(
            ratio, row.target.threshold, at_least=row.target.at_least, level=level
        )
    labels = {"A": row.a.label, "B": row.b.label}
    a_kept, b_kept = [x for x, _ in pairs], [y for _, y in pairs]
    return Figure(
        row,
        intervals.median(a_kept),
        intervals.min_max(a_kept),
        intervals.median(b_kept),
        intervals.min_max(b_kept),
        ratio,
        verdict,
        tuple(r.line(labels[r.arm], row.name) for r in refused),
    )


def number(v: float) -> str:
    """A figure as the page prints it: three significant digits, thousands separated."""
    if v != v:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def one_line(e: pydantic.ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "document"
    return f"{where}: {err['msg']}"


_Document = TypeVar("_Document", bound=Document)


def load_as(path: Path, model: type[_Document]) -> _Document:
    """A kept document of any kind (`model` validates it); KeptError (one line) if it is
    unreadable, malformed or too large."""
    try:
        text = path.read_text()
    except OSError as e:
        raise KeptError(f"{path}: {e.strerror}") from None
    if len(text.encode()) > MAX_DOCUMENT_BYTES:
        raise KeptError(f"{path}: {len(text.encode())} bytes, over the {MAX_DOCUMENT_BYTES} budget")
    try:
        return model.model_validate_json(text)
    except pydantic.ValidationError as e:
        raise KeptError(f"{path}: {one_line(e)}") from None


def load(path: Path) -> Kept:
    """A kept result document (`load_as`)."""
    return load_as(path, Kept)


def load_all(directory: Path) -> list[Kept]:
    """Every kept document in `directory`, oldest first (then by id)."""
    docs = [load(p) for p in sorted(directory.glob("*.json"))]
    return sorted(docs, key=lambda d: (d.date, d.id))


def dump(doc: Kept) -> str:
    return json.dumps(doc.model_dump(mode="json"), indent=1) + "\n"


# -- making a document from a result file --------------------------------------------------------


def _paired_rows(result: dict[str, Any]) -> list[tuple[str, str, str, Arm, Arm]]:
    """A wing's rows: each an A and a B arm, their values paired by repeat."""
    out = []
    for c in result.get("comparisons") or []:
        a = Arm(label=c["a"]["variant"], values=c["a"]["values"])
        b = Arm(label=c["b"]["variant"], values=c["b"]["values"])
        out.append((c["comparison"], c["metric"], c["unit"], a, b))
    return out


def _experiment_rows(result: dict[str, Any]) -> list[tuple[str, str, str, Arm, Arm]]:
    """Each variant against the baseline over the repeats both measured (an interrupted
    run's last repeat may have one arm only). A metric one side does not define (an
    in-process harness has no scheduler of its own) pairs nothing and is no row."""
    out = []
    for c in result.get("comparisons") or []:
        base = c["variants"][c["baseline"]]
        for name, variant in c["variants"].items():
            if name != c["baseline"] and variant["values"] and base["values"]:
                a, b = intervals.paired(
                    variant["values"], variant["repeats"], base["values"], base["repeats"]
                )
                arms = Arm(label=name, values=a), Arm(label=c["baseline"], values=b)
                out.append((c["workload"], c["metric"], c["unit"], *arms))
    return out


OPTIMUM_KIND = "OptimumSection"
"""A run's `optimum` section as `bench/oracle_scale.py --run --output` writes it."""
OPTIMUM_LABEL = "online optimum"


def _optimum_rows(result: dict[str, Any]) -> list[tuple[str, str, str, Arm, Arm]]:
    """Per arm and metric, its share of the online optimum in every repeat against the
    optimum's own 1: the A/B ratio is the share, paired by repeat. A row missing a repeat,
    or with a repeat whose share was not computed (a gang not whole), would not pair by
    position, so it is left out."""
    try:
        optimum = optimum_report.read(result)
    except pydantic.ValidationError as e:
        raise KeptError(f"optimum: {one_line(e)}") from None
    out = []
    for r in optimum.rows:
        shares = r.shares_of_online
        if len(shares) != result.get("repeat") or any(v is None for v in shares):
            continue
        a = Arm(label=r.arm, values=shares)
        b = Arm(label=OPTIMUM_LABEL, values=[1.0] * len(shares))
        metric = f"{r.metric}, share of the online optimum"
        out.append((r.comparison, metric, "share", a, b))
    return out


def keep(
    result: dict[str, Any],
    *,
    headline: set[str],
    targets: dict[str, Target],
    **meta: Any,
) -> Kept:
    """The kept document of a wing's result (rows of A and B arms) or an experiment's
    (`experiment.json`) result, or of a run's placement against its optimum (`OPTIMUM_KIND`);
    `headline` and `targets` name rows as "comparison: metric", or "comparison: metric [A]" for
    the row whose A arm is labelled A. Refuses a result with invalid arms (its repeats would no
    longer pair by position) or names it does not have."""
    if result.get("invalid_arms"):
        raise KeptError(f"the result has invalid arms: {', '.join(result['invalid_arms'])}")
    kind = result.get("kind")
    comparisons = result.get("comparisons")
    if kind == OPTIMUM_KIND:
        found = _optimum_rows(result)
    elif isinstance(result.get("spec"), dict) and "releases" in result:
        found = _experiment_rows(result)
    elif isinstance(comparisons, list) and all("a" in c and "b" in c for c in comparisons):
        found = _paired_rows(result)
    else:
        raise KeptError(f"not an experiment result (kind {kind!r})")
    rows = []
    for comparison, metric, unit, a, b in found:
        names = (f"{comparison}: {metric}", f"{comparison}: {metric} [{a.label}]")
        target = targets.get(names[1]) or targets.get(names[0])
        rows.append(
            Row(
                comparison=comparison,
                metric=metric,
                unit=unit,
                a=a,
                b=b,
                headline=any(n in headline for n in names),
                target=target,
            )
        )
    known = {r.name for r in rows} | {f"{r.name} [{r.a.label}]" for r in rows}
    missing = (headline | set(targets)) - known
    if missing:
        raise KeptError(f"no such row: {', '.join(sorted(missing))}")
    repeats = int(result["repeat"])
    sequential = None
    if "repeats_completed" in result:
        # A sequential run: `repeat` is its most pairs, it stopped after those it completed.
        sequential = Sequential(max_pairs=repeats, closed_at=result.get("closed_at"))
        repeats = int(result["repeats_completed"])
    if result.get("interrupted") and rows:
        # Ctrl-C keeps the measured pairs: the repeats are those, not the ones begun.
        repeats = len(rows[0].a.values)
    try:
        return Kept(
            schema_version=SCHEMA_VERSION,
            repeats=repeats,
            rows=rows,
            sequential=sequential,
            **meta,
        )
    except pydantic.ValidationError as e:
        raise KeptError(one_line(e)) from None
