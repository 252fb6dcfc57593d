"""ClusterLoader2 PerfData files that perfdash reads.

`PodStartupLatency_<test>_<time>.json`: one data item per CL2 phase (Perc50/90/99, ms,
label Metric=<phase>). `SchedulingThroughput_<test>_<time>.json`: scheduler_perf's item
(Average/Perc50/90/95/99, pods/s). Multi-phase scenarios also get one pair per phase.
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
    version: Literal["1.0"]
    dataItems: list[DataItem]


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


def scheduling_throughput(t: Throughput) -> PerfData:
    return PerfData(
        version="1.0",
        dataItems=[
            DataItem(data=t.model_dump(), unit="pods/s", labels={"Metric": "SchedulingThroughput"})
        ],
    )


def write(doc: ResultDoc, out_dir: Path) -> list[Path]:
    """Write the PerfData files of `doc` into `out_dir`; returns their paths."""
    stamp = doc.started_at[:19] + "Z"  # RFC3339 to the second, as CL2 names them
    sets = [(doc.scenario["name"], doc.latency_ms, doc.throughput)]
    if len(doc.phases) > 1:
        sets += [
            (f"{doc.scenario['name']}-{p.name}", p.latency_ms, p.throughput) for p in doc.phases
        ]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for test, latency, throughput in sets:
        for summary, data in (
            ("PodStartupLatency", pod_startup(latency)),
            ("SchedulingThroughput", scheduling_throughput(throughput)),
        ):
            path = out_dir / f"{summary}_{test}_{stamp}.json"
            path.write_text(data.model_dump_json(indent=1) + "\n")
            paths.append(path)
    return paths
