"""An arm's record (`experiment.measure.arm_record`): built from loadgen's result parsed by its own
schema plus the engine's fields, kept beside the result, read back (the older directory shape
too), and loud when loadgen's schema moves under it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pydantic
import pytest

from experiment.measure import accounting, arm_record, fault_plan, figures, validity

KEPT = (
    Path(__file__).parents[3]
    / "bench"
    / "results"
    / "demo-align-100x3-20261122T2158"
    / "alignment-on-0.json"
)
CPU = arm_record.ProcessCpu(
    covers="the site", pods=10, cpu_seconds={"etcd": 0.5}, busy_cores=1.0, wall_seconds=3.0
)
FAULT = fault_plan.Outcome(kill="etcd", at="20s", planned="20 s after the first pod", done=True)
BOUND = {
    "objective": "x",
    "sense": "max",
    "value": 1.0,
    "bound": 1.0,
    "optimal": True,
    "seconds": 0.1,
    "gap": 0.0,
}
FIGURE = {
    "metric": "m",
    "unit": "share",
    "sense": "max",
    "measured": 1,
    "batch": BOUND,
    "online": None,
    "share_of_online": None,
    "share_of_batch": 1.0,
    "beats": "",
}


def _arm_dir(tmp_path: Path) -> Path:
    arm_dir = tmp_path / "alignment-on-0"
    arm_dir.mkdir()
    shutil.copy(KEPT, arm_dir / arm_record.RESULT)
    return arm_dir


def test_a_kept_result_is_parsed_once_and_read_by_attribute() -> None:
    rec = arm_record.build(KEPT.read_text())
    assert isinstance(rec.result, arm_record.ResultDoc)
    assert rec.scenario is not None and rec.scenario.phases  # loadgen's own scenario model
    placed = figures.metric("aligned 8 GPU + 8 NIC pods placed")[2](rec)
    assert placed is not None and 0 < placed <= 1
    assert accounting.accounted(rec)[0]  # its probes (`wait: settled`) say so themselves


def test_the_record_is_kept_beside_the_result_and_read_back_whole(tmp_path: Path) -> None:
    arm_dir = _arm_dir(tmp_path)
    rec = arm_record.build(
        arm_record.read_result(arm_dir / arm_record.RESULT),
        process_cpu=CPU,
        fault=FAULT,
        optimum=arm_record.Optimum(error="too large", figures=[]),
        validity=validity.Validity(False, "not as labelled", 0.5),
    )
    arm_record.write(rec, arm_dir)
    kept = json.loads((arm_dir / arm_record.FILE).read_text())
    assert kept["kind"] == "ArmRecord" and "counts" not in kept  # loadgen's result not copied
    # the optimum as the runner gave it: no seconds where the oracle failed outright
    assert kept["optimum"] == {"error": "too large", "figures": []}
    back = arm_record.load(arm_dir)
    assert back.result == rec.result
    assert (back.process_cpu, back.fault, back.optimum, back.validity) == (
        rec.process_cpu,
        rec.fault,
        rec.optimum,
        rec.validity,
    )
    assert back.optimum_error == "too large" and back.optimum_figures == []


def test_a_directory_written_before_records_reads_its_optimum_and_fault_files(
    tmp_path: Path,
) -> None:
    arm_dir = _arm_dir(tmp_path)
    optimum = {"error": None, "figures": [FIGURE], "seconds": 0.1}
    (arm_dir / arm_record.OPTIMUM).write_text(json.dumps(optimum))
    (arm_dir / arm_record.FAULT).write_text(FAULT.model_dump_json())
    rec = arm_record.load(arm_dir)
    assert rec.optimum is not None and rec.fault == FAULT
    assert rec.process_cpu is None and rec.validity is None  # never on disk then: unknown
    [figure] = rec.optimum_figures
    assert (figure.metric, figure.measured, figure.online, figure.batch.value) == ("m", 1, None, 1)
    assert rec.optimum_error is None
    # read back to the same JSON: the int stays an int, no key is added
    assert json.dumps(rec.optimum.model_dump()) == json.dumps(optimum)
    # and a key it does not know is refused, never dropped
    (arm_dir / arm_record.OPTIMUM).write_text(json.dumps({**optimum, "solver": "HiGHS"}))
    with pytest.raises(pydantic.ValidationError, match="solver"):
        arm_record.load(arm_dir)


def test_nothing_writes_into_the_record() -> None:
    rec = arm_record.build(KEPT.read_text())
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.optimum = None  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        CPU.pods = 0  # type: ignore[misc]


def test_a_field_loadgen_renamed_fails_at_load_never_reads_as_none() -> None:
    doc = json.loads(KEPT.read_text())
    # as if loadgen renamed `counts.pods_scheduled` (a figure read it with .get: None, silently)
    doc["counts"]["pods_placed"] = doc["counts"].pop("pods_scheduled")
    with pytest.raises(pydantic.ValidationError, match=r"counts\.pods_scheduled"):
        arm_record.build(doc)
    # a phase of its scenario renamed likewise: loadgen's own scenario model refuses it
    doc = json.loads(KEPT.read_text())
    doc["scenario"]["phases"][0]["waits"] = doc["scenario"]["phases"][0].pop("wait", "running")
    with pytest.raises(pydantic.ValidationError, match="waits"):
        _ = arm_record.build(doc).scenario


def test_a_modelled_result_fills_what_it_leaves_out_and_validates_what_it_gives() -> None:
    rec = arm_record.modelled({"throughput": {"Average": 12.0}}, process_cpu=CPU)
    assert figures.metric("scheduling throughput")[2](rec) == 12.0
    assert figures.metric(figures.PATH_CPU)[2](rec) == pytest.approx(0.5 / 10 * 1000)
    assert rec.scenario is None and rec.result.counts.pods_scheduled == 0
    with pytest.raises(pydantic.ValidationError):
        arm_record.modelled({"throughput": {"Average": "fast"}})
