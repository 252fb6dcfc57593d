"""report and compare: documents built from synthetic measurements (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from loadgen import compare, scheduler_view, segments, series, slo
from loadgen.report import console, document, html, perfdata
from tests.support import synthetic_run as synthetic


def test_document_counts_latencies_placement_and_slos() -> None:
    doc = document.build(synthetic.run_result(), [slo.parse("pod_startup.p99=500ms")])
    assert doc.counts.pods_running == 10 and doc.counts.objects_created == 10
    assert doc.latency_ms["pod_startup"].Perc99 == pytest.approx(1000.0)
    assert doc.latency_ms["create_to_schedule"].Perc50 == pytest.approx(500.0)
    assert doc.claims.gpu_nic_pairs == 20
    assert doc.claims.pcie_aligned_pairs == 15  # 5 claims with both pairs, 5 with one
    assert doc.claims.fully_pcie_aligned_claims == 5
    assert doc.claims.numa_aligned_pairs == 20
    assert doc.fleet.peak_allocation_ratio == 0.5
    assert doc.started_at == "2023-11-14T22:13:20.000Z"
    assert [(s.ok, s.value_ms) for s in doc.slos] == [(False, pytest.approx(1000.0))]
    assert doc.server_check.violations == 0


def test_files_round_trip_and_validate(tmp_path: Path) -> None:
    doc = document.build(synthetic.run_result())
    assert document.load(document.write(doc, tmp_path)) == doc
    paths = perfdata.write(doc, tmp_path)
    stamp = "2023-11-14T22:13:20Z"
    assert [p.name for p in paths] == [
        f"PodStartupLatency_PodStartupLatency_pods_{stamp}.json",
        f"StatelessPodStartupLatency_PodStartupLatency_pods_{stamp}.json",
        f"StatefulPodStartupLatency_PodStartupLatency_pods_{stamp}.json",
        f"BenchmarkPerfScheduling_benchmark_dra-testbed_{stamp}.json",
    ]
    a = perfdata.PerfData.model_validate_json(paths[0].read_text())
    assert {i.labels["Metric"] for i in a.dataItems} == set(doc.latency_ms)
    assert perfdata.PerfData.model_validate_json(paths[1].read_text()) == a
    assert perfdata.PerfData.model_validate_json(paths[2].read_text()).dataItems == []


# A PodStartupLatency summary as ClusterLoader2 writes it (FACTS §6 and §8: the DRA test's
# report directory), and a throughput file as scheduler_perf writes it (its DataItems).
CL2_NAMES = [
    "PodStartupLatency_PodStartupLatency_dra-steady-state_2026-11-20T10:00:00Z.json",
    "StatelessPodStartupLatency_PodStartupLatency_dra-steady-state_2026-11-20T10:00:00Z.json",
    "StatefulPodStartupLatency_PodStartupLatency_dra-steady-state_2026-11-20T10:00:00Z.json",
]
CL2_FILE = {
    "version": "1.0",
    "dataItems": [
        {
            "data": {"Perc50": 1012.5, "Perc90": 1840.1, "Perc99": 2461.9},
            "unit": "ms",
            "labels": {"Metric": "pod_startup"},
        },
        {
            "data": {"Perc50": 3.2, "Perc90": 8.4, "Perc99": 31.0},
            "unit": "ms",
            "labels": {"Metric": "create_to_schedule"},
        },
    ],
}
SCHEDULER_PERF_FILE = {
    "version": "v1",
    "dataItems": [
        {
            "data": {"Average": 99.6, "Perc50": 101, "Perc90": 120, "Perc95": 124, "Perc99": 130},
            "unit": "pods/s",
            "labels": {
                "Name": "SchedulingWithResourceClaimTemplate/2000pods_500nodes",
                "Metric": "SchedulingThroughput",
            },
        }
    ],
}
SCHEDULER_PERF_NAME = "BenchmarkPerfScheduling_benchmark_dra_2026-11-20T10:00:00Z.json"


def _shape(name: str) -> tuple[str, ...]:
    """What perfdash keys a file on: the parts before the test name and the time's format."""
    head, _, stamp = name.removesuffix(".json").rpartition("_")
    assert len(stamp) == 20 and stamp[10] == "T" and stamp.endswith("Z"), name
    return tuple(head.split("_")[:2])


def test_perfdata_is_named_and_shaped_as_the_references_write_it(tmp_path: Path) -> None:
    rates = document.Throughput(Average=50, Perc50=48, Perc90=60, Perc95=61, Perc99=62)
    doc = document.build(synthetic.run_result()).model_copy(update={"throughput": rates})
    ours = perfdata.write(doc, tmp_path)
    assert [_shape(p.name) for p in ours[:3]] == [_shape(n) for n in CL2_NAMES]
    assert _shape(ours[3].name)[:2] == _shape(SCHEDULER_PERF_NAME)[:2]
    # The same model reads theirs and ours; the items carry the same keys.
    cl2 = perfdata.PerfData.model_validate(CL2_FILE)
    mine = perfdata.PerfData.model_validate_json(ours[0].read_text())
    assert {tuple(sorted(i.data)) for i in mine.dataItems} == {
        tuple(sorted(i.data)) for i in cl2.dataItems
    }
    assert {i.labels["Metric"] for i in cl2.dataItems} <= {
        i.labels["Metric"] for i in mine.dataItems
    }
    ref = perfdata.PerfData.model_validate(SCHEDULER_PERF_FILE)
    got = perfdata.PerfData.model_validate_json(ours[3].read_text())
    assert got.version == ref.version == "v1"
    (item,) = got.dataItems
    assert set(item.labels) == set(ref.dataItems[0].labels) == {"Name", "Metric"}
    assert item.labels["Metric"] == "SchedulingThroughput" and item.unit == "pods/s"
    assert set(item.data) == set(ref.dataItems[0].data)


