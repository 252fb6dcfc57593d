"""docs/results/scheduler-perf.md and its chart: the kept cost curves (`kept_curves`), the
kept runs of loadgen against scheduler_perf (`kept` documents in AGAINST) and baselines
(`kept_baselines`) as a page, written and checked by `testbed results` beside
BENCHMARKS.md's front page, which links to it in one line (pure: text in, text out).
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Sequence
from typing import Final

from publish import kept, kept_baselines, kept_curves
from testbed import charts

PAGE: Final = "scheduler-perf.md"
CHART: Final = "curves.svg"
"""Both beside the kept documents' directories (docs/results/)."""
AGAINST: Final = "against-schedperf"
"""The directory (under docs/results/) of the kept runs of
examples/experiments/loadgen-vs-schedperf.yaml, shown here rather than on the front page."""
_AGAINST_INTRO: Final = (
    "The same workload two ways, alternated and paired repeat by repeat "
    "(`examples/experiments/loadgen-vs-schedperf.yaml`): upstream's scheduler_perf in-process "
    "against the testbed's end-to-end path (`fleet apply`, `loadgen run pods`, a plain second "
    "kube-scheduler on the kwok cluster). Whole-path CPU per pod is every process each way "
    "runs: the benchmark's process tree, or the cluster's components, the scheduler, the "
    "extender and loadgen."
)
WIDTH: Final = 100
MORE_RUNS: Final = "docs/results/more-curve-runs.sh RELEASE SIZES RUNS"
FRONT_LINK: Final = f"Cost curves and DRA baselines: [docs/results/{PAGE}](docs/results/{PAGE})."
_CURVES_INTRO: Final = (
    "scheduler_perf's {workload} (one ResourceSlice per node, one-device claims from a "
    "template, no claims allocated first), {pods} measured pods per run at each fleet size, "
    "in-process (`bench/schedperf_curves.py`). CPU per pod is the benchmark's "
    "whole process tree (scheduler, API server, etcd) over the whole run, start-up and the "
    "fleet's creation included, so an upper bound that grows with the fleet whatever the "
    "pods do; 1.35's and 1.36's workload idles about 90 s after its last pod and 1.37's does "
    "not, so it compares 1.35 with 1.36, not either with 1.37. Throughput is scheduler_perf's "
    "SchedulingThroughput Average. Each cell is the median of its runs (min-max); growth is "
    "the least-squares slope over every run with its 95 % interval. Runs per point: {runs}; "
    "three at every point is the target, and until then a point is an observation. More "
    "runs: `{more}` (e.g. `1.37 2000,5000 2`) appends them to the kept curve file, keeps it "
    "again and rewrites this page."
)


def _cell(values: list[float]) -> str:
    m = kept.number(statistics.median(values))
    if len(values) == 1:
        return m
    return f"{m} ({kept.number(min(values))}-{kept.number(max(values))})"


def _runs_per_point(curves: Sequence[kept_curves.Curve]) -> str:
    said = []
    for c in curves:
        counts = {n: len(v) for n, v in kept_curves.by_size(c, "cpu_ms_per_pod").items()}
        enough = [f"{n:,}" for n, k in counts.items() if k >= 3]
        where = f"3 or more at {', '.join(enough)} nodes" if enough else "none with 3"
        said.append(f"{c.release} {min(counts.values())}-{max(counts.values())} ({where})")
    return "; ".join(said)


def growth_line(c: kept_curves.Curve, figure: str) -> str:
    """`- CPU per pod grows 90.4 ms per 1,000 nodes [79.5, 101] (8 runs, r² 0.986).`"""
    name, unit = kept_curves.FIGURES[figure]
    g = c.growth.get(figure)
    if g is None:
        return f"- {name}: too few runs for a line."
    k = 1000
    return (
        f"- {name}: {kept.number(g.per_node * k)} {unit} per 1,000 nodes "
        f"[{kept.number(g.low * k)}, {kept.number(g.high * k)}] ({g.runs} runs, r² {g.r2:.3g})."
    )


def _curve(c: kept_curves.Curve) -> list[str]:
    loads = [r.load_1m for r in c.runs]
    cpu = kept_curves.by_size(c, "cpu_ms_per_pod")
    tput = kept_curves.by_size(c, "throughput")
    load = {n: [r.load_1m for r in c.runs if r.nodes == n] for n in cpu}
    lines = [
        f"### Kubernetes {c.release}",
        "",
        *textwrap.wrap(
            f"{c.date}, {c.commit}; {c.machine}, GOMAXPROCS {c.gomaxprocs}; load average "
            f"(1 min) {kept.number(min(loads))}-{kept.number(max(loads))} at the runs' starts. "
            f"Data: `docs/results/curves/{c.id}.json` "
            f"(every run's figures: `{c.source}`).",
            WIDTH,
            break_on_hyphens=False,
        ),
        "",
        "| nodes | runs | load (1 min) | CPU per pod (ms) | throughput (pods/s) |",
        "|---|---|---|---|---|",
    ]
    for n, values in cpu.items():
        t = _cell(tput[n]) if n in tput else "-"
        lines.append(
            f"| {n:,} | {len(values)} | {', '.join(kept.number(v) for v in load[n])} "
            f"| {_cell(values)} | {t} |"
        )
    lines += ["", *(growth_line(c, f) for f in kept_curves.FIGURES), ""]
    return lines


