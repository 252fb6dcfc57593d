"""A restart as a fact of the run's result: in result.json with its time, in the console and
the HTML report once each; a partial component gives no number; a result written before
these fields existed still loads, as a run without faults."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from loadgen import segments
from loadgen.report import console, document, html
from tests.support import synthetic_run as synthetic

ATTEMPTS = 'scheduler_schedule_attempts_total{profile="p",result="scheduled"}'
START = segments.START_TIME


def _restarted_run() -> document.ResultDoc:
    result = synthetic.run_result()
    origin = result.started_wall
    scheduler = segments.Component("scheduler", origin_wall=origin, max_gap=12.0)
    scheduler.answered(0.0, {START: origin - 60, ATTEMPTS: 100.0})
    scheduler.answered(2.0, {START: origin - 60, ATTEMPTS: 150.0})
    scheduler.failed(4.0, "connection refused")
    scheduler.answered(6.0, {START: origin + 5.0, ATTEMPTS: 30.0})
    apiserver = segments.Component("apiserver", origin_wall=origin, max_gap=20.0)
    apiserver.answered(0.0, {START: origin - 60, "apiserver_request_total": 10.0})
    apiserver.answered(60.0, {START: origin + 50, "apiserver_request_total": 3.0})
    extender = segments.Component("extender", origin_wall=origin, max_gap=12.0)
    for at in (0.0, 2.0, 4.0):
        extender.failed(at, "http://127.0.0.1:8888/metrics: connection refused")
    result.components = {c.name: c for c in (scheduler, apiserver, extender)}
    result.metrics = {n: c.deltas() for n, c in result.components.items() if c.processes}
    return document.build(result)


def test_a_restart_is_in_the_result_with_its_time_and_the_figures_over_both_processes() -> None:
    doc = _restarted_run()
    restarts = {(r.component, r.started_seconds) for r in doc.faults.restarts}
    assert restarts == {("scheduler", 5.0), ("apiserver", 50.0)}
    assert doc.metrics["scheduler"].summary["schedule_attempts"] == 50 + 30
    assert doc.metrics["scheduler"].processes == 2
    # The API server was not scraped for the 50 s before its restart: partial, no number.
    api = doc.metrics["apiserver"]
    assert api.partial and "api_requests" not in api.summary
    assert doc.faults.partial == ["apiserver", "extender"]


def test_each_fact_is_said_once_in_the_console_and_the_html_report(tmp_path: Path) -> None:
    doc = _restarted_run()
    con = Console(record=True, width=300)
    console.render(doc, con)
    text = con.export_text()
    assert text.count("kube-scheduler restarted 5.0s into the run") == 1
    assert text.count("extender: no scrape answered in 3 tries") == 1
    assert "apiserver over the run: partial" in text
    assert "scheduler over the run: schedule attempts 80 (summed over 2 processes)" in text
    page = html.render(doc, plotly_src="plotly.js")
    assert "Restarts and scrapes" in page and "kube-scheduler restarted 5.0s" in page


def test_a_result_written_before_faults_were_recorded_still_loads(tmp_path: Path) -> None:
    raw = json.loads(document.build(synthetic.run_result()).model_dump_json())
    del raw["faults"]
    for m in raw["metrics"].values():
        for key in ("processes", "partial", "spans_processes"):
            m.pop(key, None)
    (tmp_path / "result.json").write_text(json.dumps(raw))
    old = document.load(tmp_path / "result.json")
    assert old.faults.restarts == [] and old.faults.lines() == []