def test_no_throughput_sample_writes_no_throughput_item() -> None:
    empty = document.Throughput(Average=0, Perc50=0, Perc90=0, Perc95=0, Perc99=0)
    assert perfdata.scheduling_throughput([("fast", empty)]).dataItems == []


def test_a_file_that_is_not_a_result_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"schema_version": 2}')
    with pytest.raises(ValueError):
        document.load(bad)


def test_a_newer_result_with_more_fields_still_loads(tmp_path: Path) -> None:
    """Fields are only added within a schema version: this reader drops what it does not know."""
    doc = document.build(synthetic.run_result())
    raw = json.loads(document.write(doc, tmp_path).read_text())
    raw["added_later"] = {"x": 1}
    raw["counts"]["added_later"] = 2
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(raw))
    assert document.load(newer) == doc


def test_html_is_self_contained_with_charts() -> None:
    page = html.render(document.build(synthetic.run_result()))
    # plotly.js inlined once, then one Plotly.newPlot per chart: CDFs, pods, throughput,
    # GPU allocation; nothing fetched from elsewhere.
    assert page.count("<script") == 5 and page.count("Plotly.newPlot") == 4
    assert "<script src" not in page and "<link" not in page
    assert "pod_startup" in page and "{&#x27;" not in page and '{"name"' not in page


def test_console_summary_mentions_the_key_figures() -> None:
    con = Console(record=True, width=120)
    console.render(document.build(synthetic.run_result(), [slo.parse("pod_startup.p99=5s")]), con)
    text = con.export_text()
    assert "pod_startup" in text and "SLO pod_startup.p99 <= 5000ms" in text
    assert "15/20 on one PCIe root" in text


def test_gpu_memory_is_called_used_only_when_pods_declare_footprints() -> None:
    doc = document.build(synthetic.run_result())
    taken = doc.fleet.model_copy(
        update={"gpu_memory_taken_bytes": 80 << 30, "gpu_memory_of_busy_bytes": 80 << 30}
    )
    for fleet, shown, hidden in (
        (taken, "no pod declares a footprint", "GPU memory requested"),
        (
            taken.model_copy(update={"gpu_memory_requested_bytes": 40 << 30}),
            "GPU memory requested 40",
            "no pod declares",
        ),
    ):
        con = Console(record=True, width=200)
        console.render(doc.model_copy(update={"fleet": fleet}), con)
        text = con.export_text()
        assert shown in text and hidden not in text
        page = html.render(doc.model_copy(update={"fleet": fleet}))
        assert ("no footprint declared" in page) == (hidden == "GPU memory requested")


def test_compare_reports_percent_change() -> None:
    prev = document.build(synthetic.run_result(startup_ms=1000.0))
    cur = document.build(synthetic.run_result(startup_ms=1500.0))
    rows = {m: (a, b, pct) for m, a, b, pct in compare.rows(prev, cur)}
    a, b, pct = rows["pod_startup Perc99 (ms)"]
    assert (a, b) == (pytest.approx(1000.0), pytest.approx(1500.0))
    assert pct == pytest.approx(50.0)
    assert compare.higher_is_better("throughput Average (pods/s)")
    assert not compare.higher_is_better("pod_startup Perc99 (ms)")


def test_metrics_deltas_keep_interesting_counters_and_gauges() -> None:
    before = series.parse(
        "# HELP x\nprocess_cpu_seconds_total 10\nprocess_resident_memory_bytes 6e+07\n"
        'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 5\n'
        "unrelated_total 1\n"
    )
    after = series.parse(
        "process_cpu_seconds_total 12.5\nprocess_resident_memory_bytes 1e+08\n"
        'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 25\n'
        'scheduler_plugin_execution_duration_seconds_bucket{le="1"} 3\n'
        'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources",'
        'profile="p"} 900\n'
        'scheduler_plugin_evaluation_total{extension_point="Score",plugin="DynamicResources",'
        'profile="p"} 400\n'
        "unrelated_total 9\n"
    )
    d = segments.between(before, after)
    assert d == {
        "process_cpu_seconds_total": 2.5,
        "process_resident_memory_bytes": 1e8,
        "change:process_resident_memory_bytes": 4e7,
        'scheduler_schedule_attempts_total{profile="p",result="scheduled"}': 20.0,
        'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources",'
        'profile="p"}': 900.0,
    }
    s = series.summary(d)
    assert s["dra_filter_calls"] == 900.0
    assert (s["cpu_seconds"], s["schedule_attempts"], s["rss_bytes"]) == (2.5, 20.0, 1e8)
    assert s["rss_growth_bytes"] == 4e7


