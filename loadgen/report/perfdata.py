"""PerfData files that perfdash reads, named and shaped as their references write them.

ClusterLoader2's PodStartupLatency measurement (identifier `PodStartupLatency`) writes three
summaries, `<Summary>_<identifier>_<test>_<time>.json`: `PodStartupLatency_...` over every
pod and `StatelessPodStartupLatency_...` / `StatefulPodStartupLatency_...` split by whether
a pod has persistent volumes; version "1.0", one data item per phase (Perc50/90/99, ms,
label Metric=<phase>). loadgen's pods have no persistent volumes: the stateless summary is
every pod and the stateful one has no data items.

scheduler_perf writes `BenchmarkPerfScheduling_benchmark_<topic>_<time>.json` (version "v1"),
one SchedulingThroughput item per workload (Average/Perc50/90/95/99, pods/s, labels Name =
the workload, Metric = SchedulingThroughput); a workload without a throughput sample has no
item here (scheduler_perf's has no data either). Multi-phase scenarios add one set per phase.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from loadgen.report.document import ResultDoc, Summary, Throughput


class DataItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: dict[str, float]
    unit: str
    labels: dict[str, str]


class PerfData(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Literal["1.0", "v1"]
    """"1.0": ClusterLoader2's summaries; "v1": scheduler_perf's DataItems."""
    dataItems: list[DataItem]


IDENTIFIER = "PodStartupLatency"
"""The measurement identifier CL2's configs give PodStartupLatency (perfdash's prefix
`PodStartupLatency_PodStartupLatency_`)."""
STARTUP_SUMMARIES = ("PodStartupLatency", "StatelessPodStartupLatency", "StatefulPodStartupLatency")
TOPIC = "dra-testbed"
"""The scheduler_perf topic name in the throughput file's name."""


def pod_startup(latency_ms: dict[str, Summary]) -> PerfData:
    return PerfData(
        version="1.0",
        dataItems=[
            DataItem(
                data={"Perc50": s.Perc50, "Perc90": s.Perc90, "Perc99": s.Perc99},
                unit="ms",
                labels={"Metric": metric},
            )
            for metric, s in latency_ms.items()
        ],
    )


def scheduling_throughput(items: list[tuple[str, Throughput]]) -> PerfData:
    """scheduler_perf's DataItems: one SchedulingThroughput item per (workload name,
    throughput) that has a sample (all zeros: none was taken)."""
    return PerfData(
        version="v1",
        dataItems=[
            DataItem(
                data=t.model_dump(),
                unit="pods/s",
                labels={"Name": name, "Metric": "SchedulingThroughput"},
            )
            for name, t in items
            if any(t.model_dump().values())
        ],
    )


def write(doc: ResultDoc, out_dir: Path) -> list[Path]:
    """Write the PerfData files of `doc` into `out_dir`; returns their paths."""
    stamp = doc.started_at[:19] + "Z"  # RFC3339 to the second, as CL2 and scheduler_perf name them
    sets = [(str(doc.scenario["name"]), doc.latency_ms, doc.throughput)]
    if len(doc.phases) > 1:
        sets += [
            (f"{doc.scenario['name']}-{p.name}", p.latency_ms, p.throughput) for p in doc.phases
        ]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for test, latency, _ in sets:
        for summary in STARTUP_SUMMARIES:
            data = pod_startup({} if summary.startswith("Stateful") else latency)
            path = out_dir / f"{summary}_{IDENTIFIER}_{test}_{stamp}.json"
            path.write_text(data.model_dump_json(indent=1) + "\n")
            paths.append(path)
    throughput = scheduling_throughput([(test, t) for test, _, t in sets])
    path = out_dir / f"BenchmarkPerfScheduling_benchmark_{TOPIC}_{stamp}.json"
    path.write_text(throughput.model_dump_json(indent=1) + "\n")
    paths.append(path)
    return paths
