"""A variant's fault in an experiment file: its one field shape, the one-line refusals (exit
2, nothing started), when it comes due, and how its record sets the arm's validity."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from experiment.measure import arm_record, fault_plan, process_cpu, validity
from experiment.measure.fault_plan import Fault, Landed
from experiment.plan import matrix
from experiment.spec import spec as specs
from tests.support import children


def R(doc: dict[str, Any]) -> arm_record.ArmRecord:
    """The arm's record of a result given in part (the rest zero), with its fault's record."""
    fault = doc.get(fault_plan.KEY)
    return arm_record.modelled(
        doc, fault=None if fault is None else fault_plan.Outcome.model_validate(fault)
    )


def _doc(fault: dict[str, Any] | None, **variant: Any) -> dict[str, Any]:
    faulted: dict[str, Any] = {"name": "restart", **variant}
    if fault is not None:
        faulted["fault"] = fault
    return {
        "name": "faults",
        "fleet": {"profile": "dgx-h100", "nodes": 10},
        "variants": [{"name": "steady"}, faulted],
        "workloads": [{"name": "gpus", "scenario": "pods", "params": {"pods": 40, "gpus": 1}}],
    }


def test_a_fault_is_a_component_and_a_share_of_pods_or_a_time() -> None:
    exp = specs.parse(_doc({"kill": "kube-scheduler", "at": "30%"}))
    fault = exp.variants[1].fault
    assert fault is not None and exp.variants[0].fault is None
    assert (fault.share, fault.seconds) == (0.3, None)
    assert fault.planned(40) == "at 30% of 40 pods bound (12)"
    for at, seconds in (("20s", 20.0), (20, 20.0), ("1m30s", 90.0), (0, 0.0)):
        timed = Fault(kill="etcd", at=at)  # type: ignore[arg-type]
        assert (timed.share, timed.seconds) == (None, seconds)
    # The variant with the fault runs on the same (the cluster's own) scheduler as the other.
    assert all(matrix.setup(v).shipped for v in exp.variants)


@pytest.mark.parametrize(
    ("fault", "variant", "says"),
    [
        (
            {"kill": "kube-proxy", "at": "30%"},
            {},
            r"variants.1.fault.kill: not one of kube-apiserver\|.*\|extender$",
        ),
        ({"kill": "etcd", "at": "150%"}, {}, "variants.1.fault.at: .*150% is not a share"),
        ({"kill": "etcd", "at": "0%"}, {}, "variants.1.fault.at: .*above 0 and below 100"),
        ({"kill": "etcd", "at": "-5s"}, {}, "variants.1.fault.at: .*a time cannot be negative"),
        ({"kill": "etcd", "at": -5}, {}, "variants.1.fault.at: .*a time cannot be negative"),
        ({"kill": "etcd", "at": "soon"}, {}, "variants.1.fault.at: .*neither K% of the pods"),
        ({"kill": "etcd"}, {}, "variants.1.fault.at: Field required"),
        ({"kill": "etcd", "at": "5s", "down": "2s"}, {}, "variants.1.fault.down: Extra inputs"),
        (
            {"kill": "kube-scheduler", "at": "5s"},
            {"scheduler": {"parallelism": 4}},
            "fault.kill: kube-scheduler is the cluster's own scheduler",
        ),
        (
            {"kill": "extender", "at": "5s"},
            {"extender": False},
            "fault.kill: the variant runs without the extender",
        ),
        (
            {"kill": "extender", "at": "5s"},
            {"extenderFlags": {"weight-packing": 0}},
            "calls one of its own",
        ),
    ],
)
def test_a_bad_fault_is_one_line_naming_the_field(
    fault: dict[str, Any], variant: dict[str, Any], says: str
) -> None:
    with pytest.raises(specs.SpecError, match=says) as e:
        specs.parse(_doc(fault, **variant), source="f.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("f.yaml: ")


def _testbed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return children.testbed(*args, home=cwd / "state", cwd=cwd)


def test_bad_input_and_a_fault_on_an_existing_site_are_exit_2_and_start_nothing(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_doc({"kill": "kube-scheduler", "at": "150%"})))
    for verb in ("validate", "run"):
        proc = _testbed("experiment", verb, str(bad), cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "fault.at" in proc.stderr, proc.stderr
    existing = tmp_path / "existing.yaml"
    existing.write_text(yaml.safe_dump(_doc({"kill": "kube-scheduler", "at": "30%"})))
    proc = _testbed("experiment", "run", str(existing), "--context", "nowhere", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "variants.1.fault: " in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "existing.yaml"]


def test_a_share_is_due_once_that_many_pods_are_bound_and_a_time_after_the_first_pod() -> None:
    share = Fault(kill="kube-scheduler", at="50%")
    assert not share.due(since_first_pod=None, bound=0, expected=10)
    assert not share.due(since_first_pod=3.0, bound=4, expected=10)
    assert share.due(since_first_pod=3.0, bound=5, expected=10)
    # Never all of them (the arm would be over) and never none.
    assert Fault(kill="etcd", at="99.9%").pods_due(10) == 9
    assert Fault(kill="etcd", at="0.1%").pods_due(10) == 1
    timed = Fault(kill="etcd", at="20s")
    assert not timed.due(since_first_pod=None, bound=10, expected=10)
    assert not timed.due(since_first_pod=19.9, bound=10, expected=10)
    assert timed.due(since_first_pod=20.0, bound=0, expected=10)


def _faulted_doc(record: fault_plan.Outcome, component: str = "scheduler") -> dict[str, Any]:
    calls = {'extender_requests_total{verb="filter",outcome="ok"}': 104.0}
    return {
        "counts": {"pods_scheduled": 100},
        "metrics": {"extender": {"summary": {}, "deltas": calls}},
        "faults": {
            "restarts": [{"component": component, "seen_seconds": 34.0, "started_seconds": 33.2}]
        },
        fault_plan.KEY: record,
    }


def test_the_record_sits_on_loadgens_clock_and_a_fault_that_landed_keeps_the_arm_valid() -> None:
    landed = Landed(Fault(kill="kube-scheduler", at="30%"), "at 30% of 100 pods bound (30)")
    landed.killed_wall, landed.since_first_pod, landed.bound = 1_000.5, 3.25, 31
    landed.repaired_seconds = 2.0
    record = landed.outcome(run_started_wall=970.0, run_ended_wall=1_010.0)
    assert record.done and record.killed_seconds == 30.5 and record.error is None
    assert fault_plan.describe(record) == (
        "kube-scheduler killed 30.5 s into the run (31 pods bound), repaired in 2.0 s"
    )
    d = _faulted_doc(record)
    assert validity.of_arm(R(d), extender=True, scheduler_skipped=0, faults_expected=True).valid
    # The same restart in a variant without a fault is not what it measures.
    assert not validity.of_arm(R(d), extender=True, scheduler_skipped=0).valid


def test_a_fault_that_did_not_land_makes_its_arm_invalid() -> None:
    landed = Landed(Fault(kill="etcd", at="90s"), "90 s after the arm's first pod was created")
    landed.error = "the arm ended before the fault came due"
    d = _faulted_doc(landed.outcome(run_started_wall=970.0, run_ended_wall=1_010.0))
    del d["faults"]
    v = validity.of_arm(R(d), extender=True, scheduler_skipped=0, faults_expected=True)
    assert not v.valid and "did not happen as planned" in v.reason
    assert "ended before the fault came due" in v.reason
    # A kill that came once loadgen's run had ended hit nothing it measured.
    landed = Landed(Fault(kill="kube-scheduler", at="30%"), "at 30% of 40 pods bound (12)")
    landed.killed_wall, landed.since_first_pod, landed.bound = 1_000.5, 3.25, 16
    landed.repaired_seconds = 13.5
    late = landed.outcome(run_started_wall=992.0, run_ended_wall=998.0)
    assert not late.done and late.error == "it came after the run had ended"
    v = validity.of_arm(
        R(_faulted_doc(late)), extender=True, scheduler_skipped=0, faults_expected=True
    )
    assert not v.valid and "came after the run had ended" in v.reason


def test_calls_the_extender_missed_while_killed_are_the_faults_cost_not_an_invalid_arm() -> None:
    landed = Landed(Fault(kill="extender", at="30%"), "at 30% of 100 pods bound (30)")
    landed.killed_wall, landed.since_first_pod, landed.bound = 1_000.5, 3.25, 31
    landed.repaired_seconds = 1.5
    d = _faulted_doc(landed.outcome(970.0, 1_010.0), component="extender")
    v = validity.of_arm(R(d), extender=True, scheduler_skipped=12, faults_expected=True)
    assert v.valid and "ok under its fault" in v.reason and "skipped the extender 12" in v.reason
    # Another component's fault does not excuse skipped extender calls.
    other = _faulted_doc(d[fault_plan.KEY].model_copy(update={"kill": "etcd"}))
    assert not validity.of_arm(
        R(other), extender=True, scheduler_skipped=12, faults_expected=True
    ).valid


def test_a_process_restarted_by_the_fault_spends_the_sum_over_its_two_processes() -> None:
    span = process_cpu.Span(
        {"kube-scheduler": 100.0, "kube-controller-manager": 50.0, "etcd": 10.0},
        children=0.0,
        busy=0.0,
        started=0.0,
    )
    at_fault = {"kube-scheduler": 104.0, "kube-controller-manager": 53.0, "etcd": 12.0}
    # The killed scheduler's successor used 3 s; the controller manager died of the fault
    # (its CPU went down); etcd lived through it.
    after = {"kube-scheduler": 3.0, "kube-controller-manager": 1.5, "etcd": 14.0}
    spent = span.finish(
        after, children_as="loadgen", at_fault=at_fault, killed="kube-scheduler"
    ).cpu_seconds
    assert spent["kube-scheduler"] == 7.0
    assert spent["kube-controller-manager"] == 4.5
    assert spent["etcd"] == 4.0
    # Without the fault's reading, end minus start (what the figure would read mixed).
    assert span.finish(after, children_as="loadgen").cpu_seconds["kube-scheduler"] == -97.0
