"""Cost curves: one upstream DRA workload at several fleet sizes, and a growth fitted to them
(pure, given the text of upstream's config).

- `sized`: upstream's test case (by default `SchedulingWithResourceClaimTemplate`, the shape
  of its `5000pods_500nodes`) with one workload of our size: `nodes` nodes with DRA, `pods`
  measured pods, `init_claims` claims allocated (or pods scheduled) first. The test case's
  ops and templates are upstream's, read in place from the module cache (their paths made
  absolute); only the workload's params are ours.
- `Point`: what one run at one size gave.
- `fit_line`: least squares of a figure on one predictor over every repeat, the slope's 95 %
  interval from Student's t: the growth per node of the fleet, per filtered node, or per
  slice visit of the cost model (`schedperf.costmodel`).
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any, Final

import yaml
from scipy import stats

from schedperf import costmodel, workloads
from testbed import charts

TEST_CASE: Final = "SchedulingWithResourceClaimTemplate"
BASE_WORKLOAD: Final = "5000pods_500nodes"
CONFIG: Final = "curve-config.yaml"
_PATH_KEYS: Final = ("nodeTemplatePath", "templatePath", "podTemplatePath")
DEVICES_PER_NODE_DEFAULT: Final = 10
"""Upstream's resourceslice-basic-devices template's numDevices in its DRA configs."""


class CurveError(ValueError):
    """Upstream's config lacks what a sized run needs (one line)."""


def _case(config_text: str, case: str) -> dict[str, Any]:
    for tc in yaml.safe_load(config_text) or []:
        if isinstance(tc, dict) and tc.get("name") == case:
            return tc
    raise CurveError(f"upstream's DRA config has no test case {case!r}")


def _base_params(tc: dict[str, Any], case: str, base: str) -> dict[str, Any]:
    for w in tc.get("workloads") or []:
        if w.get("name") == base:
            return dict(w.get("params") or {})
    raise CurveError(f"upstream's {case} has no workload {base!r} to size")


def devices_per_node(config_text: str, case: str = TEST_CASE, base: str = BASE_WORKLOAD) -> int:
    """Devices one node's slice publishes in `case`: its createAny's numDevices (1.37), else
    the workload's maxClaimsPerNode (1.35 and 1.36 publish through createResourceDriver)."""
    tc = _case(config_text, case)
    for op in tc.get("workloadTemplate") or []:
        n = (op.get("templateParams") or {}).get("numDevices")
        if isinstance(n, int):
            return n
    n = _base_params(tc, case, base).get("maxClaimsPerNode")
    return n if isinstance(n, int) else DEVICES_PER_NODE_DEFAULT


def sized(
    config_text: str,
    upstream_file_dir: str,
    *,
    nodes: int,
    pods: int,
    init_claims: int = 0,
    workdir: str,
    case: str = TEST_CASE,
    base: str = BASE_WORKLOAD,
) -> workloads.Selected:
    """Upstream's `case` with one workload of this size, to run from `workdir`;
    `upstream_file_dir` is the directory of upstream's dra/performance-config.yaml. The base
    workload's params are kept, its feature gates are not: each release runs its defaults."""
    if nodes < 1 or pods < 1 or init_claims < 0:
        raise CurveError(f"nodes {nodes}, pods {pods}, init claims {init_claims}: out of range")
    capacity = nodes * devices_per_node(config_text, case, base)
    if init_claims + pods > capacity:
        raise CurveError(
            f"{init_claims} claims + {pods} pods need more than the {capacity} devices of "
            f"{nodes} nodes"
        )
    tc = copy.deepcopy(_case(config_text, case))
    for op in tc.get("workloadTemplate") or []:
        for key in _PATH_KEYS:
            if isinstance(op.get(key), str):
                op[key] = str(PurePosixPath(upstream_file_dir) / op[key])
    params = _base_params(tc, case, base)
    params.update(nodesWithDRA=nodes, nodesWithoutDRA=0, measurePods=pods)
    # Claims allocated first (1.37) or pods scheduled first (1.35, 1.36), as the base has.
    for key in ("initClaims", "initPods"):
        if key in params:
            params[key] = init_claims
    name = f"{pods}pods_{nodes}nodes"
    tc["workloads"] = [{"name": name, "params": params}]
    return workloads.Selected(
        name=f"{case}/{name}",
        benchmark=f"{workloads.BENCHMARK}/{case}/{name}",
        config=CONFIG,
        workdir=workdir,
        topic="dra",
        allocator="",
        files={CONFIG: yaml.safe_dump([tc], sort_keys=False)},
        params={"nodes": nodes, "pods": pods, "initClaims": init_claims},
    )


