"""The optimum section every report shows: medians over repeats, arms past a limit flagged,
arms not computed named, on the console, in the JSON and on the page."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from experiment.measure import arm_record, intervals
from experiment.measure.arms import Arm
from experiment.oracle import arms as oracle_arms
from experiment.oracle import inputs, optimum_report
from experiment.oracle.solve import Bound
from experiment.report import report_files


def R(doc: dict[str, Any]) -> arm_record.ArmRecord:
    """An arm's record of a result given in part (the rest zero), with its `optimum`."""
    optimum = arm_record.Optimum.model_validate(doc["optimum"]) if "optimum" in doc else None
    return arm_record.modelled({k: v for k, v in doc.items() if k != "optimum"}, optimum=optimum)


def _doc(
    measured: float, online: float, batch: float, *, optimal: bool = True
) -> arm_record.ArmRecord:
    figure = oracle_arms.Figure(
        "aligned 4 GPU + 4 NIC pods placed",
        "share",
        "max",
        measured,
        Bound("x", "max", batch, batch if optimal else batch * 1.1, optimal, 0.1),
        Bound("x", "max", online, online, True, 0.1),
    )
    return R({"optimum": {"error": None, "figures": [figure.record()], "seconds": 0.1}})


def _results() -> list[tuple[Arm, arm_record.ArmRecord]]:
    return [
        (Arm("alignment", "on", "file", repeat=0), _doc(0.9, 1.0, 1.0)),
        (Arm("alignment", "on", "file", repeat=1), _doc(0.7, 0.9, 1.0, optimal=False)),
        (Arm("alignment", "off", "file", repeat=0), _doc(0.95, 0.9, 1.0)),
        (Arm("alignment", "off", "file", repeat=1), R({"optimum": {"error": "no", "figures": []}})),
    ]


def test_the_section_takes_medians_over_repeats_and_flags_an_arm_past_its_limit() -> None:
    section = optimum_report.section(_results())
    on = next(r for r in section.rows if r.arm == "on")
    assert on.repeats == 2
    assert on.measured == 0.8
    assert on.share_of_online == (0.9 + 0.7 / 0.9) / 2
    assert not on.proven_optimal and on.largest_gap > 0
    off = next(r for r in section.rows if r.arm == "off")
    assert "online" in off.beats["alignment-off-0"]
    assert section.not_computed == {"alignment-off-1": "no"}
    json.dumps(section.to_json(), allow_nan=False)


def test_console_and_page_show_the_section(tmp_path: Path) -> None:
    section = optimum_report.section(_results())
    out = io.StringIO()
    optimum_report.console_table(section, Console(file=out, width=200))
    text = out.getvalue()
    assert "placement against the optimum" in text
    assert "alignment-off-0" in text and "beats the online optimum" in text
    page = report_files.write(
        tmp_path,
        "x.json",
        {"optimum": section.to_json()},
        title="t",
        intro="",
        arms=[],
        invalid={},
        lead=[],
    )
    assert "Placement against the optimum" in page.read_text()


def test_an_arm_without_a_placement_question_gets_no_optimum(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "scenario": {
            "name": "s",
            "phases": [{"name": "p", "kind": "pods", "count": 5, "claim": {"gpus": 1}}],
        },
        "phases": [{"name": "p", "counts": {"expected_pods": 5, "pods_scheduled": 5}}],
    }

    def fleet() -> inputs.Fleet:
        raise AssertionError("the fleet is not read for an arm with no placement question")

    got = optimum_report.compute(R(doc), fleet, tmp_path, Console(file=io.StringIO()))
    assert got is None and not (tmp_path / optimum_report.FILE).exists()


def _gang_doc(blocks: list[int], best: float) -> arm_record.ArmRecord:
    measured = sum(blocks) / len(blocks)
    bound = Bound("x", "min", best, best, True, 0.1)
    figure = oracle_arms.Figure("blocks spanned per gang", "blocks", "min", measured, bound, bound)
    gangs = [{"name": f"g{i}", "pods": 4, "blocks": b, "racks": b} for i, b in enumerate(blocks)]
    return R({"gangs": gangs, "optimum": {"error": None, "figures": [figure.record()]}})


def test_the_share_interval_pairs_each_repeat_with_its_own_optimum() -> None:
    # repeats given out of order: the section puts them in repeat order
    results = [
        (Arm("gang-4", "extender", "gang", repeat=2), _gang_doc([2, 2], 1.0)),
        (Arm("gang-4", "extender", "gang", repeat=0), _gang_doc([2, 1], 1.0)),
        (Arm("gang-4", "extender", "gang", repeat=1), _gang_doc([3, 3], 1.5)),
    ]
    section = optimum_report.section(results)
    [row] = section.rows
    # a figure to keep low: each share is the optimum over the arm's
    assert row.shares_of_online == [1.0 / 1.5, 1.5 / 3.0, 1.0 / 2.0]
    want = intervals.ratio_interval([1.0, 1.5, 1.0], [1.5, 3.0, 2.0])
    assert want is not None and row.interval_online is not None
    assert row.interval_online.model_dump() == {
        "low": want.low,
        "high": want.high,
        "point": want.point,
    }
    geometric_mean = (1 / 1.5 * 0.5 * 0.5) ** (1 / 3)
    assert row.interval_online.point == pytest.approx(geometric_mean)
    assert row.interval_online.low < geometric_mean < row.interval_online.high
    # every repeat short of 95 %: its gangs over the optimum's blocks are named
    lost = section.losses["gang-4-extender-1"][0]
    assert [d.decision for d in lost.decisions] == [
        "gang g0 (4 pods) over 3 blocks",
        "gang g1 (4 pods) over 3 blocks",
    ]
    out = io.StringIO()
    optimum_report.console_table(section, Console(file=out, width=250))
    text = out.getvalue()
    assert "[" in text and "arm gang-4-extender-1: blocks spanned per gang at 50.0%" in text
    json.dumps(section.to_json(), allow_nan=False)


