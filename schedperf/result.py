"""scheduler_perf runs as loadgen result files: one `result.json` (loadgen's schema, so
`loadgen compare` and the reports read it) and CL2 PerfData per repeat, the median repeat's
result beside them, and `repeats.json` listing every repeat.

Only what scheduler_perf measures is filled in: SchedulingThroughput (its own definition,
taken in-process) and the plugin and extension-point durations (under
`metrics["scheduler_perf"]`). Pod-startup latencies, claims and the timeline are loadgen's
watch-side figures, which scheduler_perf does not have: they stay empty, so a comparison
shows only rows both runs measured.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from loadgen.report import document, perfdata
from schedperf import runner, workloads
from schedperf.build import Build

SUMMARY_FILE: Final = "repeats.json"
DEFINITION: Final = (
    "scheduler_perf SchedulingThroughput, measured in-process by "
    "k8s.io/kubernetes/test/integration/scheduler_perf (imported as a library, "
    "RunBenchmarkPerfScheduling): pods scheduled per 1 s interval of the measured createPods "
    "step; average and nearest-rank percentiles of those rates (pods/s). No kubelet, kwok or "
    "HTTP extender: the API server, etcd and the scheduler run in one process."
)


def _rfc3339(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def machine(gomaxprocs: int | None) -> dict[str, Any]:
    """What the figures depend on besides the code: cores, GOMAXPROCS and the load."""
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "gomaxprocs": gomaxprocs if gomaxprocs is not None else os.cpu_count(),
        "load_average_1m_5m_15m": [round(v, 2) for v in load],
    }


def _empty_summary() -> document.Summary:
    return document.Summary(count=0, min=0, max=0, avg=0, Perc50=0, Perc90=0, Perc99=0)


def doc(
    outcome: runner.Outcome,
    selected: workloads.Selected,
    build: Build,
    run_id: str,
    settings: dict[str, Any],
) -> document.ResultDoc | None:
    """The result document of a run with a throughput sample; None without one."""
    figures = outcome.figures
    if figures is None or figures.throughput is None:
        return None
    pods = int(selected.params.get("pods") or selected.params.get("measurePods") or 0)
    nodes = int(selected.params.get("nodes") or selected.params.get("nodesWithDRA") or 0)
    counts = document.Counts(
        expected_pods=pods,
        objects_requested=0,
        objects_created=0,
        create_failures=0,
        create_retries=0,
        pods_seen=0,
        pods_scheduled=0,
        pods_running=0,
        pods_succeeded=0,
        pods_failed=0,
    )
    return document.ResultDoc(
        schema_version=document.SCHEMA_VERSION,
        kind="LoadgenResult",
        run_id=run_id,
        namespace="",
        scenario={
            # PerfData file names carry the scenario's name: no "/" in it.
            "name": selected.name.replace("/", "_"),
            "description": f"scheduler_perf {selected.benchmark} on Kubernetes "
            f"{build.kubernetes_version} (in-process)",
            "source": "scheduler_perf",
            "workload": selected.name,
            "benchmark": selected.benchmark,
            "params": dict(selected.params),
        },
        settings={
            **settings,
            "kubernetes": build.kubernetes_version,
            "etcd": build.etcd_version,
            "allocator": selected.allocator or "the release's default",
            "command": outcome.command,
        },
        started_at=_rfc3339(outcome.started),
        finished_at=_rfc3339(outcome.started + outcome.seconds),
        duration_seconds=round(outcome.seconds, 3),
        interrupted=False,
        error=None,
        cleaned_up=True,
        fleet=document.Fleet(nodes=nodes, gpus=0, peak_gpus_allocated=0, peak_allocation_ratio=0),
        counts=counts,
        latency_ms={},
        throughput=document.Throughput(**figures.throughput),
        phases=[],
        claims=document.Claims(
            claims=0,
            allocated=0,
            allocation_ms=_empty_summary(),
            with_nics=0,
            gpu_nic_pairs=0,
            pcie_aligned_pairs=0,
            numa_aligned_pairs=0,
            fully_pcie_aligned_claims=0,
        ),
        gangs=[],
        timeline=document.Timeline(
            seconds=[], seen=[], scheduled=[], running=[], finished=[], gpu_allocation_ratio=[]
        ),
        cdf_ms={},
        server_check=document.ServerCheck(checked=0, violations=0),
        slos=[],
        watch_restarts=0,
        metrics={
            "scheduler_perf": document.ComponentMetrics(summary=dict(figures.durations), deltas={})
        },
        definitions={"throughput": DEFINITION},
    )


def write_run(result: document.ResultDoc, out_dir: Path) -> Path:
    """`result.json`, its schema and the PerfData files in `out_dir`."""
    path = document.write(result, out_dir)
    perfdata.write(result, out_dir)
    return path


@dataclass(frozen=True)
class Repeat:
    dir: Path
    outcome: runner.Outcome
    result: document.ResultDoc | None


def median(repeats: list[Repeat]) -> Repeat | None:
    """The repeat with the median throughput Average (the lower one of an even count), so
    its percentiles come from one real run; None when no repeat has a sample."""
    with_data = sorted(
        (r for r in repeats if r.result is not None),
        key=lambda r: r.result.throughput.Average if r.result else 0.0,
    )
    return with_data[(len(with_data) - 1) // 2] if with_data else None


def write_summary(
    repeats: list[Repeat], selected: workloads.Selected, build: Build, out_dir: Path
) -> Repeat | None:
    """`repeats.json` and, when a repeat has a sample, the median repeat's files copied to
    `out_dir` (its `result.json` is the one to compare)."""
    chosen = median(repeats)
    summary = {
        "kind": "SchedulerPerfRepeats",
        "workload": selected.name,
        "benchmark": selected.benchmark,
        "kubernetes": build.kubernetes_version,
        "median_run": chosen.dir.name if chosen else None,
        "repeats": [
            {
                "run": r.dir.name,
                "throughput": r.result.throughput.model_dump() if r.result else None,
                "problem": r.outcome.problem,
                "seconds": round(r.outcome.seconds, 1),
            }
            for r in repeats
        ],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    if chosen is not None:
        for f in chosen.dir.glob("*.json"):
            shutil.copy2(f, out_dir / f.name)
    return chosen
