"""Variants run through scheduler_perf in-process (`experiment.sites.in_process`): what a file may
ask of them, how they pair with loadgen's arms, the figures their results define, the CPU by
process kept in an arm's result, and a file's targets judged by the paired intervals."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from experiment.judge import comparison, targets
from experiment.measure import accounting, arm_record, figures, intervals, process_cpu
from experiment.measure.arms import Arm
from experiment.plan import design, matrix
from experiment.report import rebuild, variants_report
from experiment.sites import in_process
from experiment.spec import spec as specs
from tests.support import children

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "experiments" / "loadgen-vs-schedperf.yaml"


def _doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "lg-vs-sp",
        "fleet": {"profile": "dgx-h100", "nodes": 20},
        "variants": [
            {"name": "perf", "harness": "scheduler_perf"},
            {"name": "loadgen", "extender": False},
        ],
        "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 50}}],
        "targets": [
            {
                "metric": "scheduling throughput",
                "variant": "loadgen",
                "baseline": "perf",
                "atLeast": 0.8,
            }
        ],
    }
    doc.update(overrides)
    return doc


def _checked(**overrides: Any) -> specs.Experiment:
    exp = specs.parse(_doc(**overrides), source="f.yaml")
    specs.check(exp)
    return exp


def test_an_in_process_variant_calls_no_extender_and_runs_beside_its_loadgen_pair() -> None:
    exp = _checked(repeats=3)
    perf = exp.variants[0]
    assert (perf.harness, perf.extender, perf.cluster_key) == (
        "scheduler_perf",
        False,
        ("1.37", ()),
    )
    assert list(matrix.setups(exp)) == ["loadgen"]  # no scheduler of the site's for it
    (stage,) = matrix.stages(exp)
    order = [(a.repeat, a.variant, a.harness, a.scheduler) for a in stage.arms]
    assert order == [
        (0, "perf", "scheduler_perf", ""),
        (0, "loadgen", "loadgen", "loadgen"),
        (1, "loadgen", "loadgen", "loadgen"),
        (1, "perf", "scheduler_perf", ""),
        (2, "perf", "scheduler_perf", ""),
        (2, "loadgen", "loadgen", "loadgen"),
    ]


def test_the_arm_is_testbed_perf_run_of_the_files_profile_fleet() -> None:
    arm = Arm("gpus", "perf", "pods", params={"pods": "50"}, scheduler="", harness="x")
    argv = in_process.command(arm, Path("/out/a"), release="1.36", profile="dgx-h100", nodes=20)
    assert argv[1:] == [
        "perf", "run", "fleet/dgx-h100", "--kubernetes", "1.36", "--nodes", "20",
        "--pods", "50", "--repeat", "1", "--output-dir", "/out/a",
    ]  # fmt: skip


_PERF = {"name": "perf", "harness": "scheduler_perf"}
_LOADGEN = {"name": "loadgen", "extender": False}


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            {"variants": [{**_PERF, "extender": True}, _LOADGEN]},
            "variants.0.extender: scheduler_perf runs no HTTP extender",
        ),
        (
            {"variants": [{**_PERF, "featureGates": {"DRAPrioritizedList": True}}, _LOADGEN]},
            "variants.0.featureGates: a scheduler_perf variant sets only kubernetes",
        ),
        (
            {"variants": [{**_PERF, "scheduler": {"parallelism": 4}}, _LOADGEN]},
            "variants.0.scheduler: a scheduler_perf variant sets only kubernetes",
        ),
        (
            {"variants": [{**_PERF, "kubernetes": "1.36"}, _LOADGEN]},
            "variants.0: scheduler_perf needs a loadgen variant of Kubernetes 1.36",
        ),
        (
            {"variants": [_PERF, {**_PERF, "name": "b"}], "targets": []},
            "needs a loadgen variant",
        ),
        (
            {"targets": [{"metric": "speed", "variant": "loadgen", "baseline": "perf"}]},
            "targets.0.metric: 'speed': unknown metric",
        ),
        (
            {"targets": [{"metric": "scheduling throughput", "variant": "x", "baseline": "perf"}]},
            "give atLeast or atMost",
        ),
        (
            {
                "targets": [
                    {
                        "metric": "scheduling throughput",
                        "variant": "lg",
                        "baseline": "perf",
                        "atMost": 2,
                    }
                ]
            },
            "targets.0.variant: no variant 'lg'",
        ),
    ],
)
def test_a_variant_or_target_it_cannot_honour_is_one_line_naming_the_field(
    overrides: dict[str, Any], says: str
) -> None:
    with pytest.raises(specs.SpecError, match=says) as e:
        specs.parse(_doc(**overrides), source="f.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("f.yaml: ")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"fleet": {"profile": "demo", "nodes": 20}}, "not 'demo'"),
        ({"fleet": {"profile": "cpu-only", "nodes": 20}}, "fleet.profile"),
        (
            {"fleet": {"spec": {"pools": [{"name": "p", "profile": "dgx-h100", "count": 2}]}}},
            "fleet: a scheduler_perf variant needs a profile fleet",
        ),
        (
            {"workloads": [{"name": "g", "scenario": "pods", "params": {"pods": 9, "gpus": 2}}]},
            r"workloads.0 \(variant perf\): .*default claim \(one GPU\); gpus cannot",
        ),
        (
            {"workloads": [{"name": "g", "scenario": "pods", "params": {"gpus": 1}}]},
            "needs params.pods",
        ),
        (
            {"workloads": [{"name": "g", "scenario": "jobs", "params": {"jobs": 9}}]},
            "runs the 'pods' scenario only, not 'jobs'",
        ),
        (
            {
                "workloads": [
                    {"name": "g", "scenario": "pods", "params": {"pods": 9}, "latency": True}
                ]
            },
            "no unsaturated follow-up",
        ),
    ],
)
def test_what_scheduler_perf_cannot_express_is_refused_before_anything_runs(
    overrides: dict[str, Any], says: str
) -> None:
    with pytest.raises(specs.SpecError, match=says):
        _checked(**overrides)


def test_explicit_defaults_that_change_nothing_are_accepted() -> None:
    _checked(workloads=[{"name": "g", "scenario": "pods", "params": {"pods": 9, "gpus": 1}}])


def _testbed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return children.testbed(*args, home=cwd / "state", cwd=cwd)


def test_validate_refuses_a_profile_scheduler_perf_cannot_express_in_one_line_exit_2(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["fleet"] = {"profile": "demo", "nodes": 20}
    bad.write_text(yaml.safe_dump(doc))
    proc = _testbed("experiment", "validate", str(bad), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "fleet.profile: scheduler_perf makes" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_the_example_pairs_loadgen_with_scheduler_perf_and_judges_the_ratio(
    tmp_path: Path,
) -> None:
    proc = _testbed("experiment", "validate", str(EXAMPLE), "--nodes", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 variants x 1 workloads, 10 arms" in proc.stdout
    exp = specs.load(EXAMPLE)
    assert [v.harness for v in exp.variants] == ["scheduler_perf", "loadgen"]
    assert [t.describe for t in exp.targets] == ["loadgen / perf scheduling throughput >= 0.8"]
    assert "Published size: `--nodes 500" in EXAMPLE.read_text()


def test_an_in_process_arm_on_an_existing_cluster_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = _testbed("experiment", "run", str(EXAMPLE), "--context", "nowhere", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "local cluster only" in proc.stderr


# -- results ---------------------------------------------------------------------------------


def _in_process_doc(average: float, cpu: float, pods: int = 50) -> arm_record.ArmRecord:
    """A result as `testbed perf run` writes it: zeros where scheduler_perf measures nothing."""
    result = {
        "scenario": {"name": "fleet_dgx-h100", "source": "scheduler_perf"},
        "counts": {"expected_pods": pods, "pods_seen": 0, "pods_scheduled": 0, "pods_running": 0},
        "throughput": {"Average": average, "Perc50": average, "Perc99": average},
        "latency_ms": {},
        "fleet": {"peak_allocation_ratio": 0.0},
        "metrics": {"scheduler_perf": {"summary": {}, "deltas": {}}},
    }
    kept = arm_record.ProcessCpu(
        covers=in_process.COVERS,
        pods=pods,
        cpu_seconds={"scheduler_perf": cpu},
        busy_cores=1.9,
        wall_seconds=10.0,
    )
    return arm_record.modelled(result, process_cpu=kept)


def _loadgen_doc(
    average: float, scheduler_cpu: float, pods: int = 50, *, cpu_kept: bool = True
) -> arm_record.ArmRecord:
    doc: dict[str, Any] = {
        "scenario": {"name": "pods", "phases": [{"name": "pods", "kind": "pods", "count": pods}]},
        "counts": {
            "expected_pods": pods,
            "pods_seen": pods,
            "pods_scheduled": pods,
            "pods_running": pods,
        },
        "throughput": {"Average": average, "Perc50": average, "Perc99": average},
        "latency_ms": {"pod_startup": {"count": pods, "Perc50": 900.0, "Perc99": 2000.0}},
        "fleet": {"peak_allocation_ratio": 0.1},
        "metrics": {
            "scheduler": {"summary": {"cpu_seconds": scheduler_cpu}, "deltas": {}},
            "extender": {"summary": {"cpu_seconds": 0.5}, "deltas": {}},
        },
    }
    cpu = {"kube-apiserver": 2.0, "etcd": 0.5, "loadgen": 0.25, "extender": 0.5,
           "scheduler (measured)": scheduler_cpu}  # fmt: skip
    reading = process_cpu.Reading(cpu, busy_cores=2.0, wall_seconds=9.0)
    kept = process_cpu.kept(reading, pods, process_cpu.LOADGEN_COVERS) if cpu_kept else None
    return arm_record.modelled(doc, process_cpu=kept)


def test_an_in_process_result_defines_throughput_and_whole_path_cpu_and_nothing_else() -> None:
    doc = _in_process_doc(20.0, 2.5)
    assert accounting.accounted(doc)[0]
    assert figures.defined("scheduling throughput", doc)
    assert figures.defined(figures.PATH_CPU, doc)
    for metric in ("scheduler CPU per pod", "pod startup p50", "pods placed"):
        assert not figures.defined(metric, doc)
        assert figures.defined(metric, _loadgen_doc(16.0, 1.0))
    _, _, path = figures.metric(figures.PATH_CPU)
    assert path(doc) == pytest.approx(2.5 / 50 * 1000)


def test_a_metric_one_side_does_not_define_reads_not_defined_never_0() -> None:
    results = [
        (Arm("gpus", "perf", "pods", scheduler="", repeat=0), _in_process_doc(20.0, 2.5)),
        (Arm("gpus", "loadgen", "pods", scheduler="loadgen", repeat=0), _loadgen_doc(16.0, 1.0)),
    ]
    metrics = ["scheduling throughput", "scheduler CPU per pod", "pods placed"]
    rows = {r.metric: r for r in comparison.rows(results, ["perf", "loadgen"], metrics)}
    assert rows["scheduling throughput"].undefined == ()
    assert rows["scheduling throughput"].ratio("loadgen") == pytest.approx(0.8)
    for metric in ("scheduler CPU per pod", "pods placed"):
        assert rows[metric].undefined == ("perf",)
        assert rows[metric].figures["perf"].values == []
        cells = variants_report._variant_cells([rows[metric]], ["perf", "loadgen"])
        assert cells[0][2] == variants_report.NOT_DEFINED
    exp = specs.parse(_doc())
    out = variants_report.to_json(exp, {}, list(rows.values()), [])
    by_metric = {c["metric"]: c for c in out["comparisons"]}
    assert by_metric["pods placed"]["variants"]["perf"]["defined"] is False
    assert "defined" not in by_metric["pods placed"]["variants"]["loadgen"]


def _pairs(ratios: list[float]) -> list[tuple[Arm, arm_record.ArmRecord]]:
    out = []
    for rep, r in enumerate(ratios):
        out.append((Arm("gpus", "perf", "pods", scheduler="", repeat=rep), _in_process_doc(20, 2)))
        lg = _loadgen_doc(20 * r, 1.0)
        out.append((Arm("gpus", "loadgen", "pods", scheduler="loadgen", repeat=rep), lg))
    return out


@pytest.mark.parametrize(
    ("ratios", "verdict"),
    [
        ([0.95, 0.97, 0.93, 0.96, 0.94], "met"),
        ([0.60, 0.62, 0.58, 0.61, 0.59], "missed"),
        ([0.95], intervals.OBSERVATION),
    ],
)
def test_a_target_is_the_paired_ratio_judged_against_its_threshold(
    ratios: list[float], verdict: str
) -> None:
    exp = specs.parse(_doc())
    rows = comparison.rows(_pairs(ratios), ["perf", "loadgen"], ["scheduling throughput"])
    (judged,) = targets.judge(exp.targets, rows)
    assert judged.verdict == verdict
    assert judged.ratio == pytest.approx(
        intervals.ratio_interval([20 * r for r in ratios], [20.0] * len(ratios)).point  # type: ignore[union-attr]
    )
    assert targets.line(judged).startswith("gpus: loadgen / perf scheduling throughput >= 0.8")


def test_a_target_on_a_metric_one_side_does_not_define_says_so() -> None:
    exp = specs.parse(
        _doc(
            targets=[
                {
                    "metric": "scheduler CPU per pod",
                    "variant": "loadgen",
                    "baseline": "perf",
                    "atMost": 1.5,
                }
            ]
        )
    )
    rows = comparison.rows(_pairs([0.9, 0.8]), ["perf", "loadgen"], ["scheduler CPU per pod"])
    (judged,) = targets.judge(exp.targets, rows)
    assert (judged.verdict, judged.ratio) == ("not defined for perf", None)


def test_cpu_by_process_is_kept_per_arm_and_shown_per_variant() -> None:
    results = _pairs([0.9, 0.8, 1.0])
    (perf, loadgen) = process_cpu.breakdowns(results)
    assert (perf.variant, perf.covers) == ("perf", in_process.COVERS)
    assert perf.medians == {"scheduler_perf": pytest.approx(40.0)}
    assert loadgen.medians == pytest.approx(
        {
            "etcd": 10.0,
            "extender": 10.0,
            "kube-apiserver": 40.0,
            "loadgen": 5.0,
            "scheduler (measured)": 20.0,
        }
    )
    text = process_cpu.lines(loadgen)
    assert text[0].startswith("gpus / loadgen: 85.0 ms per pod over every process of the site")
    assert text[1] == (
        "  kube-apiserver 40.0, scheduler (measured) 20.0, etcd 10.0, extender 10.0, loadgen 5.0"
    )
    assert text[2] == (
        "  scheduling 30.0 (35 %), control plane 50.0 (59 %), "
        "the testbed's own 5.0 (6 %: loadgen 5.0)"
    )
    assert len(process_cpu.lines(perf)) == 2  # one process: no split to say
    exp = specs.parse(_doc(repeats=3))
    rows = comparison.rows(results, ["perf", "loadgen"], [figures.PATH_CPU])
    more = variants_report.extras(exp, rows, results)
    assert any("where the CPU goes" in line for line in more.lines())
    out = variants_report.to_json(exp, {}, rows, [], more)
    assert out["process_cpu"][1]["ms_per_pod"]["loadgen"]["values"] == [5.0, 5.0, 5.0]
    assert out["targets"] == []  # its metric is not among these rows
    console = Console(record=True, width=200)
    variants_report.console_tables(rows, [], console)
    assert "85.0 (85.0–85.0) ×2.12" in console.export_text()


def test_a_loadgen_arm_keeps_no_cpu_split_where_the_sites_processes_are_unread() -> None:
    doc = _loadgen_doc(16.0, 1.0, cpu_kept=False)
    span = process_cpu.Span.start({})
    assert process_cpu.of_loadgen(doc.result, span, {}, "second") is None
    _, _, path = figures.metric(figures.PATH_CPU)
    assert path(doc) is None


def test_a_loadgen_arm_adds_its_second_scheduler_and_extender_as_scraped() -> None:
    doc = _loadgen_doc(16.0, 1.0, cpu_kept=False)
    span = process_cpu.Span.start({"kube-apiserver": 1.0, "gone": 3.0})
    got = process_cpu.of_loadgen(doc.result, span, {"kube-apiserver": 1.5, "kwok": 9.0}, "second")
    assert got is not None
    kept = got.cpu_seconds
    assert kept["kube-apiserver"] == pytest.approx(0.5)
    assert "gone" not in kept and "kwok" not in kept  # seen at one end only
    assert (kept["scheduler (measured)"], kept["extender"]) == (1.0, 0.5)
    assert kept["loadgen"] >= 0
    own = _loadgen_doc(16.0, 1.0, cpu_kept=False)
    got = process_cpu.of_loadgen(own.result, span, {"kube-apiserver": 1.5}, "default-scheduler")
    assert got is not None and "scheduler (measured)" not in got.cpu_seconds


def test_loadgen_counts_by_its_own_reading_over_the_run_where_its_result_has_one() -> None:
    """As a child it is counted whole (start-up and reports too); its own reading covers the
    measurement only, as the scraped processes' do."""
    doc = _loadgen_doc(16.0, 1.0, cpu_kept=False)
    span = process_cpu.Span.start({"kube-apiserver": 1.0})
    own = doc.result.model_copy(update={"loadgen_cpu_seconds": 0.25})
    got = process_cpu.of_loadgen(own, span, {"kube-apiserver": 1.5}, "second")
    assert got is not None and got.cpu_seconds["loadgen"] == 0.25