def test_one_repeat_or_a_repeat_at_zero_gets_no_interval() -> None:
    one = optimum_report.section([(Arm("g", "a", "gang", repeat=0), _gang_doc([2], 1.0))])
    assert one.rows[0].interval_online is None
    stranded = oracle_arms.Figure(
        oracle_arms.STRANDED,
        "GPUs",
        "min",
        0.0,
        Bound("x", "min", 0.0, 0.0, True, 0.1),
        Bound("x", "min", 0.0, 0.0, True, 0.1),
    ).record()
    docs = [
        (Arm("f", "on", "x", repeat=r), R({"optimum": {"error": None, "figures": [stranded]}}))
        for r in range(2)
    ]
    # none stranded, none possible: a share of 1 in every repeat, an interval of [1, 1]
    row = optimum_report.section(docs).rows[0]
    assert row.interval_online == optimum_report.ShareInterval(low=1.0, high=1.0, point=1.0)


# -- old documents: the typed section reads and writes them as they were --------------------------

GOLDEN = json.loads((Path(__file__).parent / "golden" / "optimum_sections.json").read_text())
"""Optimum sections as the engine wrote them before it typed them (a kept run's; one written
before `losses`; one with an arm past its limit, one not computed and a gap; gangs short of
the optimum; one written before its note, shares and intervals were), each with the console
table and page section the engine drew from it then; and arms' `optimum.json` documents."""
ROOT = Path(__file__).parents[3]
SECTIONS = GOLDEN.keys() - {"arm_optima"}


def _text(doc: Any) -> str:
    return json.dumps(doc, indent=1, allow_nan=False)


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_an_old_section_reads_back_to_the_same_json(name: str) -> None:
    old = GOLDEN[name]["optimum"]
    assert _text(optimum_report.Section.model_validate(old).to_json()) == _text(old)


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_an_old_section_draws_the_same_table_and_page(name: str) -> None:
    golden = GOLDEN[name]
    section = optimum_report.read({"optimum": golden["optimum"]})
    out = io.StringIO()
    optimum_report.console_table(section, Console(file=out, width=200))
    assert out.getvalue().splitlines() == golden["console"]
    drawn = optimum_report.html_sections({"optimum": golden["optimum"]})
    assert [p for s in drawn for p in [s.heading, *s.parts]] == golden["page"]


def test_a_section_written_before_a_key_reads_as_the_key_did() -> None:
    old = optimum_report.read({"optimum": GOLDEN["old_shape"]["optimum"]})
    assert old.note == "" and old.losses == {}
    assert all(r.shares_of_online == [] and r.interval_online is None for r in old.rows)
    assert optimum_report.read({}) == optimum_report.Section()
    assert optimum_report.read({"optimum": None}).rows == []


def test_an_arms_optimum_reads_back_to_the_same_json() -> None:
    for old in GOLDEN["arm_optima"]:
        assert _text(arm_record.Optimum.model_validate(old).model_dump()) == _text(old)
    # and as the arm's record keeps it, in arm.json
    optimum = arm_record.Optimum.model_validate(GOLDEN["arm_optima"][0])
    assert json.loads(optimum.model_dump_json()) == GOLDEN["arm_optima"][0]


def test_the_oracle_writes_an_arms_optimum_as_it_did() -> None:
    figures = [
        oracle_arms.Figure(
            "aligned 4 GPU + 4 NIC pods placed",
            "share",
            "max",
            0.9,
            Bound("x", "max", 1.0, 1.1, False, 0.25),
            Bound("x", "max", 0.95, 0.95, True, 0.1),
        ),
        oracle_arms.Figure(
            oracle_arms.STRANDED, "GPUs", "min", 12, Bound("x", "min", 3.0, 2.0, False, 30.0), None
        ),
        oracle_arms.Figure(
            "blocks spanned per gang",
            "blocks",
            "min",
            None,
            Bound("x", "min", 1.0, 1.0, True, 0.1),
            Bound("x", "min", 1.0, 1.0, True, 0.1),
        ),
    ]
    optimum = arm_record.Optimum(
        error=None,
        figures=[f.record() for f in figures],
        seconds=1.25,
        definitions=oracle_arms.DEFINITIONS,
    )
    assert _text(optimum.model_dump()) == _text(GOLDEN["arm_optima"][0])


RUNS = ROOT / "bench" / "results"
KEPT_RUNS = sorted(
    p
    for pattern in ("*/experiment.json", "*/demo.json", "optimum-*.json")
    for p in RUNS.glob(pattern)
    if "optimum" in json.loads(p.read_text())
)
"""The runs kept in the repository with an optimum section (run files, and sections
`bench/oracle_scale.py --output` wrote)."""


@pytest.mark.parametrize("path", KEPT_RUNS, ids=lambda p: str(p.relative_to(RUNS)))
def test_every_kept_runs_section_reads_back_to_the_same_json(path: Path) -> None:
    doc = json.loads(path.read_text())
    assert _text(optimum_report.read(doc).to_json()) == _text(doc["optimum"])
