"""What a run observed, as plain data: one slotted record per pod and per claim, the fleet's
GPUs and their allocation, watch gaps and the timeline.

`loadgen.watch_events` updates them one watch event at a time (`loadgen.watch_gaps` marks
when a watch was broken); `loadgen.fleet_views` and `loadgen.gangs` answer the reports'
questions over them. The watches themselves live in `loadgen.tracker`; the reports read only
these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final


@dataclass(slots=True)
class PodRecord:
    phase: str
    job: str | None
    gang: str | None
    created: float
    """CL2's "create": the receive time of the first watch event of the pod (ClusterLoader2's
    pod_startup_latency.go sets createPhase on the first event it sees, whatever it says)."""
    created_server: float | None
    """creationTimestamp, epoch seconds (1 s resolution): only for the server check."""
    scheduled: float | None = None
    """CL2's "schedule": receive time of the first event with spec.nodeName set."""
    running: float | None = None
    """CL2's "run" (and "watch"): receive time of the first event with status.phase Running.
    A pod never seen Running (first seen Succeeded) has none, as in CL2."""
    ran: bool = False
    """Seen Running, Succeeded or Failed: it ran, whether or not a Running event came (what
    the run's progress and wait conditions count)."""
    running_server: float | None = None
    """When the API server says the pod started (Ready transition / container start)."""
    finished: float | None = None
    succeeded: bool = False
    node: str = ""
    claim: str | None = None
    unschedulable: bool = False
    """The scheduler reported it does not fit (PodScheduled False, reason Unschedulable)."""
    pending_reason: str | None = None
    """While unscheduled: the scheduler's latest word on why (PodScheduled's message)."""
    footprint: int = 0
    """GPU memory its workload uses, bytes (the pod's gpu-memory annotation; 0: not given)."""
    plugin_gpus: int = 0
    """Whole GPUs asked as the device plugin's extended resource (no claim)."""
    holding: bool = False
    """Counted in the fleet's memory figures: scheduled and not yet finished or deleted."""


@dataclass(slots=True)
class ClaimRecord:
    pod: str | None
    seen: float
    allocated: float | None = None
    gpu_pcie: list[str | None] = field(default_factory=list)
    gpu_numa: list[str | None] = field(default_factory=list)
    nic_pcie: list[str | None] = field(default_factory=list)
    nic_numa: list[str | None] = field(default_factory=list)


@dataclass(slots=True)
class PhaseCounts:
    seen: int = 0
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unschedulable: int = 0
    """Pods the scheduler found unschedulable and that are not scheduled (yet)."""
    verdicts: int = 0
    """Scheduler verdicts on unscheduled pods that differed from the pod's last one: a
    scheduler still at work on pods it cannot place yet (a phase's wait sees progress)."""


@dataclass(slots=True)
class WatchGap:
    """An interval in which one watch was broken: events of that kind that happened in it
    arrive late, at `end`, so latencies measured across it include part of the outage."""

    watch: str
    """Resource plural of the watch."""
    reason: str
    """The worst restart reason in the gap: gone (410, relisted) > error > closed."""
    start: float
    """When the watch broke (client monotonic seconds)."""
    end: float | None = None
    """First delivery after it resumed (a relist's snapshot or an event); None if the run
    ended first."""


@dataclass(slots=True)
class Sample:
    t: float
    seen: int
    scheduled: int
    running: int
    finished: int
    gpus_allocated: int
    gpus_stranded: int = 0
    """Free GPUs on partly used fleet nodes: too few together for a whole-node pod."""
    gpus_busy: int = 0
    """Physical GPUs with at least one of the run's allocations (a whole GPU, a MIG
    partition of it, or a capacity share): what the run keeps busy."""
    memory_requested: int = 0
    """GPU memory the run's scheduled pods say their workloads use (bytes)."""
    memory_taken: int = 0
    """GPU memory the run's allocations take: a capacity share's consumed memory, a MIG
    partition's or a whole GPU's memory (device-plugin GPUs are whole GPUs)."""
    memory_busy: int = 0
    """Memory of the physical GPUs the run keeps busy (all of each, however little is used)."""
    phase_scheduled: dict[str, int] = field(default_factory=dict)
    """Pods scheduled so far per scenario phase (throughput per phase)."""
    tick: bool = True
    """Taken on the 1 s ticker (scheduler_perf's throughput samples only those); False for
    the sample of the end state when the watches stop."""


