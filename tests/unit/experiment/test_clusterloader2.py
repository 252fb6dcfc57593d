"""`harness: clusterloader2`'s pure parts: how ClusterLoader2's DRA test is adapted (synthetic
files of the same shape here), sized and parameterised, what a file may ask of the variant,
and how an arm's agreement rows are judged and shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from experiment.measure import accounting, arm_record, figures
from experiment.measure.arms import Arm
from experiment.plan import matrix
from experiment.sites import clusterloader2 as cl2
from experiment.spec import spec as specs
from testbed import vocab

CONFIG = """\
{{$n := DefaultParam .CL2_X 1}}
name: some-test
namespace:
  number: {{$n}}
dependencies:
- name: install a driver
  Method: SomeDriver
  Params:
    Count: {{.Nodes}}
  Timeout: 5m
steps:
- name: first
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{.Name}}
spec:
  template:
    metadata:
      labels:
        job-type: short-lived
    spec:
      restartPolicy: Never
      containers:
      - name: c
        args: [{{.Sleep}}]
"""


def test_the_config_loses_its_dependencies_and_gets_the_namespace_prefix() -> None:
    patched = cl2.patch_config(CONFIG, "cl2-abc")
    assert "dependencies" not in patched and "SomeDriver" not in patched
    assert "namespace:\n  prefix: cl2-abc\n  number: {{$n}}\n" in patched
    assert patched.endswith("steps:\n- name: first\n")
    with pytest.raises(cl2.ShapeError):
        cl2.patch_config("name: x\n", "p")  # no namespace block: refused, never guessed


@pytest.mark.parametrize(
    ("scheduler", "named"), [("default-scheduler", None), ("plain-scheduler", "plain-scheduler")]
)
def test_a_job_template_gets_the_kwok_delay_toleration_fleet_and_scheduler(
    scheduler: str, named: str | None
) -> None:
    rendered = cl2.patch_job(JOB, "fleet-1", scheduler)
    pod = yaml.safe_load(rendered.replace("{{.Name}}", "j").replace("{{.Sleep}}", "5s"))
    pod = pod["spec"]["template"]
    assert pod["metadata"]["annotations"] == {vocab.KWOK_POD_COMPLETE_DELAY: "5s"}
    assert pod["metadata"]["labels"] == {"job-type": "short-lived"}
    assert pod["spec"]["tolerations"] == [
        {"key": vocab.KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["spec"]["nodeSelector"] == {vocab.LABEL_FLEET: "fleet-1"}
    assert pod["spec"].get("schedulerName") == named
    with pytest.raises(cl2.ShapeError):
        cl2.patch_job("kind: Job\n", "f", scheduler)


def test_the_workloads_parameters_become_clusterloader2s_overrides() -> None:
    settings = cl2.overrides({"run_time": "5s", "fill_qps": "20"}, 8)
    assert settings == {
        "CL2_NODES_PER_NAMESPACE": 10,
        "CL2_GPUS_PER_NODE": 8,
        "CL2_FILL_PERCENTAGE": 90,
        "CL2_LONG_JOB_RUNNING_TIME": "3600s",
        "CL2_JOB_RUNNING_TIME": "5s",
        "CL2_LOAD_TEST_THROUGHPUT": 20.0,
        "CL2_STEADY_STATE_QPS": 5.0,
    }


def test_the_test_sizes_as_clusterloader2_does() -> None:
    settings = cl2.overrides({}, 8)
    assert cl2.expected_pods(100, settings) == {
        "FastFillPodStartupLatency": 720,
        "ChurnPodStartupLatency": 800,
    }
    assert cl2.expected_pods(20, settings) == {
        "FastFillPodStartupLatency": 144,
        "ChurnPodStartupLatency": 160,
    }
    # Fewer nodes than a namespace takes: one namespace of them all.
    assert cl2.expected_pods(2, settings) == {
        "FastFillPodStartupLatency": 14,
        "ChurnPodStartupLatency": 20,
    }


def test_the_command_a_result_keeps_names_no_machine_path(tmp_path: Path) -> None:
    arm_dir, kubeconfig = tmp_path / "arms" / "w-cl2-0", tmp_path / "cluster" / "kubeconfig"
    cmd = cl2.command(
        tmp_path / "cache" / "cl2", arm_dir / "cl2-config", arm_dir / "cl2", kubeconfig, 20
    )
    kept = cl2.recorded(cmd, arm_dir, kubeconfig)
    assert str(tmp_path) not in kept
    assert kept.split() == [
        "clusterloader",
        "--provider=local",
        "--kubeconfig=$KUBECONFIG",
        "--testconfig=cl2-config/config.yaml",
        "--testoverrides=cl2-config/overrides.yaml",
        "--report-dir=cl2",
        "--nodes=20",
        "--enable-exec-service=false",
        "--v=2",
    ]


def _file(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "cl2",
        "fleet": {"profile": "dgx-h100", "nodes": 2},
        "variants": [{"name": "cl2", "harness": "clusterloader2"}, {"name": "loadgen"}],
        "workloads": [{"name": "w", "scenario": "cl2-dra", "params": {"run_time": "1s"}}],
    }
    return {**doc, **changes}


def test_a_file_with_a_clusterloader2_variant_plans_it_on_the_sites_scheduler() -> None:
    exp = specs.parse(_file())
    specs.check(exp)
    (stage,) = matrix.stages(exp)
    assert [(a.harness, a.scheduler) for a in stage.arms] == [
        ("clusterloader2", "cl2"),
        ("loadgen", "loadgen"),
    ]
    assert set(matrix.setups(exp)) == {"cl2", "loadgen"}


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        (
            {"variants": [{"name": "a", "harness": "clusterloader2", "devicePlugin": True}]},
            "devicePlugin: a clusterloader2 variant sets only its cluster and scheduler",
        ),
        (
            {"workloads": [{"name": "w", "scenario": "pods", "params": {"pods": 4}}]},
            "runs ClusterLoader2's DRA test",
        ),
        (
            {"workloads": [{"name": "w", "scenario": "cl2-dra", "params": {"completions": 3}}]},
            "testing/dra's churn Jobs have 10 completions",
        ),
        (
            {"workloads": [{"name": "w", "scenario": "cl2-dra", "params": {"fill": 0.905}}]},
            "whole percentage",
        ),
        ({"fleet": {"profile": "cpu-only", "nodes": 2}}, "a profile fleet of one GPU profile"),
    ],
)
def test_what_clusterloader2_cannot_run_is_one_line(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(specs.SpecError, match=says):
        doc = _file(**changes)
        if len(doc["variants"]) == 1:
            doc["variants"].append({"name": "loadgen"})
        specs.check(specs.parse(doc))


def _rows(ok: bool) -> list[dict[str, Any]]:
    diff = 1.0 if ok else 500.0
    return [
        {
            "measurement": ident,
            "phase": phase,
            "stat": stat,
            "loadgen_ms": 100.0 + diff,
            "cl2_ms": 100.0,
            "diff_ms": diff,
            "allowed_ms": 20.0,
            "ok": ok or stat != "Perc99",
        }
        for ident in cl2.MEASUREMENTS
        for phase in ("create_to_schedule", "schedule_to_run", "pod_startup")
        for stat in ("Perc50", "Perc90", "Perc99")
    ]


def _section(ok: bool = True, *, missing: str = "", observed: int = 14) -> arm_record.Cl2Section:
    rows = _rows(ok)
    return arm_record.Cl2Section.model_validate(
        {
            "version": "v0",
            "exit_code": 0,
            "overrides": {},
            "perfdata": [],
            "tolerance": "max(20 ms, 5%)",
            "figures_ms": {
                i: ({} if i == missing else {"pod_startup": {}}) for i in cl2.MEASUREMENTS
            },
            "pods": {
                "FastFillPodStartupLatency": {
                    "expected": 14,
                    "observed": observed,
                    "measured": observed,
                },
                "ChurnPodStartupLatency": {"expected": 20, "observed": 20, "measured": 20},
            },
            "rows": rows,
            "within": sum(r["ok"] for r in rows),
            "met": ok,
        }
    )


def _rec(ok: bool = True, *, observed: int = 14) -> arm_record.ArmRecord:
    """The arm's record: the observers' result, ClusterLoader2's section beside."""
    return arm_record.modelled(
        {"scenario": {"source": cl2.SOURCE, "name": cl2.SCENARIO}},
        clusterloader2=_section(ok, observed=observed),
    )