FILTER_PER_POD: Final = (
    "scheduler_framework_extension_point_duration_seconds{extension_point=Filter}/Average"
)
DRA_FILTER_PER_NODE: Final = (
    "scheduler_plugin_execution_duration_seconds"
    "{extension_point=Filter,plugin=DynamicResources}/Average"
)


@dataclass(frozen=True)
class Point:
    """One run at one size."""

    nodes: int
    repeat: int
    throughput: float | None
    """SchedulingThroughput Average (pods/s); None: no sample."""
    cpu_ms_per_pod: float
    """The benchmark's process tree (scheduler, API server, etcd) over the whole run,
    start-up and the fleet's creation included, per measured pod: an upper bound."""
    filter_ms_per_pod: float | None
    """The Filter extension point's mean duration: all nodes filtered for one pod (wall)."""
    dra_filter_ms_per_node: float | None
    """DynamicResources' Filter on one node, mean (sampled by the scheduler; wall)."""
    load_1m: float
    seconds: float
    nodes_filtered_per_pod: float | None = None
    """Nodes filtered per pod, the cost model's `nodes_filtered` measured: DRA Filter calls
    per pod from the scheduler's metrics (end to end), its log's mean `evaluatedNodes`
    (in-process)."""
    idle_cpu_ms_per_pod: float | None = None
    """The end-to-end way: the scheduler's CPU at rest before the run, for as long as the run,
    per pod: the part of `cpu_ms_per_pod` the fleet costs whatever the pods do."""


def point(
    nodes: int,
    repeat: int,
    durations: Mapping[str, float],
    throughput: float | None,
    cpu_seconds: float,
    pods: int,
    load_1m: float,
    seconds: float,
    nodes_filtered_per_pod: float | None = None,
    idle_cpu_seconds: float | None = None,
) -> Point:
    return Point(
        nodes=nodes,
        repeat=repeat,
        throughput=throughput,
        cpu_ms_per_pod=round(cpu_seconds / pods * 1e3, 3),
        filter_ms_per_pod=durations.get(FILTER_PER_POD),
        dra_filter_ms_per_node=durations.get(DRA_FILTER_PER_NODE),
        load_1m=load_1m,
        seconds=round(seconds, 1),
        nodes_filtered_per_pod=nodes_filtered_per_pod,
        idle_cpu_ms_per_pod=(
            round(idle_cpu_seconds / pods * 1e3, 3) if idle_cpu_seconds is not None else None
        ),
    )


_EVALUATED = re.compile(r'"Successfully bound pod to node".* evaluatedNodes=(\d+)')


def evaluated_nodes(log_text: str) -> float | None:
    """Nodes filtered per pod, measured: the mean of the scheduler's `evaluatedNodes` over
    the pods its log says it bound (every pod of the sized workload is measured); None when
    the log has none."""
    counts = [int(m.group(1)) for m in _EVALUATED.finditer(log_text)]
    return sum(counts) / len(counts) if counts else None


@dataclass(frozen=True)
class Line:
    """y = intercept + slope * x, fitted on `n` points; the slope's 95 % interval."""

    intercept: float
    slope: float
    slope_low: float
    slope_high: float
    n: int
    r2: float