@dataclass(slots=True)
class Fleet:
    """The nodes a run may use and the GPUs they publish, with who holds them."""

    node_selector: dict[str, str] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per node, only the topology labels gangs are measured on (rack, block)."""
    gpu_slices: dict[str, tuple[str, int, str, int]] = field(default_factory=dict)
    """GPU ResourceSlices by name: (pool, generation, node, devices), not whole objects,
    which at thousands of nodes would cost tens of MB."""
    devices: dict[tuple[str, str, str], tuple[str | None, str | None]] = field(default_factory=dict)
    """(driver, pool, device) -> (PCIe root, NUMA node)."""
    pool_node: dict[tuple[str, str], str] = field(default_factory=dict)
    gpus_by_claim: dict[str, tuple[str, int]] = field(default_factory=dict)
    """namespace/claim -> (node, GPUs of the fleet it holds), the run's and everyone else's."""
    gpus_allocated: int = 0
    """GPUs of the fleet the run holds: its claims' and its pods' device-plugin GPUs."""
    peak_gpus_allocated: int = 0
    """Exact, updated on every claim change (samples, once a second, can miss a peak)."""
    gpus_held_by_others: int = 0
    """GPUs of the fleet that claims of other namespaces (other runs) hold."""
    peak_occupancy: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per fleet node (GPUs allocated, GPUs) at the sample with the most GPUs allocated:
    the report's occupancy heatmap (fragmentation at a glance)."""
    peak_occupancy_gpus: int = -1
    physical: dict[tuple[str, str], str] = field(default_factory=dict)
    """(pool, GPU device) -> its physical GPU (a MIG partition's parent UUID, a whole GPU's
    own UUID): partitions and shares of one GPU map to one key."""
    busy: dict[str, int] = field(default_factory=dict)
    """Physical GPU -> allocations of the run's claims on it."""
    claim_gpus: dict[str, list[str]] = field(default_factory=dict)
    """The run's claim -> the physical GPUs its allocation counts in `busy`."""
    device_memory: dict[tuple[str, str], int] = field(default_factory=dict)
    """(pool, GPU device) -> the memory capacity it publishes (a partition's own)."""
    gpu_memory: dict[str, int] = field(default_factory=dict)
    """Physical GPU (as in `busy`) -> its whole memory; device-plugin GPUs included."""
    node_gpu_memory: dict[str, int] = field(default_factory=dict)
    """Node -> memory of one of its whole GPUs (what a device-plugin GPU there takes)."""
    claim_memory: dict[str, int] = field(default_factory=dict)
    """The run's claim -> GPU memory its allocation takes."""
    plugin_gpus_by_node: dict[str, int] = field(default_factory=dict)
    """Node -> device-plugin GPUs the run's pods hold there (no claim says so)."""
    plugin_nodes: set[str] = field(default_factory=set)
    compute_max: dict[tuple[str, str], int] = field(default_factory=dict)
    """(pool, GPU device) -> the most `compute` one claim may take there, milli-units (its
    request policy's max, else all of it): only GPUs that publish compute."""
    """Nodes with the device plugin's GPUs in their capacity: there an `nvidia.com/gpu` pod
    takes the plugin's GPUs; elsewhere DRA serves it with a claim (counted as claims are)."""
    memory_taken: int = 0
    memory_requested: int = 0


@dataclass(frozen=True, slots=True)
class Scope:
    """The namespaces whose pods and claims are the run's own: one namespace (a run's, or
    the one `loadgen observe -n` watches), every namespace, or every namespace whose name
    starts with a prefix (ClusterLoader2 makes `<prefix>-1..N`)."""

    namespace: str = ""
    """Exactly this namespace; empty: every namespace (narrowed by `prefix`)."""
    prefix: str = ""
    """Without a namespace: only namespaces whose name starts with this."""

    def matches(self, namespace: str) -> bool:
        if self.namespace:
            return namespace == self.namespace
        return namespace.startswith(self.prefix)

    @property
    def watch_namespace(self) -> str | None:
        """The one namespace to watch, or None: watch all and keep what `matches`."""
        return self.namespace or None

    @property
    def label(self) -> str:
        """How reports name it: the namespace, `<prefix>*`, or `*` for all."""
        return self.namespace or f"{self.prefix}*"


@dataclass(slots=True)
class Records:
    """Everything one run observed. `scope` says which namespaces are the run's own;
    `namespace` names it in reports (the namespace itself when there is one)."""

    namespace: str
    scope: Scope
    wall_offset: float = 0.0
    """Epoch = monotonic + offset: converts server timestamps to the records' clock."""
    pods: dict[str, PodRecord] = field(default_factory=dict)
    claims: dict[str, ClaimRecord] = field(default_factory=dict)
    counts: dict[str, PhaseCounts] = field(default_factory=dict)
    total: PhaseCounts = field(default_factory=PhaseCounts)
    timeline: list[Sample] = field(default_factory=list)
    fleet: Fleet = field(default_factory=Fleet)
    watch_restarts: int = 0
    watch_gaps: list[WatchGap] = field(default_factory=list)
    broken: dict[str, WatchGap] = field(default_factory=dict)
    """Watches broken now, by resource plural."""


def new(
    namespace: str | Scope,
    node_selector: dict[str, str] | None = None,
    *,
    wall_offset: float = 0.0,
) -> Records:
    """Records of a run in one namespace (a name), or of the namespaces a `Scope` selects."""
    scope = namespace if isinstance(namespace, Scope) else Scope(namespace=namespace)
    return Records(
        namespace=scope.label,
        scope=scope,
        wall_offset=wall_offset,
        fleet=Fleet(node_selector=dict(node_selector or {})),
    )


def object_key(rec: Records, meta: dict[str, Any]) -> str:
    """How a pod or claim is keyed: its name in a one-namespace run (as the reports have
    always named it), `namespace/name` when the scope spans namespaces (names repeat)."""
    if rec.scope.namespace:
        return str(meta["name"])
    return f"{meta.get('namespace')}/{meta['name']}"


def phase_counts(rec: Records, phase: str) -> PhaseCounts:
    """The counts of one scenario phase (created empty on first use)."""
    return rec.counts.setdefault(phase, PhaseCounts())


NO_VERDICT: Final = "no verdict from the scheduler yet"


def pending(rec: Records) -> dict[str, int]:
    """Pods never scheduled, counted per the scheduler's reason (its latest word on each)."""
    out: dict[str, int] = {}
    for r in rec.pods.values():
        if r.scheduled is None:
            reason = r.pending_reason or NO_VERDICT
            out[reason] = out.get(reason, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
