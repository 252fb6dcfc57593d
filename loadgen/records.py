"""What a run observed, as plain data, and the pure state machine that updates it.

`Records` holds one slotted record per pod and per claim, the fleet's GPUs and their
allocation, watch gaps and the timeline; the `on_*` functions apply one watch event each,
stamped with the client's receive time (`now`, monotonic seconds). The watches themselves
live in `loadgen.tracker`; the reports read only these records. At 200 pods/s these
functions must stay cheap: a few dict lookups per event, no object kept whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from loadgen import placement, templates
from testbed import heartbeats, units, vocab, workloads

_TOPOLOGY: Final = (vocab.LABEL_RACK, vocab.LABEL_BLOCK)
# Watch restart reasons, mildest first: a gap keeps its worst.
_SEVERITY: Final = {"closed": 0, "error": 1, "gone": 2}


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


# -- time and status helpers ---------------------------------------------------------------


def server_running_time(pod: dict[str, Any]) -> float | None:
    """When the API server says the pod started: its latest container start, else its Ready
    transition."""
    status = pod.get("status") or {}
    starts = [
        heartbeats.parse_time((cs.get("state") or {}).get("running", {}).get("startedAt"))
        for cs in status.get("containerStatuses") or []
    ]
    known = [s for s in starts if s is not None]
    if known:
        return max(known)
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return heartbeats.parse_time(cond.get("lastTransitionTime"))
    return None


def is_unschedulable(status: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or []
    )


def scheduling_verdict(status: dict[str, Any]) -> str | None:
    """The scheduler's message on an unscheduled pod (PodScheduled False), without the
    preemption post-script: pods refused for the same reason share the same text."""
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            message = str(c.get("message") or c.get("reason") or "unschedulable")
            return message.split(" preemption:", 1)[0].strip()
    return None


def gang_of(labels: dict[str, str], spec: dict[str, Any]) -> str | None:
    """A pod's gang: the Workload API group it names (a PodGroup, or on 1.35 a Workload's
    pod group), else the private label."""
    return workloads.group_of(spec) or labels.get(vocab.LABEL_GANG)


def device_attribute(attrs: dict[str, Any], driver: str, name: str) -> str | None:
    """A device attribute by qualified name; the driver's own domain may be left off."""
    raw = attrs.get(name)
    if raw is None and name.startswith(driver + "/"):
        raw = attrs.get(name[len(driver) + 1 :])
    if not isinstance(raw, dict) or not raw:
        return None
    return str(next(iter(raw.values())))


# -- events --------------------------------------------------------------------------------


def on_pod(rec: Records, kind: str, pod: dict[str, Any], now: float) -> None:
    """One watch event of a pod of the run (pods of namespaces outside its scope are
    ignored: an all-namespaces watch sees them)."""
    meta = pod["metadata"]
    if not rec.scope.matches(meta.get("namespace") or ""):
        return
    name = object_key(rec, meta)
    r = rec.pods.get(name)
    if r is None:
        if kind == "DELETED":
            return
        labels = meta.get("labels") or {}
        r = PodRecord(
            phase=labels.get(templates.LABEL_PHASE, ""),
            job=labels.get(vocab.LABEL_JOB_NAME),
            gang=gang_of(labels, pod.get("spec") or {}),
            created=now,
            created_server=heartbeats.parse_time(meta.get("creationTimestamp")),
            footprint=_int((meta.get("annotations") or {}).get(vocab.ANNOTATION_GPU_MEMORY)),
            plugin_gpus=plugin_gpus(pod.get("spec") or {}),
        )
        rec.pods[name] = r
        phase_counts(rec, r.phase).seen += 1
        rec.total.seen += 1
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    counts = phase_counts(rec, r.phase)
    total = rec.total
    if r.scheduled is None and spec.get("nodeName"):
        r.scheduled = now
        r.node = spec["nodeName"]
        counts.scheduled += 1
        total.scheduled += 1
        if r.unschedulable:
            counts.unschedulable -= 1
            total.unschedulable -= 1
    elif r.scheduled is None:
        verdict = scheduling_verdict(status)
        if verdict is not None:
            if verdict != r.pending_reason:
                counts.verdicts += 1
                total.verdicts += 1
            r.pending_reason = verdict
            if not r.unschedulable and is_unschedulable(status):
                r.unschedulable = True
                counts.unschedulable += 1
                total.unschedulable += 1
    phase = status.get("phase")
    if r.running is None and phase == "Running":
        r.running = now
        r.running_server = server_running_time(pod)
    if not r.ran and phase in ("Running", "Succeeded", "Failed"):
        # A pod seen first as Succeeded ran too; we only learn it now.
        r.ran = True
        counts.running += 1
        total.running += 1
    if r.finished is None and phase in ("Succeeded", "Failed"):
        r.finished = now
        r.succeeded = phase == "Succeeded"
        if r.succeeded:
            counts.succeeded += 1
            total.succeeded += 1
        else:
            counts.failed += 1
            total.failed += 1
    if r.claim is None:
        for st in status.get("resourceClaimStatuses") or []:
            if st.get("resourceClaimName"):
                r.claim = st["resourceClaimName"]
    done = kind == "DELETED" or r.finished is not None
    if r.node and not done and not r.holding:
        _hold(rec.fleet, name, r, True)
    elif r.holding and done:
        _hold(rec.fleet, name, r, False)