def fit_line(xs: Sequence[float], ys: Sequence[float], confidence: float = 0.95) -> Line:
    """Ordinary least squares over every point (each repeat its own point); ValueError with
    fewer than 3 points or one x value."""
    n = len(xs)
    if n != len(ys):
        raise ValueError("xs and ys differ in length")
    if n < 3 or len(set(xs)) < 2:
        raise ValueError("a line needs 3 points at 2 x values at least")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = my - slope * mx
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    total = sum((y - my) ** 2 for y in ys)
    se = math.sqrt(residual / (n - 2) / sxx)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 2)) * se
    return Line(
        intercept=intercept,
        slope=slope,
        slope_low=slope - half,
        slope_high=slope + half,
        n=n,
        r2=1.0 - residual / total if total > 0 else 1.0,
    )


def model_x(release: str, nodes: int, pods: int, devices_per_node: int) -> dict[str, float]:
    """The cost model's predictors at one size of the sized workload (one slice per node, no
    counter sets; the fleet half as full on average as at the end of the run)."""
    full = pods / (nodes * devices_per_node) / 2
    filtered = costmodel.nodes_filtered(nodes, full)
    scanned = costmodel.slices_scanned(release, costmodel.Fleet(nodes))
    return {"filtered": filtered, "visits": filtered * scanned}


FIGURES: Final = ("cpu_ms_per_pod", "filter_ms_per_pod", "dra_filter_ms_per_node", "throughput")


def fits(
    release: str, points: Sequence[Point], pods: int, devices_per_node: int
) -> dict[str, dict[str, Any]]:
    """Per figure: its line against the fleet's nodes, the nodes filtered per pod and (where
    the release's slice visits per node grow with the fleet) the slice visits per pod. A
    figure or predictor without enough points is left out."""
    out: dict[str, dict[str, Any]] = {}
    for figure in FIGURES:
        rows = [(p, getattr(p, figure)) for p in points if getattr(p, figure) is not None]
        ys = [float(y) for _, y in rows]
        predictors = {
            "per_node": [float(p.nodes) for p, _ in rows],
            "per_filtered_node": [
                model_x(release, p.nodes, pods, devices_per_node)["filtered"] for p, _ in rows
            ],
            "per_slice_visit": [
                model_x(release, p.nodes, pods, devices_per_node)["visits"] for p, _ in rows
            ],
        }
        lines: dict[str, Any] = {}
        for name, xs in predictors.items():
            if name == "per_slice_visit" and xs == predictors["per_filtered_node"]:
                continue  # one slice per node: the same line as per filtered node
            try:
                lines[name] = asdict(fit_line(xs, ys))
            except ValueError:
                continue
        if lines:
            out[figure] = lines
    return out


def page(doc: Mapping[str, Any]) -> str:
    """`curve.html`: each figure against the nodes, every run a point, with its line per node
    of the fleet and the cost model's line (per filtered node) at each size; a page on its
    own. `doc` is curve.json's content."""
    points = [Point(**p) for p in doc["points"]]
    sections = []
    for figure, title, unit in (
        ("cpu_ms_per_pod", "CPU per pod, the benchmark's whole process tree", "ms per pod"),
        ("filter_ms_per_pod", "Filter per pod (all nodes filtered, wall)", "ms per pod"),
        ("throughput", "SchedulingThroughput Average", "pods/s"),
    ):
        rows = sorted((p.nodes, getattr(p, figure)) for p in points if getattr(p, figure))
        if not rows:
            continue
        fig = charts.over_time(
            charts.Series(
                f"{doc['kubernetes']}, each run", [r[0] for r in rows], [r[1] for r in rows]
            ),
            title=title,
            y_title=unit,
            x_title="nodes",
        )
        fig.update_traces(mode="markers")
        line = doc["fits"].get(figure, {}).get("per_node")
        if line:
            xs = [rows[0][0], rows[-1][0]]
            fig.add_scatter(
                x=xs,
                y=[line["intercept"] + line["slope"] * x for x in xs],
                name="least squares per node",
                mode="lines",
            )
        model = doc["fits"].get(figure, {}).get("per_filtered_node")
        if model:
            sizes = sorted(int(n) for n in doc["model"])
            fig.add_scatter(
                x=sizes,
                y=[
                    model["intercept"] + model["slope"] * doc["model"][str(n)]["filtered"]
                    for n in sizes
                ],
                name="cost model: least squares per filtered node",
                mode="lines+markers",
            )
        sections.append(charts.Section(title, [fig]))
    intro = charts.note(
        f"scheduler_perf {TEST_CASE} sized to each fleet, {doc['pods']} pods per run, "
        f"Kubernetes {doc['kubernetes']}, {doc['cpus']} cores; load average beside each run in "
        "curve.json."
    )
    return charts.page(f"Cost curve, Kubernetes {doc['kubernetes']}", sections, intro=intro)


