"""Cost curves: upstream's workload sized, the points and the fitted lines."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from schedperf import curves

CONFIG = """
- name: SchedulingWithResourceClaimTemplate
  featureGates: {DynamicResourceAllocation: true}
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodesWithoutDRA}
  - {opcode: createNodes, nodeTemplatePath: templates/node.yaml, countParam: $nodesWithDRA}
  - opcode: createAny
    templatePath: templates/resourceslice.yaml
    countParam: $nodesWithDRA
    templateParams: {numDevices: 10}
  - {opcode: createPods, podTemplatePath: templates/pod.yaml, countParam: $measurePods,
     collectMetrics: true}
  workloads:
  - name: 5000pods_500nodes
    labels: [performance]
    params: {nodesWithDRA: 500, nodesWithoutDRA: 0, initClaims: 2500, measurePods: 2500,
             duration: 0s, steadyState: false}
    threshold: {dra: 56}
- name: Other
  workloads: []
"""


def test_sized_keeps_upstreams_ops_with_absolute_paths_and_our_size() -> None:
    s = curves.sized(CONFIG, "/mod/dra", nodes=2000, pods=300, workdir="/w")
    assert (
        s.benchmark
        == "BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/300pods_2000nodes"
    )
    assert s.workdir == "/w" and s.config == curves.CONFIG
    (tc,) = yaml.safe_load(s.files[curves.CONFIG])
    ops = tc["workloadTemplate"]
    assert ops[1]["nodeTemplatePath"] == "/mod/dra/templates/node.yaml"
    assert ops[2]["templatePath"] == "/mod/dra/templates/resourceslice.yaml"
    assert ops[3]["podTemplatePath"] == "/mod/dra/templates/pod.yaml"
    (w,) = tc["workloads"]
    assert w == {
        "name": "300pods_2000nodes",
        "params": {
            "nodesWithDRA": 2000,
            "nodesWithoutDRA": 0,
            "initClaims": 0,
            "measurePods": 300,
            "duration": "0s",
            "steadyState": False,
        },
    }
    assert s.params == {"nodes": 2000, "pods": 300, "initClaims": 0}


def test_sized_refuses_what_cannot_run() -> None:
    with pytest.raises(curves.CurveError, match="devices"):
        curves.sized(CONFIG, "/m", nodes=10, pods=101, workdir="/w")
    with pytest.raises(curves.CurveError, match="no test case"):
        curves.sized(CONFIG, "/m", nodes=10, pods=1, workdir="/w", case="Missing")
    with pytest.raises(curves.CurveError, match="no workload"):
        curves.sized(CONFIG, "/m", nodes=10, pods=1, workdir="/w", base="fast")
    with pytest.raises(curves.CurveError):
        curves.sized(CONFIG, "/m", nodes=0, pods=1, workdir="/w")
    assert curves.devices_per_node(CONFIG) == 10


def test_fit_line_recovers_a_known_slope_and_brackets_it() -> None:
    xs = [100, 100, 100, 500, 500, 500, 1000, 1000, 1000]
    noise = [0.3, -0.2, -0.1, 0.2, -0.3, 0.1, -0.2, 0.3, -0.1]
    ys = [4.0 + 0.02 * x + e for x, e in zip(xs, noise, strict=True)]
    line = curves.fit_line(xs, ys)
    assert line.n == 9
    assert line.slope_low < 0.02 < line.slope_high
    assert line.slope == pytest.approx(0.02, abs=5e-4)
    assert line.intercept == pytest.approx(4.0, abs=0.3)
    assert 0.99 < line.r2 <= 1.0
    exact = curves.fit_line([1, 2, 3], [2, 4, 6])
    assert (exact.slope, exact.slope_low, exact.slope_high) == pytest.approx((2, 2, 2))


def test_fit_line_needs_three_points_at_two_sizes() -> None:
    with pytest.raises(ValueError):
        curves.fit_line([1, 2], [1, 2])
    with pytest.raises(ValueError):
        curves.fit_line([5, 5, 5], [1, 2, 3])


def _pt(nodes: int, rep: int, cpu: float, filt: float | None) -> curves.Point:
    return curves.Point(
        nodes=nodes,
        repeat=rep,
        throughput=10.0 + rep,
        cpu_ms_per_pod=cpu,
        filter_ms_per_pod=filt,
        dra_filter_ms_per_node=None,
        load_1m=12.0,
        seconds=60.0,
    )


def test_fits_per_node_filtered_node_and_slice_visit() -> None:
    pts = [_pt(n, r, 10 + n / 100 + r, None) for n in (100, 500, 1000) for r in (1, 2)]
    on_137 = curves.fits("1.37", pts, pods=300, devices_per_node=10)
    assert set(on_137) == {"cpu_ms_per_pod", "throughput"}  # no Filter figures: no line
    # One slice per node: the visits line would be the filtered-node line again.
    assert set(on_137["cpu_ms_per_pod"]) == {"per_node", "per_filtered_node"}
    assert on_137["cpu_ms_per_pod"]["per_node"]["slope"] == pytest.approx(0.01)
    on_135 = curves.fits("1.35", pts, pods=300, devices_per_node=10)
    assert set(on_135["cpu_ms_per_pod"]) == {"per_node", "per_filtered_node", "per_slice_visit"}


def test_model_predictors_at_one_size() -> None:
    # 1,000 nodes x 10 devices, 300 pods: 1.5 % full on average, 420 / 0.985 nodes.
    x = curves.model_x("1.35", 1000, 300, 10)
    assert x["filtered"] == pytest.approx(420 / 0.985)
    assert x["visits"] == pytest.approx(420 / 0.985 * 1000)
    assert curves.model_x("1.37", 1000, 300, 10)["visits"] == pytest.approx(420 / 0.985)


def test_point_per_pod_cpu() -> None:
    p = curves.point(500, 1, {curves.FILTER_PER_POD: 12.5}, 20.0, 30.0, 300, 14.2, 61.04, 231.5)
    assert p.cpu_ms_per_pod == 100.0
    assert p.filter_ms_per_pod == 12.5 and p.dra_filter_ms_per_node is None
    assert p.seconds == 61.0 and p.nodes_filtered_per_pod == 231.5
    assert p.idle_cpu_ms_per_pod is None
    idle = curves.point(500, 1, {}, None, 30.0, 300, 1.0, 60.0, None, 1.5)
    assert idle.idle_cpu_ms_per_pod == 5.0  # 1.5 s at rest over 300 pods


CONFIG_136 = """
- name: SchedulingWithResourceClaimTemplate
  workloadTemplate:
  - {opcode: createNodes, nodeTemplatePath: templates/node.yaml, countParam: $nodesWithDRA}
  - {opcode: createResourceDriver, driverName: d, maxClaimsPerNodeParam: $maxClaimsPerNode}
  - {opcode: createPods, podTemplatePath: templates/pod.yaml, countParam: $initPods}
  workloads:
  - name: 5000pods_500nodes
    featureGates: {SchedulerQueueingHints: false}
    params: {nodesWithDRA: 500, nodesWithoutDRA: 0, initPods: 2500, measurePods: 2500,
             maxClaimsPerNode: 8}
