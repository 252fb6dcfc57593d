"""A run's settings and what it produced, as plain data: the input of every report.

The runner fills these in; `loadgen.report` reads them and never sees a client or a watch,
so every report can be built (and tested) from values alone.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from loadgen import plan, runs, scheduler_view, segments
from loadgen.records import Records
from loadgen.scenarios import Phase, Scenario


def new_run_id() -> str:
    """Sortable, DNS-safe and unique enough that reruns never collide."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


@dataclass(frozen=True, kw_only=True)
class Settings:
    run_id: str = field(default_factory=new_run_id)
    qps: float | None = None
    """Objects created per second in every phase; None: each phase's own, else 100."""
    max_in_flight: int = 100
    """Open loop: create requests outstanding. Closed loop: pods created but not Running."""
    arrival: plan.Arrival | None = None
    """Overrides every phase's arrival process; None: the phase's own, else fixed."""
    node_selector: dict[str, str] = field(default_factory=dict)
    """Put the run's pods only on nodes with these labels (the fleet is those nodes)."""
    scheduler_name: str | None = None
    """Pods ask for this scheduler (`spec.schedulerName`); None: the cluster's default."""
    keep: bool = False
    """Leave the namespace and everything in it after the run."""
    timeout: float | None = None
    """Caps every phase's wait for its condition (seconds), overriding the phase's own cap;
    None: the phase's own, else no cap (a phase then ends only on a stall)."""
    stall_timeout: float = 120.0
    """A phase's wait fails after this many seconds in which no pod was seen, scheduled,
    given a new scheduler verdict, started or finished (a Job's run time is added)."""
    seed: int = 0
    """Seed of Poisson arrivals."""
    scrape: dict[str, str] = field(default_factory=dict)
    """Component name -> Prometheus /metrics URL, scraped through the run for its changes."""
    allow_unschedulable: bool = False
    """Run even when the pre-flight check finds the demand cannot fit the free GPUs."""
    heartbeat_interval: float = runs.DEFAULT_INTERVAL
    """Seconds between refreshes of the run's heartbeat on its namespace."""
    pod_reader_role: str | None = None
    """A ClusterRole (pods get/list/watch) loadgen binds to itself in the run's namespace
    before watching its pods (`loadgen.access`); None: its own rights suffice."""
    profile: bool = True
    """CPU-profile the scraped `scheduler` and `apiserver` through the run (their
    /debug/pprof/profile beside /metrics), in consecutive slices."""


@dataclass
class CreateStats:
    """How one phase's creates went."""

    requested: int = 0
    created: int = 0
    already_existed: int = 0
    failed: int = 0
    retries: int = 0
    request_seconds: list[float] = field(default_factory=list)
    first_error: str | None = None


@dataclass(frozen=True)
class ProfileSlice:
    """One CPU profile of a component (pprof's .pb.gz bytes, as served)."""

    started: float
    """Monotonic seconds, like every record's timestamp."""
    seconds: float
    data: bytes


@dataclass
class Unanswered:
    """A stretch in which a component did not answer its profile requests (killed,
    restarting): no CPU of it was profiled then."""

    start: float
    """Monotonic seconds of the first request it did not answer."""
    reason: str
    end: float | None = None
    """Monotonic seconds of the request it answered again; None: it never did."""


@dataclass
class Profiled:
    """A component's CPU profile slices through a run, or why it has none."""

    slices: list[ProfileSlice] = field(default_factory=list)
    not_profiled: str | None = None
    """Why profiling stopped or never started (`403 Forbidden: ...`), None while it went."""
    busy_slices: int = 0
    """Slices skipped because another client was profiling the component at the time."""
    unanswered: list[Unanswered] = field(default_factory=list)
    """Stretches without an answer, after which profiling resumed (or the run ended)."""


@dataclass
class PhaseResult:
    phase: Phase
    started: float
    """Monotonic seconds, like every record's timestamp."""
    created: float | None = None
    finished: float | None = None
    stats: CreateStats = field(default_factory=CreateStats)
    waves: int = 0
    timed_out: bool = False


@dataclass
class RunResult:
    run_id: str
    namespace: str
    scenario: Scenario
    settings: Settings
    records: Records
    started_wall: float
    started_mono: float
    finished_mono: float = 0.0
    started_cpu: float = field(default_factory=time.process_time)
    """loadgen's own CPU clock (`time.process_time`, every thread) when the run started."""
    cpu_seconds: float | None = None
    """loadgen's own CPU from `started_cpu` to `finished_mono`: the load it put on the machine
    while measuring, its start-up and its reports after the run not counted."""
    phases: list[PhaseResult] = field(default_factory=list)
    fleet_nodes: int = 0
    fleet_gpus: int = 0
    interrupted: bool = False
    error: str | None = None
    cleaned_up: bool = False
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per scraped component: series -> change over the run, summed over its processes
    (gauges: value after); none of a component whose counters could not be made whole."""
    components: dict[str, segments.Component] = field(default_factory=dict)
    """Per scraped component: its processes, restarts and failed scrapes through the run."""
    held_by_others_at_start: dict[str, int] = field(default_factory=dict)
    """Per other namespace, the fleet GPUs its claims held when the run started."""
    scheduler_view: scheduler_view.Timeline | None = None
    """kube-scheduler's /metrics (and the extender's) sampled through the run; None when the
    scheduler was not scraped."""
    profiles: dict[str, Profiled] = field(default_factory=dict)
    """Component (`scheduler`, `apiserver`) -> its CPU profiles over the run."""
    apiserver_version: str = ""
    """kube-apiserver's gitVersion (its /version) when the run started."""

    def wall(self, mono: float) -> float:
        """Epoch seconds of a monotonic timestamp of this run."""
        return self.started_wall + (mono - self.started_mono)