SAME_CURVE: Final = ("kind", "way", "release", "kubernetes", "workload", "pods", "devices_per_node")
"""What two curve.json documents must share for their points to belong on one curve."""


def merge(first: Mapping[str, Any], *more: Mapping[str, Any]) -> dict[str, Any]:
    """One curve from several curve.json documents of the same curve (`SAME_CURVE`): the
    points in the order given, renumbered after the earlier ones' repeats at each size; the
    model at every size; the commands joined; the fits recomputed. ValueError (one line)
    naming the first field that differs."""
    doc = dict(first)
    points = [dict(p) for p in first.get("points", [])]
    for other in more:
        for key in SAME_CURVE:
            if other.get(key) != doc.get(key):
                raise ValueError(
                    f"one curve has {key} {doc.get(key)!r}, another {other.get(key)!r}"
                )
        for p in other.get("points", []):
            last = max((q["repeat"] for q in points if q["nodes"] == p["nodes"]), default=0)
            points.append({**p, "repeat": last + 1})
        doc["command"] = f"{doc.get('command', '')}; {other.get('command', '')}"
        doc["model"] = {**doc.get("model", {}), **other.get("model", {})}
    doc["points"] = points
    doc["fits"] = fits(
        str(doc["release"]),
        [Point(**p) for p in points],
        int(doc["pods"]),
        int(doc["devices_per_node"]),
    )
    return doc


HIGHER_IS_BETTER: Final = frozenset({"throughput"})


@dataclass(frozen=True)
class Crossover:
    """Where release `a`, the cheaper on small fleets, stops being the cheaper of two, by one
    figure: `ratios` is a's cost over b's at each size both have (the means of the repeats;
    for throughput b's over a's), `bracket` the two measured sizes the ratio crosses 1
    between (None when it does not cross within them), `at` where the least-squares line
    through the ratios reaches 1 and `low`, `high` its 95 % interval (Fieller's: the sizes
    where the line's confidence band holds 1; None where that band does not close)."""

    figure: str
    ratios: dict[int, float]
    bracket: tuple[int, int] | None
    line: Line | None
    at: float | None
    low: float | None
    high: float | None

    def within(self, low: float, high: float) -> bool | None:
        """Whether the measured crossover fell in [low, high]: the line's `at` and the
        measured bracket both there; None when the line does not place it (no line, or an
        interval that does not close)."""
        if self.at is None or self.low is None or self.high is None:
            return None
        inside = low <= self.at <= high
        if self.bracket is not None:
            inside = inside and self.bracket[1] >= low and self.bracket[0] <= high
        return inside


def _means(points: Sequence[Point], figure: str) -> dict[int, float]:
    by_size: dict[int, list[float]] = {}
    for p in points:
        y = getattr(p, figure)
        if y is not None:
            by_size.setdefault(p.nodes, []).append(float(y))
    return {n: sum(ys) / len(ys) for n, ys in sorted(by_size.items())}