"""


def test_sized_on_the_driver_shape_of_135_and_136() -> None:
    assert curves.devices_per_node(CONFIG_136) == 8
    s = curves.sized(CONFIG_136, "/m", nodes=100, pods=50, init_claims=20, workdir="/w")
    (tc,) = yaml.safe_load(s.files[curves.CONFIG])
    (w,) = tc["workloads"]
    assert w == {
        "name": "50pods_100nodes",
        "params": {
            "nodesWithDRA": 100,
            "nodesWithoutDRA": 0,
            "initPods": 20,
            "measurePods": 50,
            "maxClaimsPerNode": 8,
        },
    }
    with pytest.raises(curves.CurveError, match="devices"):
        curves.sized(CONFIG_136, "/m", nodes=10, pods=81, workdir="/w")


def test_page_plots_every_figure_with_its_lines() -> None:
    pts = [_pt(n, r, 10 + n / 100 + r, 5 + n / 50) for n in (100, 500, 1000) for r in (1, 2)]
    doc = {
        "kubernetes": "v1.37.2",
        "pods": 300,
        "cpus": 2,
        "points": [vars(p) for p in pts],
        "model": {str(n): curves.model_x("1.37", n, 300, 10) for n in (100, 500, 1000)},
        "fits": curves.fits("1.37", pts, pods=300, devices_per_node=10),
    }
    html = curves.page(doc)
    assert "Cost curve, Kubernetes v1.37.2" in html
    for title in ("CPU per pod", "Filter per pod", "SchedulingThroughput Average"):
        assert title in html
    assert html.count("least squares per node") == 3
    assert "cost model" in html


def _at(nodes: int, rep: int, dra: float, throughput: float = 10.0) -> curves.Point:
    return curves.Point(
        nodes=nodes,
        repeat=rep,
        throughput=throughput,
        cpu_ms_per_pod=1.0,
        filter_ms_per_pod=None,
        dra_filter_ms_per_node=dra,
        load_1m=1.0,
        seconds=1.0,
    )


SIZES = (100, 250, 500, 1000, 2000, 5000)


def test_crossover_of_a_release_that_scans_every_slice_and_one_that_does_not() -> None:
    # 1.35-like: 0.10 ms per node + 0.0001 ms per slice in the cluster; 1.36-like: 0.15 ms
    # flat. Crossover where 0.10 + 0.0001 N = 0.15: N = 500. The repeats' noise averages
    # out; the sizes' (+-1 %, alternating) does not.
    repeat = {1: 1.02, 2: 0.98, 3: 1.0}
    size = {n: 1.01 if i % 2 == 0 else 0.99 for i, n in enumerate(SIZES)}
    a = [_at(n, r, (0.10 + 1e-4 * n) * size[n] * repeat[r]) for n in SIZES for r in (1, 2, 3)]
    b = [_at(n, r, 0.15 * repeat[4 - r]) for n in SIZES for r in (1, 2, 3)]
    c = curves.crossover(a, b, "dra_filter_ms_per_node")
    assert c.ratios[100] == pytest.approx(0.11 * 1.01 / 0.15)
    assert c.ratios[5000] == pytest.approx(0.60 * 0.99 / 0.15)
    assert c.bracket == (250, 500)  # 0.35 x 0.99 / 0.15 < 1 at 250, 1.01 at 500
    assert c.at == pytest.approx(500, rel=0.05)
    assert c.low is not None and c.high is not None
    assert c.low < c.at < c.high  # type: ignore[operator]
    assert c.low > 400 and c.high < 600
    assert c.within(391, 1561) is True
    assert c.within(600, 2000) is False


def test_crossover_interval_widens_with_noise_and_opens_without_a_slope() -> None:
    a = [_at(n, 1, 0.10 + 1e-4 * n + (0.02 if i % 2 else -0.02)) for i, n in enumerate(SIZES)]
    b = [_at(n, 1, 0.15) for n in SIZES]
    noisy = curves.crossover(a, b, "dra_filter_ms_per_node")
    assert noisy.low is not None and noisy.high is not None
    assert noisy.low < noisy.at < noisy.high  # type: ignore[operator]
    assert noisy.high - noisy.low > 100
    flat = [_at(n, 1, 0.15 + (0.01 if i % 2 else -0.01)) for i, n in enumerate(SIZES)]
    never = curves.crossover(flat, b, "dra_filter_ms_per_node")
    # Its ratio wobbles across 1 (a bracket at the first crossing), but no line says where.
    assert (never.low, never.high, never.bracket) == (None, None, (100, 250))
    assert never.at is not None and never.within(0, 1e9) is None
    assert never.line is not None and never.line.slope_low < 0 < never.line.slope_high


def test_crossover_by_throughput_reads_the_higher_as_the_cheaper() -> None:
    a = [_at(n, 1, 1.0, throughput=20.0 - n / 200) for n in (100, 1000, 2000)]
    b = [_at(n, 1, 1.0, throughput=15.0) for n in (100, 1000, 2000)]
    c = curves.crossover(a, b, "throughput")
    assert c.ratios[100] == pytest.approx(15 / 19.5)
    assert c.bracket == (100, 1000)  # a: 15 pods/s at 1,000, as fast as b
    assert c.at is not None and 100 < c.at < 1000


def test_crossover_without_sizes_enough_for_a_line() -> None:
    a = [_at(n, 1, 0.1) for n in (100, 200)]
    b = [_at(n, 1, 0.2) for n in (100, 200, 300)]
    c = curves.crossover(a, b, "dra_filter_ms_per_node")
    assert set(c.ratios) == {100, 200} and c.line is None and c.at is None
    assert c.within(0, 1e9) is None


LOG = """\
I1127 11:30:40.85 2868 etcd.go:115] "starting etcd" evaluatedNodes=999
I1127 11:30:48.91 2868 schedule_one.go:483] "Successfully bound pod to node" pod="test/a" \
node="n-3" evaluatedNodes=100 feasibleNodes=100
I1127 11:30:48.91 2868 schedule_one.go:483] "Successfully bound pod to node" pod="test/b" \
node="n-8" evaluatedNodes=131 feasibleNodes=120
"""


def test_evaluated_nodes_is_the_mean_over_bound_pods() -> None:
    assert curves.evaluated_nodes(LOG) == pytest.approx(115.5)
    assert curves.evaluated_nodes("no pods bound\n") is None


def test_releases_page_overlays_each_release_by_its_means() -> None:
    docs = [
        {
            "kubernetes": v,
            "pods": 300,
            "points": [vars(_at(n, r, k * n * r)) for n in (100, 500) for r in (1, 2)],
        }
        for v, k in (("v1.35.8", 1e-3), ("v1.36.4", 2e-3))
    ]
    html = curves.releases_page(docs)
    assert "Cost curves, Kubernetes v1.35.8, v1.36.4" in html
    assert "DynamicResources Filter per node" in html and "SchedulingThroughput" in html
    assert "Nodes filtered per pod" not in html  # no run measured it
    assert html.count('"name":"v1.36.4"') == 3  # Filter per node, CPU per pod, throughput


def _curve(release: str = "1.35", **changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "SchedulerCostCurve",
        "way": "schedperf",
        "release": release,
        "kubernetes": "v1.35.8",
        "workload": "sized",
        "pods": 300,
        "devices_per_node": 8,
        "command": "a",
        "model": {"100": {"filtered": 100.0}},
        "points": [vars(_at(100, 1, 0.1)), vars(_at(500, 1, 0.2)), vars(_at(1000, 1, 0.3))],
    }
    return {**doc, **changes}


def test_merge_renumbers_the_later_curves_repeats_and_refits() -> None:
    later = _curve(
        command="b",
        model={"2000": {"filtered": 680.0}},
        points=[vars(_at(1000, 1, 0.35)), vars(_at(2000, 1, 0.5))],
    )
    doc = curves.merge(_curve(), later)
    assert [(p["nodes"], p["repeat"]) for p in doc["points"]] == [
        (100, 1),
        (500, 1),
        (1000, 1),
        (1000, 2),
        (2000, 1),
    ]
    assert doc["command"] == "a; b" and set(doc["model"]) == {"100", "2000"}
    assert doc["fits"]["dra_filter_ms_per_node"]["per_node"]["n"] == 5


def test_merge_refuses_another_curve() -> None:
    with pytest.raises(ValueError, match=r"^one curve has release '1\.35', another '1\.36'$"):
        curves.merge(_curve(), _curve("1.36"))
    with pytest.raises(ValueError, match="pods"):
        curves.merge(_curve(), _curve(pods=200))