def test_a_rebuilt_page_still_says_not_defined_and_shows_the_cpu_split(tmp_path: Path) -> None:
    results = _pairs([0.9, 0.8])
    exp = specs.parse(_doc(repeats=2))
    metrics = ["scheduling throughput", "scheduler CPU per pod"]
    rows = comparison.rows(results, ["perf", "loadgen"], metrics)
    more = variants_report.extras(exp, rows, results)
    assert process_cpu.from_json(process_cpu.to_json(more.breakdowns)) == more.breakdowns
    doc = variants_report.to_json(exp, {"arms": {}}, rows, [], more)
    page = rebuild.experiment_page(tmp_path, doc).read_text()
    assert variants_report.NOT_DEFINED in page
    assert "gpus: loadgen / perf scheduling throughput &gt;= 0.8" in page
    assert "where the CPU goes" in page


def test_a_targets_line_names_its_dropped_pairs_and_its_level_s_interval() -> None:
    """A throughput of 0 or less (a counter read across a reset) drops its pair, named by
    variant and figure, and the verdict comes from the pairs left; the interval printed is the
    one at the level the verdict used (a fixed design of 5: 95 %)."""
    exp = specs.parse(_doc(repeats=5))
    rows = comparison.rows(
        _pairs([0.95, 0.97, -0.5, 0.96, 0.94]), ["perf", "loadgen"], ["scheduling throughput"]
    )
    (judged,) = targets.judge(exp.targets, rows, design.of(exp).level)
    assert judged.interval is not None and judged.interval.runs == 4
    assert judged.verdict == "met" and judged.level == pytest.approx(0.05)
    assert judged.refused == (
        "loadgen's scheduling throughput -10 (a cost cannot be 0 or less): pair dropped",
    )
    line = targets.line(judged)
    assert "95 % interval [" in line and line.endswith(
        "met (1 pairs dropped: loadgen's scheduling throughput -10 (a cost cannot be 0 or "
        "less): pair dropped)"
    )
    (out,) = targets.to_json([judged])
    assert out["dropped"] == list(judged.refused) and out["interval"]["confidence"] == 0.95