def test_an_arm_without_perfdata_or_with_pods_unseen_is_not_valid() -> None:
    assert cl2.judge(_section()).valid
    missing = cl2.judge(_section(missing="ChurnPodStartupLatency"))
    assert not missing.valid and "no PodStartupLatency PerfData for ChurnPodStartupLatency" in (
        missing.reason
    )
    short = cl2.judge(_section(observed=13))
    assert not short.valid and "FastFillPodStartupLatency 13 of 14" in short.reason
    assert accounting.accounted(_rec()) == (
        True,
        "ok (ClusterLoader2: every pod of both measurements measured)",
    )
    assert not accounting.accounted(_rec(observed=13))[0]


def test_the_agreement_is_a_figure_of_clusterloader2_arms_only() -> None:
    _, get, _ = figures.METRICS[figures.CL2_AGREEMENT]
    assert get(_rec()) == 1.0
    assert get(_rec(ok=False)) == pytest.approx(12 / 18)
    assert figures.defined(figures.CL2_AGREEMENT, _rec())
    assert figures.defined("churn pod startup p99", _rec())
    assert not figures.defined("scheduling throughput", _rec())
    assert not figures.defined(
        figures.CL2_AGREEMENT, arm_record.modelled({"scenario": {"name": "cl2-dra"}})
    )