def chart(curves: Sequence[kept_curves.Curve]) -> str:
    """curves.svg: each figure against the nodes, a line per release through its medians,
    every run a circle."""
    panels = []
    for figure, (name, unit) in kept_curves.FIGURES.items():
        lines, dots = [], []
        for c in curves:
            sizes = kept_curves.by_size(c, figure)
            medians = [statistics.median(v) for v in sizes.values()]
            lines.append(charts.Series(c.release, list(sizes), medians))
            pts = [(n, v) for n, vs in sizes.items() for v in vs]
            dots.append(charts.Series(c.release, [n for n, _ in pts], [v for _, v in pts]))
        panels.append(charts.Panel(name, unit, lines, dots))
    return charts.svg_panels(panels, x_title="nodes (log scale)")


def _baseline(b: kept_baselines.Baseline) -> list[str]:
    lines = [
        f"### Thresholds for Kubernetes {b.release}",
        "",
        *textwrap.wrap(
            f"{b.date}, {b.commit}; {b.machine}, GOMAXPROCS {b.gomaxprocs}. Data: "
            f"`docs/results/baselines/{b.id}.json` (full result files: {b.source}).",
            WIDTH,
            break_on_hyphens=False,
        ),
        "",
        f"    {b.command}",
        "",
        "| workload | runs | load (1 min) | Average (pods/s) | Perc50 (pods/s) | threshold |",
        "|---|---|---|---|---|---|",
    ]
    for w in b.workloads:
        lines.append(
            f"| {w.name} | {len(w.runs)} | "
            f"{', '.join(kept.number(r.load_1m) for r in w.runs)} | "
            f"{_cell([r.average for r in w.runs])} | {_cell([r.perc50 for r in w.runs])} | "
            f"{w.threshold:g} |"
        )
    lines.append("")
    if b.not_measured:
        lines += ["No threshold:", ""]
        for name, why in b.not_measured.items():
            lines += textwrap.wrap(
                f"{name}: {why}", WIDTH, initial_indent="- ", subsequent_indent="  "
            )
        lines.append("")
    for f in dict.fromkeys(w.file for w in b.workloads):
        lines += [f"In `{f}`:", "", "```yaml"]
        for w in (w for w in b.workloads if w.file == f):
            lines += [f"  - name: {w.name.split('/', 1)[1]}  # {w.name.split('/')[0]}"]
            lines += kept_baselines.yaml_snippet(w).splitlines()
        lines += ["```", ""]
    return lines


def page(
    curves: Sequence[kept_curves.Curve],
    baselines: Sequence[kept_baselines.Baseline],
    against: Sequence[str] = (),
) -> str:
    """The page; `against`: the kept runs of loadgen against scheduler_perf, as sections."""
    lines = [
        "# scheduler_perf in-process: cost curves, loadgen against it, and baselines",
        "",
        f"<!-- generated by `testbed results` from docs/results/curves/, {AGAINST}/ and "
        "baselines/; do not edit -->",
        "",
        "## How the scheduler's cost grows with the fleet",
        "",
    ]
    if curves:
        intro = _CURVES_INTRO.format(
            workload=curves[0].workload,
            pods=curves[0].pods,
            runs=_runs_per_point(curves),
            more=MORE_RUNS,
        )
        lines += [*textwrap.wrap(intro, WIDTH, break_on_hyphens=False), ""]
        lines += [f"![CPU per pod and throughput against the fleet's nodes]({CHART})", ""]
        for c in curves:
            lines += _curve(c)
    else:
        lines += ["No kept curve yet.", ""]
    if against:
        lines += ["## loadgen end to end against scheduler_perf in-process", ""]
        lines += [*textwrap.wrap(_AGAINST_INTRO, WIDTH, break_on_hyphens=False), ""]
        lines += against
    lines += ["## Baselines for upstream's DRA workloads without a threshold", ""]
    rule = (
        "Upstream's DRA suites for partitionable devices, consumable capacity and "
        "compatibility groups set no `threshold:` (kubernetes/kubernetes#141732 waits on a "
        "clean baseline). Each was run here in-process (`testbed perf run`), and each "
        f"threshold is {kept_baselines.RULE}: upstream sets thresholds pessimistically, "
        "from the minimum Average of its last 250 CI runs (its README, "
        "kubernetes/kubernetes#136276), its DRA file's at about 0.8 of the typical Average. "
        "These are this machine's, at the load given per run: a CI machine with more cores and "
        "nothing else running gives higher Averages, so they are a floor to scale by upstream's "
        "own runs, not upstream's values. Each run keeps 10 pods waiting for 10 s, each "
        "scheduled pod deleted and replaced (upstream's steady state), so an Average is ten "
        "or so per-second samples."
    )
    lines += [*textwrap.wrap(rule, WIDTH, break_on_hyphens=False), ""]
    for b in baselines:
        lines += _baseline(b)
    if not baselines:
        lines += ["No kept baseline yet.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
