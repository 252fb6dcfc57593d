"""scheduler_perf's DataItems JSON (`BenchmarkPerfScheduling_benchmark_<topic>_<time>.json`),
read into plain figures (pure).

The file holds one item per metric and workload: `SchedulingThroughput` (pods/s: Average,
Perc50/90/95/99 of per-second rates) and latency histograms such as
`scheduler_framework_extension_point_duration_seconds` (ms, one item per extension point)
and `scheduler_plugin_execution_duration_seconds` (one per plugin and extension point).
A workload that scheduled too few pods to take a sample has an item without a Metric label
and without data: that is no data, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

THROUGHPUT: Final = "SchedulingThroughput"
THROUGHPUT_STATS: Final = ("Average", "Perc50", "Perc90", "Perc95", "Perc99")
# Labels scheduler_perf fills with "not applicable" on items they do not describe.
_NOT_APPLICABLE: Final = "not applicable"
# Labels that name what an item measures, in the order they appear in a figure's key.
_KEY_LABELS: Final = ("extension_point", "plugin", "result", "event")


class DataItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    data: dict[str, float] | None = None
    unit: str = ""
    labels: dict[str, str] = {}


class DataItems(BaseModel):
    model_config = ConfigDict(extra="ignore")
    version: str
    dataItems: list[DataItem] | None = None


class DataItemsError(ValueError):
    """The file is not scheduler_perf's DataItems JSON."""


@dataclass(frozen=True)
class Figures:
    """What one workload's items say."""

    throughput: dict[str, float] | None
    """Average, Perc50/90/95/99 (pods/s); None when the run took no sample."""
    durations: dict[str, float] = field(default_factory=dict)
    """`<metric>{<label>=<value>,...}/<stat>` -> value in the item's unit (ms for the
    latency histograms), e.g. `scheduler_framework_extension_point_duration_seconds
    {extension_point=Filter}/Perc99`."""
    units: dict[str, str] = field(default_factory=dict)
    """The unit of each metric named in `durations`."""


def parse(text: str) -> DataItems:
    try:
        return DataItems.model_validate_json(text)
    except ValidationError as e:
        raise DataItemsError(str(e).splitlines()[0]) from None


def _key(item: DataItem) -> str:
    labels = [
        f"{k}={item.labels[k]}"
        for k in _KEY_LABELS
        if item.labels.get(k, _NOT_APPLICABLE) != _NOT_APPLICABLE
    ]
    metric = item.labels.get("Metric", "")
    return f"{metric}{{{','.join(labels)}}}" if labels else metric


def figures(items: DataItems, benchmark: str) -> Figures:
    """The figures of the workload whose benchmark name is `benchmark`
    (`BenchmarkPerfScheduling/<test case>/<workload>`); its items' Name label is that name
    with the measured namespace appended. The first throughput item counts (DRA workloads
    measure one namespace)."""
    throughput: dict[str, float] | None = None
    durations: dict[str, float] = {}
    units: dict[str, str] = {}
    prefix = benchmark + "/"
    for item in items.dataItems or []:
        name = item.labels.get("Name", "")
        if name != benchmark and not name.startswith(prefix):
            continue
        metric = item.labels.get("Metric")
        if not metric or not item.data:
            continue
        if metric == THROUGHPUT:
            if throughput is None:
                throughput = {s: float(item.data.get(s, 0.0)) for s in THROUGHPUT_STATS}
            continue
        key = _key(item)
        units[metric] = item.unit
        for stat, value in item.data.items():
            durations[f"{key}/{stat}"] = float(value)
    return Figures(throughput=throughput, durations=durations, units=units)