def test_compare_command_prints_the_table_and_rejects_non_results(tmp_path: Path) -> None:
    from loadgen import cli

    a = document.write(document.build(synthetic.run_result(1000.0)), tmp_path / "a")
    b = document.write(document.build(synthetic.run_result(2000.0)), tmp_path / "b")
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(a), str(b)])
    assert done.value.code == 0
    (tmp_path / "junk.json").write_text("[]")
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(a), str(tmp_path / "junk.json")])
    assert done.value.code == 2
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(a), str(tmp_path / "missing.json")])
    assert done.value.code == 2


def test_pods_csv_has_a_row_per_pod_with_its_claim(tmp_path: Path) -> None:
    import csv

    from loadgen.report import pods

    rows = list(csv.DictReader(pods.write(synthetic.run_result(pods=4), tmp_path).open()))
    assert [r["pod"] for r in rows] == [f"pods-{i:06d}" for i in range(4)]
    assert float(rows[0]["running"]) - float(rows[0]["created"]) == pytest.approx(1.0)
    assert [r["pcie_aligned_pairs"] for r in rows] == ["2", "1", "2", "1"]
    assert all(r["gpu_nic_pairs"] == "2" and r["claim_allocated"] for r in rows)


def test_every_report_states_the_definitions_it_used(tmp_path: Path) -> None:
    doc = document.build(synthetic.run_result())
    assert doc.definitions.keys() >= {"pod_startup", "throughput"}
    loaded = document.load(document.write(doc, tmp_path))
    assert "first event seen" in loaded.definitions["pod_startup"]
    page = html.render(doc)
    assert "<h2>Definitions</h2>" in page and "throughputCollector" in page
    con = Console(record=True, width=300)
    console.render(doc, con)
    text = con.export_text()
    assert "pod_startup_latency.go" in text and "1 s ticker" in text


def test_the_occupancy_at_the_allocation_peak_is_reported_per_node() -> None:
    from loadgen import watch_events

    res = synthetic.run_result()
    fleet = res.records.fleet
    fleet.nodes = {"n0", "n1", "n2"}
    fleet.gpu_slices = {f"s{i}": (f"p{i}", 1, f"n{i}", 8) for i in range(3)}
    fleet.gpus_by_claim = {"ns/a": ("n0", 8), "ns/b": ("n1", 3)}
    fleet.gpus_allocated = 11
    watch_events.take_sample(res.records, 102.0)
    fleet.gpus_by_claim = {"ns/a": ("n0", 8)}  # b released: below the peak, not recorded
    fleet.gpus_allocated = 8
    watch_events.take_sample(res.records, 103.0)
    doc = document.build(res)
    assert doc.fleet.occupancy_at_peak == {"n0": (8, 8), "n1": (3, 8), "n2": (0, 8)}
    assert "Fleet occupancy at the allocation peak" in html.render(doc)


def test_compare_writes_its_table_and_charts_as_one_page(tmp_path: Path) -> None:
    from loadgen import cli

    a = document.write(document.build(synthetic.run_result(1000.0)), tmp_path / "a")
    b = document.write(document.build(synthetic.run_result(2000.0)), tmp_path / "b")
    rows = {r[0]: r[1:] for r in compare.formatted(document.load(a), document.load(b))}
    assert rows["pod_startup Perc50"] == ("1.00 s", "2.00 s", "+100.0 %", "worse")
    # Ten pods cannot bound a p99 (it is their maximum): its change does not count.
    assert rows["pod_startup Perc99"] == ("1.00 s", "2.00 s", "+100.0 %", "same")
    out = tmp_path / "compare.html"
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(a), str(b), "--html", str(out)])
    assert done.value.code == 0
    page = out.read_text()
    assert "pod_startup latency (CDF)" in page and "Scheduling throughput over time" in page
    assert page.count("Plotly.newPlot") >= 3 and "<script src" not in page
    # A directory for --html is a usage error, and nothing is written.
    with pytest.raises(SystemExit) as done:
        cli.main(["compare", str(a), str(b), "--html", str(tmp_path)])
    assert done.value.code == 2


def test_a_scheduler_newer_than_its_api_server_is_said_in_the_result_and_every_report() -> None:
    res = synthetic.run_result()
    res.apiserver_version = "v1.37.2"
    res.scheduler_view = scheduler_view.Timeline(release="v1.38.0-beta.0")
    doc = document.build(res)
    assert doc.version_skew is not None and "v1.38.0-beta.0 is newer than" in doc.version_skew
    con = Console(record=True, width=200)
    console.render(doc, con)
    assert doc.version_skew in con.export_text()
    assert "Version skew" in html.render(doc)
    res.scheduler_view = scheduler_view.Timeline(release="v1.37.2")
    assert document.build(res).version_skew is None