def _hold(fleet: Fleet, name: str, r: PodRecord, on: bool) -> None:
    """Count a scheduled pod's memory need, and its device-plugin GPUs (whole GPUs, busy
    and taken), in or out of the fleet's figures."""
    r.holding = on
    sign = 1 if on else -1
    fleet.memory_requested += sign * r.footprint
    plugin = r.plugin_gpus if r.node in fleet.plugin_nodes else 0
    if plugin and r.node in fleet.nodes:  # allocated as truly as a claim's GPUs
        held = fleet.plugin_gpus_by_node.get(r.node, 0) + sign * plugin
        if held:
            fleet.plugin_gpus_by_node[r.node] = held
        else:
            fleet.plugin_gpus_by_node.pop(r.node, None)
        fleet.gpus_allocated += sign * plugin
        fleet.peak_gpus_allocated = max(fleet.peak_gpus_allocated, fleet.gpus_allocated)
    for i in range(plugin):
        gpu = f"{r.node}/{vocab.EXTENDED_RESOURCE_GPU}/{name}/{i}"
        if on:
            fleet.busy[gpu] = 1
            fleet.gpu_memory[gpu] = fleet.node_gpu_memory.get(r.node, 0)
            fleet.memory_taken += fleet.gpu_memory[gpu]
        else:
            fleet.busy.pop(gpu, None)
            fleet.memory_taken -= fleet.gpu_memory.pop(gpu, 0)


def plugin_gpus(spec: dict[str, Any]) -> int:
    """GPUs a pod asks as the device plugin's extended resource (limits, else requests)."""
    total = 0
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("limits") or {}).get(vocab.EXTENDED_RESOURCE_GPU)
        value = value or (res.get("requests") or {}).get(vocab.EXTENDED_RESOURCE_GPU)
        total += _int(value)
    return total


def _int(value: object) -> int:
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def bytes_of(quantity: object) -> int:
    """A quantity from an API object as whole bytes (testbed.units); 0 if absent or not one."""
    try:
        return units.quantity_bytes(str(quantity)) if quantity is not None else 0
    except ValueError:
        return 0


def busy_memory(fleet: Fleet) -> int:
    """Memory of the physical GPUs the run keeps busy (each whole)."""
    memory = fleet.gpu_memory
    return sum(memory.get(gpu, 0) for gpu in fleet.busy)


