"""A run's explanation in its reports: the CPU table, a component that refused to be
profiled, a corrupt profile (one line, no traceback), the profiles kept beside the result."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from loadgen import cpu, outcome, report, scheduler_view
from loadgen.report import console, document, html
from tests.support import synthetic_run as synthetic
from tests.support.pprof_bytes import encode

REQUEUE = [
    "k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).isPodWorthRequeuing",
    "runtime.goexit",
]
GC = ["runtime.scanobject", "runtime.gcBgMarkWorker"]


def explained_run() -> outcome.RunResult:
    result = synthetic.run_result()
    good = encode([(REQUEUE, 90_000_000), (GC, 10_000_000)], duration_ns=5 * 10**9)
    result.profiles = {
        "scheduler": outcome.Profiled(
            slices=[
                outcome.ProfileSlice(0.0, 5.0, good),
                outcome.ProfileSlice(5.0, 10.0, b"\x1f\x8b\x08\x00truncated"),
            ]
        ),
        "apiserver": outcome.Profiled(
            not_profiled='HTTP 403: forbidden: User "x" cannot get path "/debug/pprof/profile"'
        ),
    }
    tl = scheduler_view.Timeline()
    tl.add(0.0, {"pending:gated": 0.0, "pending:active": 3.0, "attempts": 0.0})
    tl.add(2.0, {"pending:gated": 4.0, "pending:active": 1.0, "attempts": 5.0})
    tl.release = "v1.37.2"
    result.scheduler_view = tl
    return result


def test_the_document_carries_the_breakdown_and_says_what_it_could_not_read() -> None:
    doc = document.build(explained_run())
    e = doc.explanation
    assert e is not None and e.scheduler is not None
    assert e.scheduler.totals.pending_peak == {"active": 3.0, "gated": 4.0}
    s = e.cpu["scheduler"]
    assert s.profiled and s.coverage == 1.0
    assert s.shares()[cpu.QUEUE] == 0.9
    assert s.files == ["profiles/scheduler-000.pb.gz", "profiles/scheduler-001.pb.gz"]
    [bad] = s.unreadable
    assert bad.startswith("profiles/scheduler-001.pb.gz: not a gzip-compressed profile")
    a = e.cpu["apiserver"]
    assert not a.profiled and a.reason is not None and a.reason.startswith("HTTP 403")


def test_console_html_and_files(tmp_path: Path) -> None:
    result = explained_run()
    doc = report.write_all(result, tmp_path)
    assert (tmp_path / "profiles" / "scheduler-000.pb.gz").read_bytes().startswith(b"\x1f\x8b")
    assert document.load(tmp_path / "result.json").explanation == doc.explanation
    out = io.StringIO()
    console.render(doc, Console(file=out, width=400))
    text = out.getvalue()
    assert "where kube-scheduler's CPU went" in text and "queue and requeue 90.0 %" in text
    assert "kube-apiserver not profiled: HTTP 403" in text
    assert "kube-scheduler profile unreadable: profiles/scheduler-001.pb.gz" in text
    assert "Traceback" not in text
    page = html.render(doc)
    assert "kube-scheduler&#x27;s own view" in page or "kube-scheduler's own view" in page
    assert "pending pods by queue" in page and "queue and requeue" in page


def test_a_run_neither_scraped_nor_profiled_has_no_explanation() -> None:
    assert document.build(synthetic.run_result()).explanation is None
