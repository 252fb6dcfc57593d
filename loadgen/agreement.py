"""How far loadgen's pod startup figures are from ClusterLoader2's over the same pods.

`loadgen observe` and CL2's PodStartupLatency watch the same pods, each stamping every event
with its own client's receive time and taking nearest-rank percentiles, so their figures
should differ only by the two clients' delivery and processing delays. The target: for
create_to_schedule, schedule_to_run and pod_startup, at p50, p90 and p99, loadgen within
max(20 ms, 5 % of CL2's figure) of CL2.

    cl2 = agreement.cl2_pod_startup(json.loads(path.read_text()))
    table = agreement.rows("Churn", doc.latency_ms, cl2)
    met = agreement.met(table)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from loadgen.report import perfdata
from loadgen.report.document import Summary

TOLERANCE_MS: Final = 20.0
TOLERANCE_SHARE: Final = 0.05
PHASES: Final = ("create_to_schedule", "schedule_to_run", "pod_startup")
STATS: Final = ("Perc50", "Perc90", "Perc99")
# CL2 names a PodStartupLatency summary `PodStartupLatency_<identifier>_<test>_<time>.json`
# (and writes Stateless.../Stateful... copies filtered by volume kind, which we skip).
_SUMMARY: Final = "PodStartupLatency_"


def allowed_ms(cl2_ms: float) -> float:
    """The largest difference that still agrees with CL2's figure `cl2_ms`."""
    return max(TOLERANCE_MS, TOLERANCE_SHARE * abs(cl2_ms))


@dataclass(frozen=True)
class Row:
    measurement: str
    """CL2's measurement identifier (e.g. FastFillPodStartupLatency)."""
    phase: str
    stat: str
    ours: float | None
    """loadgen's figure, ms (None: loadgen has no such phase)."""
    cl2: float | None
    """CL2's figure, ms (None: CL2's file lacks it)."""

    @property
    def diff(self) -> float | None:
        if self.ours is None or self.cl2 is None:
            return None
        return self.ours - self.cl2

    @property
    def allowed(self) -> float:
        return allowed_ms(self.cl2 or 0.0)

    @property
    def ok(self) -> bool:
        """Within tolerance; a figure missing on either side never agrees."""
        return self.diff is not None and abs(self.diff) <= self.allowed


def cl2_pod_startup(document: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """CL2's PerfData of a PodStartupLatency summary as {phase: {Perc50, Perc90, Perc99}} in
    ms (pydantic.ValidationError when it is not PerfData)."""
    data = perfdata.PerfData.model_validate(document)
    out: dict[str, dict[str, float]] = {}
    for item in data.dataItems:
        metric = item.labels.get("Metric")
        if metric is None or item.unit != "ms":
            continue
        out[metric] = {stat: item.data[stat] for stat in STATS if stat in item.data}
    return out


def cl2_summaries(names: Iterable[str]) -> dict[str, str]:
    """Among CL2's report file names, the PodStartupLatency summary of each measurement:
    {identifier: file name}. The newest wins when a measurement was gathered twice."""
    out: dict[str, str] = {}
    for name in sorted(names):
        if not (name.startswith(_SUMMARY) and name.endswith(".json")):
            continue
        identifier = name[len(_SUMMARY) :].split("_", 1)[0]
        if identifier:
            out[identifier] = name
    return out


def rows(
    measurement: str,
    ours: Mapping[str, Summary],
    cl2: Mapping[str, Mapping[str, float]],
) -> list[Row]:
    """Each phase and percentile of the target, loadgen's figure beside CL2's."""
    out = []
    for phase in PHASES:
        mine, theirs = ours.get(phase), cl2.get(phase, {})
        for stat in STATS:
            out.append(
                Row(
                    measurement,
                    phase,
                    stat,
                    float(getattr(mine, stat)) if mine is not None and mine.count else None,
                    theirs.get(stat),
                )
            )
    return out


def met(table: Iterable[Row]) -> bool:
    """Every row within tolerance (and at least one row)."""
    checked = list(table)
    return bool(checked) and all(r.ok for r in checked)