def on_claim(rec: Records, kind: str, claim: dict[str, Any], now: float) -> None:
    """One watch event of any claim: fleet GPU allocation, and the run's own claim records."""
    meta = claim["metadata"]
    fleet = rec.fleet
    key = f"{meta.get('namespace')}/{meta['name']}"
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
    results = results.get("results") or []
    gpus = 0
    if kind != "DELETED":  # only GPUs of the fleet's nodes count towards its ratio
        gpus = sum(
            1
            for r in results
            if r.get("driver") == vocab.GPU_DRIVER
            and fleet.pool_node.get((vocab.GPU_DRIVER, r.get("pool", ""))) in fleet.nodes
        )
    own = rec.scope.matches(meta.get("namespace") or "")
    change = gpus - fleet.gpus_by_claim.get(key, ("", 0))[1]
    if own:
        fleet.gpus_allocated += change
        fleet.peak_gpus_allocated = max(fleet.peak_gpus_allocated, fleet.gpus_allocated)
    else:
        fleet.gpus_held_by_others += change
    if gpus:
        first = next(r for r in results if r.get("driver") == vocab.GPU_DRIVER)
        node = fleet.pool_node.get((vocab.GPU_DRIVER, first.get("pool", "")), "")
        fleet.gpus_by_claim[key] = (node, gpus)
    else:
        fleet.gpus_by_claim.pop(key, None)
    if own:
        _count_busy(fleet, key, [] if kind == "DELETED" else results)
        _count_memory(fleet, key, [] if kind == "DELETED" else results)
    if not own or kind == "DELETED":
        return
    claim_key = object_key(rec, meta)
    c = rec.claims.get(claim_key)
    if c is None:
        owner = next(
            (o["name"] for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"),
            None,
        )
        if owner is not None:  # keyed as the pod is, so reports can join the two
            owner = object_key(rec, {**meta, "name": owner})
        c = ClaimRecord(pod=owner, seen=now)
        rec.claims[claim_key] = c
    if c.allocated is None and results:
        c.allocated = now
        for r in results:
            driver = r.get("driver", "")
            pcie, numa = fleet.devices.get(
                (driver, r.get("pool", ""), r.get("device", "")), (None, None)
            )
            if driver == vocab.GPU_DRIVER:
                c.gpu_pcie.append(pcie)
                c.gpu_numa.append(numa)
            elif driver == vocab.NIC_DRIVER:
                c.nic_pcie.append(pcie)
                c.nic_numa.append(numa)


def _count_busy(fleet: Fleet, key: str, results: list[dict[str, Any]]) -> None:
    """Keep `fleet.busy` in step with claim `key`'s allocation (the physical GPUs under it)."""
    for gpu in fleet.claim_gpus.pop(key, []):
        fleet.busy[gpu] -= 1
        if not fleet.busy[gpu]:
            del fleet.busy[gpu]
    gpus = [
        fleet.physical.get(
            (r.get("pool", ""), r.get("device", "")), f"{r.get('pool')}/{r.get('device')}"
        )
        for r in results
        if r.get("driver") == vocab.GPU_DRIVER
    ]
    if gpus:
        fleet.claim_gpus[key] = gpus
        for gpu in gpus:
            fleet.busy[gpu] = fleet.busy.get(gpu, 0) + 1


def _count_memory(fleet: Fleet, key: str, results: list[dict[str, Any]]) -> None:
    """Keep `fleet.memory_taken` in step with claim `key`'s allocation: a capacity share takes
    what it consumed, anything else its device's whole memory."""
    fleet.memory_taken -= fleet.claim_memory.pop(key, 0)
    taken = 0
    for r in results:
        if r.get("driver") != vocab.GPU_DRIVER:
            continue
        consumed = (r.get("consumedCapacity") or {}).get(vocab.GPU_CAP_MEMORY)
        if consumed is not None:
            taken += bytes_of(consumed)
        else:
            taken += fleet.device_memory.get((r.get("pool", ""), r.get("device", "")), 0)
    if taken:
        fleet.claim_memory[key] = taken
        fleet.memory_taken += taken


def on_slice(rec: Records, kind: str, slc: dict[str, Any], now: float) -> None:
    """One watch event of a ResourceSlice: the fleet's GPUs and every device's topology."""
    fleet = rec.fleet
    name = slc["metadata"]["name"]
    if kind == "DELETED":
        fleet.gpu_slices.pop(name, None)
        return
    spec = slc.get("spec") or {}
    driver = spec.get("driver", "")
    pool_info = spec.get("pool") or {}
    pool = pool_info.get("name", "")
    devices = spec.get("devices") or []
    if driver == vocab.GPU_DRIVER:
        generation = int(pool_info.get("generation", 0))
        node = spec.get("nodeName", "")
        # Physical GPUs only: a MIG partition is a device too, carved out of one of them.
        whole = sum(
            1
            for d in devices
            if device_attribute(d.get("attributes") or {}, driver, vocab.GPU_ATTR_TYPE)
            != vocab.GPU_TYPE_MIG
        )
        fleet.gpu_slices[name] = (pool, generation, node, whole)
    if spec.get("nodeName"):
        fleet.pool_node[(driver, pool)] = spec["nodeName"]
    numa_attr = vocab.GPU_ATTR_NUMA if driver == vocab.GPU_DRIVER else vocab.NIC_ATTR_NUMA
    for dev in devices:
        attrs = dev.get("attributes") or {}
        if driver == vocab.GPU_DRIVER:
            gpu = device_attribute(attrs, driver, vocab.GPU_ATTR_PARENT_UUID) or device_attribute(
                attrs, driver, vocab.GPU_ATTR_UUID
            )
            if gpu:
                fleet.physical[(pool, dev.get("name", ""))] = gpu
            memory = bytes_of(
                ((dev.get("capacity") or {}).get(vocab.GPU_CAP_MEMORY) or {}).get("value")
            )
            if (most := _compute_max(dev)) is not None:
                fleet.compute_max[(pool, dev.get("name", ""))] = most
            if memory:
                fleet.device_memory[(pool, dev.get("name", ""))] = memory
                whole = device_attribute(attrs, driver, vocab.GPU_ATTR_TYPE) != vocab.GPU_TYPE_MIG
                if whole and gpu:
                    fleet.gpu_memory[gpu] = memory
                    if spec.get("nodeName"):
                        fleet.node_gpu_memory[spec["nodeName"]] = memory
        fleet.devices[(driver, pool, dev.get("name", ""))] = (
            device_attribute(attrs, driver, vocab.ATTR_PCIE_ROOT),
            device_attribute(attrs, driver, vocab.ATTR_NUMA_NODE)
            or device_attribute(attrs, driver, numa_attr),
        )


def on_node(rec: Records, kind: str, node: dict[str, Any], now: float) -> None:
    """A listed node: its topology labels, and whether it is part of the run's fleet."""
    fleet = rec.fleet
    meta = node["metadata"]
    name = meta["name"]
    labels = meta.get("labels") or {}
    fleet.node_labels[name] = {k: labels[k] for k in _TOPOLOGY if k in labels}
    if all(labels.get(k) == v for k, v in fleet.node_selector.items()):
        fleet.nodes.add(name)
    capacity = (node.get("status") or {}).get("capacity") or {}
    if _int(capacity.get(vocab.EXTENDED_RESOURCE_GPU)) > 0:
        fleet.plugin_nodes.add(name)


def relisting(rec: Records, plural: str) -> None:
    """Before a (re)list of `plural` is replayed as ADDED events: forget the fleet views it
    rebuilds (per-pod and per-claim records only gain what they lacked)."""
    fleet = rec.fleet
    if plural == "resourceslices":
        fleet.gpu_slices.clear()
        fleet.devices.clear()
        fleet.pool_node.clear()
        fleet.physical.clear()
        fleet.device_memory.clear()
    elif plural == "nodes":
        fleet.node_labels.clear()
        fleet.nodes.clear()
    elif plural == "resourceclaims":
        fleet.gpus_by_claim.clear()
        fleet.gpus_allocated = sum(fleet.plugin_gpus_by_node.values())  # pods', not claims'

        fleet.gpus_held_by_others = 0
        fleet.claim_gpus.clear()
        # Device-plugin GPUs are counted from pods, not claims: they stay.
        fleet.busy = {k: v for k, v in fleet.busy.items() if vocab.EXTENDED_RESOURCE_GPU in k}
        fleet.memory_taken -= sum(fleet.claim_memory.values())
        fleet.claim_memory.clear()


def watch_broke(rec: Records, plural: str, reason: str, now: float) -> None:
    """The watch of `plural` restarted for `reason` (closed, error, gone)."""
    rec.watch_restarts += 1
    gap = rec.broken.get(plural)
    if gap is None:
        rec.broken[plural] = WatchGap(plural, reason, now)
    elif _SEVERITY.get(reason, 1) > _SEVERITY.get(gap.reason, 1):
        gap.reason = reason


def watch_resumed(rec: Records, plural: str, now: float | None) -> None:
    """The first delivery after a break (None: the run ended with the watch still broken)."""
    gap = rec.broken.pop(plural, None)
    if gap is None:
        return
    gap.end = now
    # A stream the server ended on its timeout and that resumed at once is routine: only
    # failures (no answer, 5xx, 410) make a gap worth reporting.
    if gap.reason != "closed":
        rec.watch_gaps.append(gap)


def take_sample(rec: Records, now: float, *, tick: bool = True) -> Sample:
    """Append the timeline's sample of this moment (`tick`: one of the 1 s ticker's)."""
    t = rec.total
    sample = Sample(
        now,
        t.seen,
        t.scheduled,
        t.running,
        t.succeeded + t.failed,
        rec.fleet.gpus_allocated,
        gpus_stranded(rec),
        len(rec.fleet.busy),
        rec.fleet.memory_requested,
        rec.fleet.memory_taken,
        busy_memory(rec.fleet),
        {name: c.scheduled for name, c in rec.counts.items()},
        tick,
    )
    rec.timeline.append(sample)
    if sample.gpus_allocated > rec.fleet.peak_occupancy_gpus:
        rec.fleet.peak_occupancy = occupancy(rec)
        rec.fleet.peak_occupancy_gpus = sample.gpus_allocated
    return sample


# -- fleet views ---------------------------------------------------------------------------


def fleet_nodes(rec: Records) -> list[str]:
    """Nodes matching the run's node selector (all nodes when there is none)."""
    return sorted(rec.fleet.nodes)


def gpus_by_node(rec: Records) -> dict[str, int]:
    """GPUs each fleet node publishes (newest pool generation only)."""
    fleet = rec.fleet
    newest: dict[str, int] = {}
    for pool, generation, _, _ in fleet.gpu_slices.values():
        newest[pool] = max(newest.get(pool, 0), generation)
    out: dict[str, int] = {}
    for pool, generation, node, devices in fleet.gpu_slices.values():
        if node in fleet.nodes and generation == newest[pool]:
            out[node] = out.get(node, 0) + devices
    return out


def gpus_held_by_others(rec: Records) -> dict[str, int]:
    """Per other namespace, the fleet GPUs its claims hold now."""
    out: dict[str, int] = {}
    for key, (_, gpus) in rec.fleet.gpus_by_claim.items():
        ns = key.split("/", 1)[0]
        if not rec.scope.matches(ns):
            out[ns] = out.get(ns, 0) + gpus
    return out


def pending(rec: Records) -> dict[str, int]:
    """Pods never scheduled, counted per the scheduler's reason (its latest word on each)."""
    out: dict[str, int] = {}
    for r in rec.pods.values():
        if r.scheduled is None:
            reason = r.pending_reason or "no verdict from the scheduler yet"
            out[reason] = out.get(reason, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _compute_max(dev: dict[str, Any]) -> int | None:
    """The most `compute` one claim may take of device `dev`, milli-units; None if it
    publishes none (or nothing readable)."""
    cap = (dev.get("capacity") or {}).get(vocab.GPU_CAP_COMPUTE)
    if not isinstance(cap, dict):
        return None
    most = ((cap.get("requestPolicy") or {}).get("validRange") or {}).get("max", cap.get("value"))
    try:
        return int(units.parse_quantity(str(most)) * 1000)
    except ValueError:
        return None


def compute_max(rec: Records) -> int | None:
    """The most `compute` one claim may take of any GPU of the fleet's nodes, milli-units;
    None when none of them publishes compute."""
    fleet = rec.fleet
    found = [
        most
        for (pool, _), most in fleet.compute_max.items()
        if fleet.pool_node.get((vocab.GPU_DRIVER, pool)) in fleet.nodes
    ]
    return max(found, default=None)


def fleet_gpus(rec: Records) -> int:
    """GPUs published in ResourceSlices of the fleet's nodes."""
    return sum(gpus_by_node(rec).values())


def _used_by_node(rec: Records) -> dict[str, int]:
    used = dict(rec.fleet.plugin_gpus_by_node)
    for node, gpus in rec.fleet.gpus_by_claim.values():
        used[node] = used.get(node, 0) + gpus
    return used


def occupancy(rec: Records) -> dict[str, tuple[int, int]]:
    """Per fleet node: (GPUs allocated on it by anyone, GPUs it publishes)."""
    used = _used_by_node(rec)
    return {node: (min(used.get(node, 0), cap), cap) for node, cap in gpus_by_node(rec).items()}


def gpus_stranded(rec: Records) -> int:
    """Free GPUs on fleet nodes that already have some allocated: the fragmentation a
    whole-node (8-GPU) pod cannot use."""
    used = _used_by_node(rec)
    return sum(
        capacity - used[node]
        for node, capacity in gpus_by_node(rec).items()
        if 0 < used.get(node, 0) < capacity
    )


@dataclass(frozen=True, slots=True)
class GangState:
    """One gang as the run left it: how many of its pods were seen, bound and Running, where
    they landed, and when its first pod was created and its last one seen Running."""

    size: int
    """Pods the gang needs at once (its phase's concurrent pods; seen pods if unknown)."""
    seen: int
    scheduled: int
    running: int
    nodes: int
    racks: int
    blocks: int
    first_created: float
    all_running: float | None
    """When the last of `size` pods was first seen Running; None if they never all were."""

    @property
    def partial(self) -> bool:
        """Some but not all of its pods bound to nodes: what all-or-nothing forbids."""
        return 0 < self.scheduled < self.size

    @property
    def time_to_running(self) -> float | None:
        """From the gang's first pod created to its last pod Running (seconds)."""
        return None if self.all_running is None else self.all_running - self.first_created


def refusals_on_the_way(rec: Records, phase: str) -> int:
    """Pods of `phase` found unschedulable, not scheduled, whose gang has a pod scheduled.
    A native gang binds all or nothing, so such a refusal is a verdict on the way (an
    earlier attempt's condition on a pod whose gang is being bound), not the last word."""
    pods = [r for r in rec.pods.values() if r.phase == phase and r.gang]
    placed = {r.gang for r in pods if r.scheduled is not None}
    return sum(1 for r in pods if r.gang in placed and r.unschedulable and r.scheduled is None)


def gang_states(rec: Records, sizes: dict[str, int] | None = None) -> dict[str, GangState]:
    """Every gang of the run (pods with a PodGroup or gang label); `sizes` gives each phase's
    gang size (pods at once), else a gang is as large as the pods of it seen."""
    members: dict[str, list[PodRecord]] = {}
    for r in rec.pods.values():
        if r.gang:
            members.setdefault(r.gang, []).append(r)
    labels = rec.fleet.node_labels
    out: dict[str, GangState] = {}
    for gang, pods in members.items():
        size = (sizes or {}).get(pods[0].phase) or len(pods)
        nodes = [r.node for r in pods if r.node]
        runs = sorted(r.running for r in pods if r.running is not None)
        out[gang] = GangState(
            size=size,
            seen=len(pods),
            scheduled=len(nodes),
            running=sum(1 for r in pods if r.ran),
            nodes=len(set(nodes)),
            racks=placement.span(nodes, labels, vocab.LABEL_RACK) if nodes else 0,
            blocks=placement.span(nodes, labels, vocab.LABEL_BLOCK) if nodes else 0,
            first_created=min(r.created for r in pods),
            all_running=runs[size - 1] if len(runs) >= size else None,
        )
    return out


def gang_spans(rec: Records) -> dict[str, dict[str, int]]:
    """Per gang with a pod on a node: its pods there, and how many nodes, racks and blocks
    they landed on."""
    return {
        gang: {"pods": g.scheduled, "nodes": g.nodes, "racks": g.racks, "blocks": g.blocks}
        for gang, g in gang_states(rec).items()
        if g.scheduled
    }
