"""Watch gaps: the tracker records when a watch was broken; reports mark them."""

from __future__ import annotations

from rich.console import Console

from loadgen import records, watch_gaps
from loadgen.records import WatchGap
from loadgen.report import console, document, html
from tests.support import synthetic_run as synthetic


def test_a_gap_runs_from_the_break_to_the_first_delivery_after_it() -> None:
    t = records.new("loadgen-r1")
    watch_gaps.watch_broke(t, "pods", "error", 10.0)
    watch_gaps.watch_broke(t, "pods", "error", 12.0)  # still down: the same gap
    watch_gaps.watch_broke(t, "pods", "gone", 12.0)  # came back too late to resume: relisted
    watch_gaps.watch_resumed(t, "pods", 15.0)
    assert t.watch_gaps == [WatchGap("pods", "gone", 10.0, 15.0)]
    assert "pods" not in t.broken and t.watch_restarts == 3


def test_a_stream_the_server_ended_on_its_timeout_is_no_gap() -> None:
    t = records.new("loadgen-r1")
    watch_gaps.watch_broke(t, "resourceclaims", "closed", 10.0)
    watch_gaps.watch_resumed(t, "resourceclaims", 10.2)
    assert t.watch_gaps == []


def test_a_watch_still_broken_at_the_end_is_a_gap_without_an_end() -> None:
    t = records.new("loadgen-r1")
    watch_gaps.watch_broke(t, "pods", "error", 10.0)
    watch_gaps.watch_resumed(t, "pods", None)  # what the tracker does for it when it stops
    assert t.watch_gaps == [WatchGap("pods", "error", 10.0, None)]


def test_reports_count_the_pods_whose_latencies_straddle_a_gap() -> None:
    res = synthetic.run_result(pods=10)  # pod i: created 100 + i/10, running one second later
    res.records.watch_gaps = [
        WatchGap("pods", "error", 101.05, 101.25),
        WatchGap("resourceslices", "gone", 101.45, None),
    ]
    doc = document.build(res)
    first, second = doc.watch_gaps
    assert (first.start_seconds, first.end_seconds, first.reason) == (1.05, 1.25, "error")
    assert first.pods_straddling == 9  # pods 1..9 run after 101.05; pod 0 ran at 101.0
    assert second.end_seconds is None and second.pods_straddling == 5  # running > 101.45
    assert document.ResultDoc.model_validate_json(doc.model_dump_json()) == doc

    page = html.render(doc)
    assert "Watch gaps" in page and page.count("#fecaca") == 3 * 2  # shaded, 3 timelines
    assert "pods watch broken from 1.1s to 1.2s (error); latencies of 9 pods" in page
    out = Console(record=True, width=200)
    console.render(doc, out)
    assert "resourceslices watch broken from 1.4s to the end" in out.export_text()


def test_a_run_without_gaps_reports_none() -> None:
    doc = document.build(synthetic.run_result())
    assert doc.watch_gaps == []
    assert "Watch gaps" not in html.render(doc)
