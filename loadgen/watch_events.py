"""The pure state machine that updates a run's `loadgen.records`: the `on_*` functions apply
one watch event each, stamped with the client's receive time (`now`, monotonic seconds);
`relisting` comes before a relist is replayed, `take_sample` on the 1 s ticker. At 200
pods/s these functions must stay cheap: a few dict lookups per event, no object kept whole.
"""

from __future__ import annotations

from typing import Any, Final

from loadgen import templates
from loadgen.fleet_views import busy_memory, gpus_stranded, occupancy
from loadgen.records import (
    ClaimRecord,
    Fleet,
    PodRecord,
    Records,
    Sample,
    object_key,
    phase_counts,
)
from testbed import heartbeats, units, vocab, workloads

_TOPOLOGY: Final = (vocab.LABEL_RACK, vocab.LABEL_BLOCK)


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
    preemption post-script: pods refused for the same reason share the same text. A gated
    pod the extender's gang placer cannot release yet says why in a condition of its own,
    which comes first (the scheduler only says the pod is gated)."""
    conditions = status.get("conditions") or []
    for c in conditions:
        if c.get("type") == vocab.CONDITION_GANG_PLACEMENT and c.get("status") == "False":
            return str(c.get("message") or c.get("reason"))
    for c in conditions:
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
