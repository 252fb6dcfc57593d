"""An arm: one loadgen run of one variant on one workload, and the rule for its unsaturated
latency follow-up (pure).

Every planner (a file's variants x workloads in `matrix`, a wing's built-in comparisons)
hands the runner `Arm`s; the reports group them by comparison and variant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SCHEDULER = "extender"
"""The scheduler key of an arm that names none: the cluster's own scheduler, which calls the
extender."""


@dataclass(frozen=True)
class Arm:
    comparison: str
    variant: str
    scenario: str
    """A loadgen scenario name, or a scenario file written into the run directory."""
    params: dict[str, str] = field(default_factory=dict)
    scheduler: str = DEFAULT_SCHEDULER
    """The key of the scheduler it runs on (`wing.Planner.setups`); "" for an arm that runs
    on none of the site's (`harness`)."""
    scenario_doc: dict[str, Any] | None = None
    repeat: int = 0
    fleet_nodes: int = 0
    """Fleet size this arm needs (0: the experiment's); the runner resizes the fleet first."""
    same_as: str = ""
    """An earlier arm of the same repeat that runs exactly this (e.g. extender off = DRA
    claims on the plain scheduler): its result is reused rather than measured twice."""
    latency_of: str = ""
    """Set on a latency arm: the throughput arm just before it, whose sustained rate sets this
    arm's Poisson arrival rate (`latency_rate`), so pod startup is service time, not
    queueing."""
    harness: str = "loadgen"
    """What runs the arm: loadgen on the site's cluster, or `in_process.HARNESS` (scheduler_perf
    in-process: no scheduler of the site's, no fleet)."""
    fleet: str = ""
    """A fleet variant this arm needs: the runner applies the planner's fleet for it first
    ("" is the experiment's fleet as is; fleet touches only the difference, so consecutive
    arms of one variant apply it once)."""

    @property
    def name(self) -> str:
        suffix = "-latency" if self.latency_of else ""
        return f"{self.comparison}-{self.variant}-{self.repeat}{suffix}"

    @property
    def measure(self) -> str:
        return "latency" if self.latency_of else "throughput"

    @property
    def run_key(self) -> tuple[object, ...]:
        """What the arm runs, where and how: equal keys measure the same thing."""
        doc = json.dumps(self.scenario_doc, sort_keys=True)
        params = tuple(sorted(self.params.items()))
        return (
            self.repeat,
            self.scenario,
            params,
            self.scheduler,
            doc,
            self.fleet_nodes,
            self.measure,
            self.fleet,
            self.harness,
        )


LATENCY_LOAD = 0.5
"""A latency arm's Poisson rate as a share of the rate its throughput arm sustained..."""
LATENCY_MAX_QPS = 2.0
"""...and at most this many pods/s. Half the sustained rate still queued: at 1,000 nodes
(DRA sustains 10-16 pods/s, so 5-8 pods/s) startup p50 stayed far above the service time, and
at 50 nodes one arm of eight at 2.6 pods/s reached p90 31 s while the arms at 1.9-2.6 pods/s
stayed under 4 s p99. A sustained rate is measured with a deep queue, which a scheduler
drains faster than it serves pods arriving one by one, and a shared machine's capacity drifts
between arms. The ceiling also gives both arms of a comparison the same offered load whenever
both sustained at least twice it, so their latencies differ by service time alone."""
LATENCY_RATE_DEFINITION = (
    f"latency arm: Poisson arrivals at min({LATENCY_LOAD:g} x the rate its throughput arm "
    f"sustained, {LATENCY_MAX_QPS:g} pods/s), so pod startup is service time, not queueing"
)
"""The rule in words, for the reports' definitions."""
LATENCY_PODS = 300
"""Pods per latency arm at the most (enough for a p99 by nearest rank)."""


def latency_rate(sustained: float | None) -> float | None:
    """The Poisson arrival rate (pods/s) of a latency arm whose throughput arm sustained
    `sustained` pods/s (scheduler_perf's average): LATENCY_LOAD of it, at most
    LATENCY_MAX_QPS, rounded to 0.001. None when the throughput arm sustained no rate (it
    scheduled nothing, or left no result): there is nothing to run below."""
    if sustained is None or not sustained > 0:  # also NaN
        return None
    return round(min(LATENCY_LOAD * float(sustained), LATENCY_MAX_QPS), 3)