def _fieller(
    xs: Sequence[float], ys: Sequence[float], level: float, confidence: float
) -> tuple[float | None, float | None]:
    """The x interval where the fitted line's confidence band (for its mean) holds `level`:
    the roots of (a + b x - level)^2 = t^2 s^2 (1/n + (x - mx)^2 / sxx); (None, None) when the
    slope is not significant (the band never closes)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    c = my - slope * mx - level
    residual = sum((y - level - c - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    k = float(stats.t.ppf(0.5 + confidence / 2, n - 2)) ** 2 * residual / (n - 2)
    qa = slope**2 - k / sxx
    if qa <= 0:
        return None, None
    qb = 2 * slope * c + 2 * k * mx / sxx
    qc = c**2 - k / n - k * mx**2 / sxx
    root = math.sqrt(max(qb**2 - 4 * qa * qc, 0.0))
    return (-qb - root) / (2 * qa), (-qb + root) / (2 * qa)


def crossover(
    a: Sequence[Point], b: Sequence[Point], figure: str, confidence: float = 0.95
) -> Crossover:
    """The crossover of releases `a` and `b` by `figure` (see `Crossover`). The cost model
    makes the ratio a straight line in the fleet's nodes when `a` visits every slice per
    filtered node and `b` a fixed number (1.35 against 1.36: (node + N visit) / node')."""
    ma, mb = _means(a, figure), _means(b, figure)
    sizes = sorted(set(ma) & set(mb))
    if figure in HIGHER_IS_BETTER:
        ratios = {n: mb[n] / ma[n] for n in sizes if ma[n] > 0}
    else:
        ratios = {n: ma[n] / mb[n] for n in sizes if mb[n] > 0}
    sizes = sorted(ratios)
    bracket = next(
        ((lo, hi) for lo, hi in itertools.pairwise(sizes) if ratios[lo] < 1 <= ratios[hi]),
        None,
    )
    xs, ys = [float(n) for n in sizes], [ratios[n] for n in sizes]
    try:
        line = fit_line(xs, ys, confidence)
    except ValueError:
        return Crossover(figure, ratios, bracket, None, None, None, None)
    at = (1.0 - line.intercept) / line.slope if line.slope != 0 else None
    low, high = _fieller(xs, ys, 1.0, confidence)
    return Crossover(figure, ratios, bracket, line, at, low, high)


_PLOTTED: Final = (
    ("dra_filter_ms_per_node", "DynamicResources Filter per node (wall)", "ms per node"),
    ("filter_ms_per_pod", "Filter per pod (all nodes filtered, wall)", "ms per pod"),
    ("cpu_ms_per_pod", "CPU per pod, the benchmark's whole process tree", "ms per pod"),
    ("throughput", "SchedulingThroughput Average", "pods/s"),
    ("nodes_filtered_per_pod", "Nodes filtered per pod (measured)", "nodes"),
)


def releases_page(docs: Sequence[Mapping[str, Any]]) -> str:
    """Several releases' curves (curve.json contents) overlaid: each figure's mean over the
    repeats at each size, one line per release; a page on its own."""
    sections = []
    for figure, title, unit in _PLOTTED:
        series = []
        for doc in docs:
            means = _means([Point(**p) for p in doc["points"]], figure)
            if means:
                series.append(charts.Series(doc["kubernetes"], list(means), list(means.values())))
        if series:
            fig = charts.over_time(*series, title=title, y_title=unit, x_title="nodes")
            fig.update_traces(mode="lines+markers")
            sections.append(charts.Section(title, [fig]))
    names = ", ".join(str(d["kubernetes"]) for d in docs)
    intro = charts.note(
        f"scheduler_perf {TEST_CASE} sized to each fleet, {docs[0]['pods']} pods per run; "
        "each point the mean of its size's repeats (every run and its load in curve.json)."
    )
    return charts.page(f"Cost curves, Kubernetes {names}", sections, intro=intro)