def test_a_target_from_fewer_pairs_than_its_design_s_first_look_is_no_verdict() -> None:
    """A fixed design of 5 left with 3 pairs (2 refused): observations, not a verdict at 0.05
    from 2 degrees of freedom, whatever the figures say."""
    exp = specs.parse(_doc(repeats=5))
    rows = comparison.rows(
        _pairs([0.95, -2.0, 0.96, -1.0, 0.95]), ["perf", "loadgen"], ["scheduling throughput"]
    )
    (judged,) = targets.judge(exp.targets, rows, design.of(exp).level)
    assert judged.interval is not None and judged.interval.runs == 3
    assert judged.level == 0.0 and not intervals.is_verdict(judged.verdict)
    assert len(judged.refused) == 2


def test_the_path_is_split_into_scheduling_control_plane_and_the_testbeds_own() -> None:
    """On the cluster's own scheduler it is the one measured; beside a second scheduler it is
    idle, and counted with kwok and loadgen as the testbed's own."""

    def breakdown(ms: dict[str, float]) -> process_cpu.Breakdown:
        return process_cpu.Breakdown("w", "v", "", {n: [v] for n, v in ms.items()}, [1.0])

    common = {"kube-apiserver": 27.4, "etcd": 8.0, "kube-controller-manager": 4.9}
    common |= {"loadgen": 5.9, "kwok-controller": 2.9, "extender": 1.0}
    own = process_cpu.tax(breakdown({**common, "kube-scheduler": 40.8}))
    second = process_cpu.tax(
        breakdown({**common, "kube-scheduler": 2.0, **{process_cpu.MEASURED_SCHEDULER: 40.8}})
    )
    assert own is not None and second is not None
    assert own.scheduling == second.scheduling == pytest.approx(41.8)
    assert own.control_plane == second.control_plane == pytest.approx(40.3)
    assert own.testbed == {"loadgen": 5.9, "kwok-controller": 2.9}
    assert second.testbed == {"loadgen": 5.9, "kwok-controller": 2.9, "kube-scheduler": 2.0}


def test_the_extender_served_is_the_called_ones_cpu_less_the_idle_ones_in_the_same_arm() -> None:
    plain = _loadgen_doc(16.0, 1.0, cpu_kept=False)
    _, _, served = figures.metric(figures.EXTENDER_SERVED)
    assert served(plain) is None  # no idle extender beside it: not defined, never 0
    metrics = plain.result.model_dump(mode="json")["metrics"]
    metrics[figures.IDLE_EXTENDER] = {"summary": {"cpu_seconds": 0.2}, "deltas": {}}
    beside = arm_record.modelled(
        {**plain.result.model_dump(mode="json"), "metrics": metrics}, process_cpu=None
    )
    assert served(beside) == pytest.approx((0.5 - 0.2) / 50 * 1000)
    span = process_cpu.Span.start({"kube-apiserver": 1.0})
    got = process_cpu.of_loadgen(beside.result, span, {"kube-apiserver": 1.5}, "second")
    assert got is not None and got.cpu_seconds[process_cpu.IDLE_EXTENDER_PROCESS] == 0.2