def test_the_report_rows_pair_each_percentile_and_say_which_missed() -> None:
    arm = Arm("w", "cl2", "cl2-dra", harness=cl2.HARNESS)
    other = arm_record.modelled({"scenario": {}})
    kept = cl2.sections([(arm, _rec(ok=False)), (Arm("w", "lg", "cl2-dra"), other)])
    assert list(kept) == ["w-cl2-0"]
    cells = cl2.agreement_cells(kept)
    assert len(cells) == 18 and len(cells[0]) == len(cl2.AGREEMENT_COLUMNS)
    assert cells[0][:4] == ("w-cl2-0", "FastFill", "create_to_schedule", "Perc50")
    assert [c[-1] for c in cells].count("MISS") == 6
    (line,) = cl2.agreement_lines(kept)
    assert line.startswith("w-cl2-0: 12 of 18 rows within max(20 ms, 5%)")
    # As experiment.json keeps it and `testbed report` reads it back.
    again = {
        a: arm_record.Cl2Section.model_validate(json.loads(s.model_dump_json()))
        for a, s in kept.items()
    }
    assert cl2.agreement_cells(again) == cells


def test_a_clusterloader2_variant_may_run_alone_since_its_arm_compares_two_tools() -> None:
    alone = specs.parse(_file(variants=[{"name": "cl2", "harness": "clusterloader2"}]))
    assert [v.name for v in alone.variants] == ["cl2"]
    with pytest.raises(specs.SpecError, match="compares at least two"):
        specs.parse(_file(variants=[{"name": "loadgen"}]))


def test_without_clusterloader2_the_arm_is_invalid_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "clusterloader2.sh"
    script.write_text(
        "#!/bin/sh\necho 'building' >&2\necho 'error: could not download the module (403)' >&2\n"
        "exit 1\n"
    )
    script.chmod(0o755)
    monkeypatch.setattr(cl2.paths, "k8s_tools", lambda: tmp_path)
    monkeypatch.setattr(cl2, "_built", {})
    where = cl2.Where(tmp_path / "kubeconfig", "f", 2, 8, "default-scheduler")
    doc, valid = cl2.run_arm(Arm("w", "cl2", "cl2-dra", harness=cl2.HARNESS), tmp_path, where)
    assert doc is None and not valid.valid
    assert valid.reason == "ClusterLoader2 is not available: could not download the module (403)"


def test_the_arms_result_is_both_observers_in_loadgens_schema_and_the_rows_beside(
    tmp_path: Path,
) -> None:
    """`compose`: the observers' results as the phases `fill` and `churn` of one loadgen
    result (counts summed), and ClusterLoader2's PerfData paired row by row in the section;
    loadgen's document carries nothing of ClusterLoader2's."""
    settings = {"CL2_NODES_PER_NAMESPACE": 10, "CL2_GPUS_PER_NODE": 8, "CL2_FILL_PERCENTAGE": 50}
    expected = cl2.expected_pods(10, settings)
    for ident, ms in (("FastFillPodStartupLatency", 100.0), ("ChurnPodStartupLatency", 200.0)):
        summary = {"count": expected[ident], "min": 1.0, "max": ms, "avg": ms}
        stats = {"Perc50": ms, "Perc90": ms, "Perc99": ms}
        observer = arm_record.modelled(
            {
                "scenario": {"name": "observe"},
                "counts": {"pods_seen": expected[ident]},
                "latency_ms": {"pod_startup": {**summary, **stats}},
            }
        ).result
        (tmp_path / f"observe-{ident}").mkdir()
        (tmp_path / f"observe-{ident}" / "result.json").write_text(observer.model_dump_json())
    (tmp_path / "cl2").mkdir()
    items = [
        {
            "data": {"Perc50": 90.0, "Perc90": 100.0, "Perc99": 500.0},
            "unit": "ms",
            "labels": {"Metric": "pod_startup"},
        }
    ]
    (tmp_path / "cl2" / "PodStartupLatency_FastFillPodStartupLatency_x.json").write_text(
        json.dumps({"version": "1.0", "dataItems": items})
    )
    doc, section = cl2.compose(tmp_path, 10, settings, version="v9", code=0)
    assert [p.name for p in doc.phases] == ["fill", "churn"]
    assert doc.counts.pods_seen == doc.counts.expected_pods == sum(expected.values())
    assert doc.scenario["source"] == cl2.SOURCE and "clusterloader2" not in doc.model_dump()
    assert set(section.figures_ms["ChurnPodStartupLatency"]) == set()  # no PerfData: no figures
    fill = [r for r in section.rows if r.measurement == "FastFillPodStartupLatency"]
    startup = {r.stat: r for r in fill if r.phase == "pod_startup"}
    assert (startup["Perc50"].diff_ms, startup["Perc99"].ok) == (10.0, False)
    assert {k: (p.observed, p.measured) for k, p in section.pods.items()} == {
        k: (n, n) for k, n in expected.items()
    }
    assert not cl2.judge(section).valid  # Churn's PerfData is missing
