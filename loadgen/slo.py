"""`--slo pod_startup.p99=5s` thresholds, checked against a result (like kube-burner's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from loadgen import stats
from loadgen.scenarios.model import parse_duration

_STAT = {"p50": "Perc50", "p90": "Perc90", "p99": "Perc99", "avg": "avg", "max": "max"}
_SPEC = re.compile(r"^([a-z_]+)\.(p50|p90|p99|avg|max)=(.+)\Z")


@dataclass(frozen=True)
class Slo:
    metric: str
    """A CL2 latency phase, e.g. pod_startup."""
    stat: str
    """p50, p90, p99, avg or max."""
    threshold_ms: float

    @property
    def text(self) -> str:
        return f"{self.metric}.{self.stat} <= {self.threshold_ms:g}ms"


def parse(spec: str) -> Slo:
    """`pod_startup.p99=5s` -> Slo; ValueError with a one-line reason otherwise."""
    m = _SPEC.match(spec.strip())
    if not m:
        raise ValueError(f"--slo {spec!r}: expected PHASE.STAT=DURATION like pod_startup.p99=5s")
    metric, stat, value = m.groups()
    if metric not in stats.PHASES:
        known = ", ".join(stats.PHASES)
        raise ValueError(f"--slo {spec!r}: unknown phase {metric} (known: {known})")
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise ValueError(f"--slo {spec!r}: {e}") from None
    return Slo(metric, stat, seconds * 1000.0)


def check(slo: Slo, latency_ms: dict[str, dict[str, float]]) -> tuple[float, bool]:
    """The measured value and whether it is within the threshold (no samples: violated)."""
    summary = latency_ms.get(slo.metric) or {}
    if not summary.get("count"):
        return 0.0, False
    value = summary[_STAT[slo.stat]]
    return value, value <= slo.threshold_ms
