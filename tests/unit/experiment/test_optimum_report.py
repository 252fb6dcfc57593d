"""The optimum section every report shows: medians over repeats, arms past a limit flagged,
arms not computed named, on the console, in the JSON and on the page."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from experiment import optimum_report, report_files
from experiment.arms import Arm
from experiment.oracle import arms as oracle_arms
from experiment.oracle import inputs
from experiment.oracle.solve import Bound


def _doc(measured: float, online: float, batch: float, *, optimal: bool = True) -> dict[str, Any]:
    figure = oracle_arms.Figure(
        "aligned 4 GPU + 4 NIC pods placed",
        "share",
        "max",
        measured,
        Bound("x", "max", batch, batch if optimal else batch * 1.1, optimal, 0.1),
        Bound("x", "max", online, online, True, 0.1),
    )
    return {"optimum": {"error": None, "figures": [figure.to_json()], "seconds": 0.1}}


def _results() -> list[tuple[Arm, dict[str, Any]]]:
    return [
        (Arm("alignment", "on", "file", repeat=0), _doc(0.9, 1.0, 1.0)),
        (Arm("alignment", "on", "file", repeat=1), _doc(0.7, 0.9, 1.0, optimal=False)),
        (Arm("alignment", "off", "file", repeat=0), _doc(0.95, 0.9, 1.0)),
        (Arm("alignment", "off", "file", repeat=1), {"optimum": {"error": "no", "figures": []}}),
    ]


def test_the_section_takes_medians_over_repeats_and_flags_an_arm_past_its_limit() -> None:
    section = optimum_report.section(_results())
    on = next(r for r in section["rows"] if r["arm"] == "on")
    assert on["repeats"] == 2
    assert on["measured"] == 0.8
    assert on["share_of_online"] == (0.9 + 0.7 / 0.9) / 2
    assert not on["proven_optimal"] and on["largest_gap"] > 0
    off = next(r for r in section["rows"] if r["arm"] == "off")
    assert "online" in off["beats"]["alignment-off-0"]
    assert section["not_computed"] == {"alignment-off-1": "no"}
    json.dumps(section, allow_nan=False)


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
        {"optimum": section},
        title="t",
        intro="",
        arms=[],
        invalid={},
        lead=[],
    )
    assert "Placement against the optimum" in page.read_text()


def test_an_arm_without_a_placement_question_gets_no_optimum(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "scenario": {"phases": [{"name": "p", "kind": "pods", "claim": {"gpus": 1}}]},
        "phases": [{"name": "p", "counts": {"expected_pods": 5, "pods_scheduled": 5}}],
    }

    def fleet() -> inputs.Fleet:
        raise AssertionError("the fleet is not read for an arm with no placement question")

    optimum_report.attach(doc, fleet, tmp_path, Console(file=io.StringIO()))
    assert "optimum" not in doc and not (tmp_path / optimum_report.FILE).exists()
