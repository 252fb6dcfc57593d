"""`testbed report DIR`: a results directory's HTML pages rebuilt from the JSON it keeps,
with the page writers the runs use (an old run gets today's pages; its JSON is left as is).

What a directory may hold: loadgen results (`result.json`, in it or one level down, or flat
`<name>.json` files as bench/results keeps them), and an experiment's `experiment.json` or a
wing's own result document over its arms' results. A wing's page is the wing's: its result
kinds are handed in (`experiment.plan.wing.ResultKind`), as the runner is handed its reporter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiment.judge import targets
from experiment.judge.comparison import ReleaseRow, VariantRow
from experiment.measure import arm_record, process_cpu
from experiment.measure.arms import Arm
from experiment.measure.figures import Figure
from experiment.plan.wing import PageWriter, ResultKind
from experiment.report import variants_report
from experiment.sites import clusterloader2
from experiment.spec.spec import Experiment
from loadgen.report import document, html
from testbed import charts

LOADGEN_KIND = "LoadgenResult"
EXPERIMENT_KIND = "ExperimentResult"
LATENCY_SUFFIX = "-latency"


class NoResults(ValueError):
    """The directory holds no result this command knows."""


@dataclass
class Outcome:
    pages: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """One line per document that could not be read (schema, JSON), naming the file."""


def _kind(path: Path) -> str | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc.get("kind") if isinstance(doc, dict) else None


def loadgen_results(directory: Path) -> list[tuple[Path, Path]]:
    """(result file, page to write) for every loadgen result in `directory`."""
    found = []
    for path in sorted([directory / "result.json", *directory.glob("*/result.json")]):
        if path.is_file():
            found.append((path, path.with_name("report.html")))
    for path in sorted(directory.glob("*.json")):
        if path.name != "result.json" and _kind(path) == LOADGEN_KIND:
            found.append((path, path.with_suffix(".html")))
    return found


def arms_from_names(names: Iterable[str], pairs: Iterable[tuple[str, str]]) -> list[Arm]:
    """The arms a kept document names (`<comparison>-<variant>-<repeat>[-latency]`), in its
    order, given the (comparison, variant) pairs its rows name; names that match none are
    left out (pure). Longest prefix first: "dra-device-plugin-0" is dra/device-plugin."""
    prefixes = sorted(pairs, key=lambda p: -len(f"{p[0]}-{p[1]}"))
    arms = []
    for name in names:
        base = name.removesuffix(LATENCY_SUFFIX)
        for comparison, variant in prefixes:
            head, _, repeat = base.rpartition("-")
            if head == f"{comparison}-{variant}" and repeat.isdigit():
                arms.append(
                    Arm(
                        comparison=comparison,
                        variant=variant,
                        scenario="",
                        repeat=int(repeat),
                        latency_of="kept" if name != base else "",
                    )
                )
                break
    return arms


def figure(values: Iterable[float | None], repeats: Iterable[int] | None = None) -> Figure:
    """A kept figure (null = no value) as the page writers take it; without the repeats
    (experiment.json written before it kept them) its values pair with the other side's by
    position."""
    kept = [math.nan if v is None else float(v) for v in values]
    known = list(repeats or [])
    return Figure(kept, known if len(known) == len(kept) else list(range(len(kept))))


def experiment_page(directory: Path, doc: Mapping[str, Any]) -> Path:
    """`index.html` of an experiment file's run, from its `experiment.json`."""
    exp = Experiment.model_validate(doc["spec"])
    rows = [
        VariantRow(
            workload=c["workload"],
            metric=c["metric"],
            unit=c["unit"],
            figures={v: figure(f["values"], f.get("repeats")) for v, f in c["variants"].items()},
            baseline=c["baseline"],
            undefined=tuple(v for v, f in c["variants"].items() if f.get("defined") is False),
        )
        for c in doc.get("comparisons") or []
    ]
    releases = [
        ReleaseRow(
            workload=r["workload"],
            metric=r["metric"],
            unit=r["unit"],
            previous=r["previous"]["variant"],
            current=r["current"]["variant"],
            previous_value=figure(r["previous"]["values"], r["previous"].get("repeats")),
            current_value=figure(r["current"]["values"], r["current"].get("repeats")),
        )
        for r in doc.get("releases") or []
    ]
    pairs = {(row.workload, v) for row in rows for v in row.figures}
    arms = arms_from_names(doc.get("arms") or {}, pairs)
    more = variants_report.Extras(
        targets.judge(exp.targets, rows),
        process_cpu.from_json(doc.get("process_cpu") or []),
        {
            arm: arm_record.Cl2Section.model_validate(s)
            for arm, s in (doc.get(clusterloader2.KEY) or {}).items()
        },
    )
    return variants_report.write(
        directory, exp, dict(doc), rows, releases, arms, keep_json=True, more=more
    )


def rebuild(directory: Path, kinds: Sequence[ResultKind] = ()) -> Outcome:
    """Every page of `directory`: its loadgen results' first (the index links them), then
    its experiment's index or that of a wing's result (`kinds`: the wings' registered
    ones). Raises NoResults if it holds none."""
    results = loadgen_results(directory)
    tops = [*kinds, ResultKind(EXPERIMENT_KIND, "experiment.json", experiment_page)]
    present: list[tuple[Path, PageWriter]] = [
        (directory / k.file, k.page)
        for k in tops
        if (directory / k.file).is_file() and _kind(directory / k.file) == k.kind
    ]
    if not results and not present:
        files = ", ".join(["result.json", *(k.file for k in tops)])
        raise NoResults(f"{directory} holds no results (no {files} or loadgen result files)")
    out = Outcome()
    charts.shared_plotly(directory, directory)  # one copy, before the pages that share it
    for source, page in results:
        try:
            doc = document.load(source)
        except (OSError, ValueError) as e:  # pydantic's ValidationError is a ValueError
            out.failed.append(f"{source}: not a loadgen result this version reads ({_first(e)})")
            continue
        page.write_text(html.render(doc, charts.shared_plotly(page.parent)))
        out.pages.append(page)
    for source, writer in present:
        try:
            out.pages.append(writer(directory, json.loads(source.read_text())))
        except (KeyError, TypeError, ValueError) as e:
            out.failed.append(f"{source}: not a document this version reads ({_first(e)})")
    return out


def _first(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0]
