"""records: the per-pod and per-claim state machine on plain dicts (the watches that feed
it run in integration tests)."""

from __future__ import annotations

from typing import Any

from loadgen import fleet_views, gang_views, records, templates, watch_events
from testbed import vocab
from tests.support import extender_objects as objects


def _records() -> records.Records:
    return records.new("loadgen-r1", {"pool": "a"}, wall_offset=1000.0)  # epoch = mono + 1000


def _pod(name: str, *, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "loadgen-r1",
            "creationTimestamp": "1970-01-01T00:16:40Z",  # epoch 1000
            "labels": {templates.LABEL_PHASE: "p", vocab.LABEL_GANG: "g"},
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_a_pod_records_first_seen_scheduled_and_running_once() -> None:
    t = _records()
    watch_events.on_pod(t, "ADDED", _pod("a"), 0.5)
    watch_events.on_pod(t, "MODIFIED", _pod("a", node="n1"), 0.7)
    watch_events.on_pod(t, "MODIFIED", _pod("a", node="n1", phase="Running"), 0.9)
    watch_events.on_pod(t, "MODIFIED", _pod("a", node="n1", phase="Running"), 1.5)
    rec = t.pods["a"]
    assert (rec.created, rec.scheduled, rec.running, rec.node) == (0.5, 0.7, 0.9, "n1")
    counts = records.phase_counts(t, "p")
    assert (counts.seen, counts.scheduled, counts.running) == (1, 1, 1)


def test_a_pod_found_unschedulable_counts_until_it_is_scheduled() -> None:
    t = _records()
    stuck = _pod("a")
    stuck["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    watch_events.on_pod(t, "ADDED", _pod("a"), 0.1)
    watch_events.on_pod(t, "ADDED", _pod("b"), 0.1)
    assert records.phase_counts(t, "p").unschedulable == 0  # pending alone is not a verdict
    watch_events.on_pod(t, "MODIFIED", stuck, 0.2)
    watch_events.on_pod(t, "MODIFIED", stuck, 0.3)  # the scheduler's retry: still one pod
    assert (records.phase_counts(t, "p").unschedulable, t.total.unschedulable) == (1, 1)
    watch_events.on_pod(t, "MODIFIED", _pod("a", node="n1"), 0.4)  # it fit after all
    assert (records.phase_counts(t, "p").unschedulable, records.phase_counts(t, "p").scheduled) == (
        0,
        1,
    )


def _verdict(name: str, message: str) -> dict[str, Any]:
    pod = _pod(name)
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    ]
    return pod


def test_only_a_changed_scheduler_verdict_counts_as_news() -> None:
    t = _records()
    watch_events.on_pod(t, "ADDED", _pod("a"), 0.1)
    watch_events.on_pod(t, "MODIFIED", _verdict("a", "0/8 nodes are available"), 0.2)
    watch_events.on_pod(t, "MODIFIED", _verdict("a", "0/8 nodes are available"), 0.3)
    assert records.phase_counts(t, "p").verdicts == 1  # the same word again is no news
    watch_events.on_pod(t, "MODIFIED", _verdict("a", "0/9 nodes are available"), 0.4)
    watch_events.on_pod(t, "MODIFIED", _verdict("b", "0/9 nodes are available"), 0.5)
    assert (records.phase_counts(t, "p").verdicts, t.total.verdicts) == (3, 3)


def test_create_is_the_first_event_received_as_in_cl2() -> None:
    t = _records()
    # The server says it was created at epoch 1000 (monotonic 0); the watch saw it at 3.0:
    # CL2 takes the receive time, and so do we (the server time only feeds the check).
    watch_events.on_pod(t, "ADDED", _pod("late-watch"), 3.0)
    rec = t.pods["late-watch"]
    assert (rec.created, rec.created_server) == (3.0, 1000.0)
    # Even a first event that already says Running is the create: every phase is 0.
    watch_events.on_pod(t, "ADDED", _pod("at-once", node="n1", phase="Running"), 4.0)
    rec = t.pods["at-once"]
    assert rec.created == rec.scheduled == rec.running == 4.0


def test_a_pod_first_seen_finished_counts_as_run_and_done_but_has_no_cl2_run() -> None:
    t = _records()
    watch_events.on_pod(t, "ADDED", _pod("a", node="n1", phase="Succeeded"), 2.0)
    c = records.phase_counts(t, "p")
    assert (c.scheduled, c.running, c.succeeded) == (1, 1, 1)
    # CL2 sets "run" only from an event with phase Running: this pod has no startup latency.
    assert t.pods["a"].ran and t.pods["a"].running is None


def _slice(node: str, driver: str, devices: list[tuple[str, str, int]]) -> dict[str, Any]:
    numa = vocab.GPU_ATTR_NUMA if driver == vocab.GPU_DRIVER else vocab.NIC_ATTR_NUMA
    return {
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1},
            "devices": [
                {
                    "name": d,
                    "attributes": {
                        vocab.ATTR_PCIE_ROOT: {"string": root},
                        # DRANet publishes its own attributes without the domain prefix too.
                        numa.removeprefix("dra.net/"): {"int": n},
                    },
                }
                for d, root, n in devices
            ],
        },
    }


def _claim(name: str, ns: str, results: list[tuple[str, str, str]]) -> dict[str, Any]:
    obj = objects.claim(ns, name, {}, allocated=results)
    obj["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "pod-" + name}]
    return obj


def test_claims_learn_device_topology_and_fleet_gpu_allocation() -> None:
    t = _records()
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n1", "labels": {"pool": "a"}}}, 0)
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "other", "labels": {"pool": "b"}}}, 0)
    watch_events.on_slice(
        t, "ADDED", _slice("n1", vocab.GPU_DRIVER, [("g0", "r0", 0), ("g1", "r1", 1)]), 0
    )
    watch_events.on_slice(
        t, "ADDED", _slice("n1", vocab.NIC_DRIVER, [("k0", "r0", 0), ("k1", "r9", 0)]), 0
    )
    watch_events.on_slice(t, "ADDED", _slice("other", vocab.GPU_DRIVER, [("g0", "x", 0)]), 0)
    assert fleet_views.fleet_nodes(t) == ["n1"] and fleet_views.fleet_gpus(t) == 2

    watch_events.on_claim(t, "ADDED", _claim("c1", "loadgen-r1", []), 1.0)
    both = [
        (vocab.GPU_DRIVER, "n1", "g0"),
        (vocab.NIC_DRIVER, "n1", "k0"),
        (vocab.GPU_DRIVER, "n1", "g1"),
        (vocab.NIC_DRIVER, "n1", "k1"),
    ]
    watch_events.on_claim(t, "MODIFIED", _claim("c1", "loadgen-r1", both), 1.25)
    rec = t.claims["c1"]
    assert (rec.pod, rec.seen, rec.allocated) == ("pod-c1", 1.0, 1.25)
    assert rec.gpu_pcie == ["r0", "r1"] and rec.nic_pcie == ["r0", "r9"]
    assert rec.gpu_numa == ["0", "1"] and rec.nic_numa == ["0", "0"]
    assert t.fleet.gpus_allocated == 2
    # Someone else's claim on a node outside the fleet does not count.
    watch_events.on_claim(
        t, "ADDED", _claim("x", "elsewhere", [(vocab.GPU_DRIVER, "other", "g0")]), 2.0
    )
    assert t.fleet.gpus_allocated == 2 and "x" not in t.claims
    watch_events.on_claim(t, "MODIFIED", _claim("c1", "loadgen-r1", []), 3.0)  # deallocated
    assert t.fleet.gpus_allocated == 0


def test_gang_spans_count_distinct_topology_levels() -> None:
    t = _records()
    for i, (rack, block) in enumerate([("r1", "b1"), ("r2", "b1")]):
        node = f"n{i}"
        labels = {vocab.LABEL_RACK: rack, vocab.LABEL_BLOCK: block}
        watch_events.on_node(t, "ADDED", {"metadata": {"name": node, "labels": labels}}, 0)
        watch_events.on_pod(t, "ADDED", _pod(f"p{i}", node=node), 0)
    assert gang_views.gang_spans(t)["g"] == {"pods": 2, "nodes": 2, "racks": 2, "blocks": 1}


def test_stranded_gpus_are_the_free_ones_on_partly_used_nodes() -> None:
    t = _records()
    for node in ("n1", "n2", "n3"):
        watch_events.on_node(t, "ADDED", {"metadata": {"name": node, "labels": {"pool": "a"}}}, 0)
        gpus = [(f"g{i}", f"r{i}", 0) for i in range(4)]
        watch_events.on_slice(t, "ADDED", _slice(node, vocab.GPU_DRIVER, gpus), 0)
    assert fleet_views.gpus_stranded(t) == 0
    # n1: 1 of 4 used (3 stranded); n2: all 4 used (none); n3: untouched (whole, not stranded).
    watch_events.on_claim(
        t, "ADDED", _claim("a", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g0")]), 1.0
    )
    whole = [(vocab.GPU_DRIVER, "n2", f"g{i}") for i in range(4)]
    watch_events.on_claim(t, "ADDED", _claim("b", "loadgen-r1", whole), 1.0)
    assert (t.fleet.gpus_allocated, fleet_views.gpus_stranded(t)) == (5, 3)
    watch_events.on_claim(t, "DELETED", _claim("a", "loadgen-r1", []), 2.0)
    assert (t.fleet.gpus_allocated, fleet_views.gpus_stranded(t)) == (4, 0)
    assert t.fleet.peak_gpus_allocated == 5  # exact, whether or not a sample caught it


def test_other_namespaces_gpus_are_held_apart_from_the_runs_own() -> None:
    t = _records()
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n1", "labels": {"pool": "a"}}}, 0)
    gpus = [(f"g{i}", f"r{i}", 0) for i in range(4)]
    watch_events.on_slice(t, "ADDED", _slice("n1", vocab.GPU_DRIVER, gpus), 0)
    theirs = [(vocab.GPU_DRIVER, "n1", "g0"), (vocab.GPU_DRIVER, "n1", "g1")]
    watch_events.on_claim(t, "ADDED", _claim("x", "loadgen-other", theirs), 1.0)
    watch_events.on_claim(
        t, "ADDED", _claim("c", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g2")]), 1.0
    )
    assert (t.fleet.gpus_allocated, t.fleet.peak_gpus_allocated) == (1, 1)
    assert t.fleet.gpus_held_by_others == 2
    assert fleet_views.gpus_held_by_others(t) == {"loadgen-other": 2}
    assert fleet_views.gpus_stranded(t) == 1  # free is free, whoever holds the rest
    watch_events.on_claim(t, "DELETED", _claim("x", "loadgen-other", []), 2.0)
    assert t.fleet.gpus_held_by_others == 0 and fleet_views.gpus_held_by_others(t) == {}


def test_pods_never_scheduled_are_grouped_by_the_schedulers_reason() -> None:
    t = _records()
    full = "0/4 nodes are available: 4 cannot allocate all claims."
    for name, message in (("a", full), ("b", full), ("c", None)):
        pod = _pod(name)
        if message:
            pod["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message + " preemption: 0/4 nodes are available: 4 No victims.",
                }
            ]
        watch_events.on_pod(t, "ADDED", pod, 0.1)
    watch_events.on_pod(t, "ADDED", _pod("d", node="n1"), 0.1)
    assert records.pending(t) == {full: 2, "no verdict from the scheduler yet": 1}
    assert t.pods["a"].unschedulable and t.total.unschedulable == 2


def test_mig_partitions_are_not_counted_as_fleet_gpus() -> None:
    t = _records()
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n1", "labels": {"pool": "a"}}}, 0)
    slc = _slice("n1", vocab.GPU_DRIVER, [("g0", "r0", 0), ("g0-mig-1g", "r0", 0)])
    slc["spec"]["devices"][0]["attributes"][vocab.GPU_ATTR_TYPE] = {"string": "gpu"}
    slc["spec"]["devices"][1]["attributes"][vocab.GPU_ATTR_TYPE] = {"string": "mig"}
    watch_events.on_slice(t, "ADDED", slc, 0)
    assert fleet_views.fleet_gpus(t) == 1


def test_partitions_and_shares_of_one_gpu_keep_one_physical_gpu_busy() -> None:
    t = _records()
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n1", "labels": {"pool": "a"}}}, 0)
    slc = _slice("n1", vocab.GPU_DRIVER, [("g0", "r0", 0), ("g0-mig-a", "r0", 0), ("g1", "r1", 0)])
    devs = slc["spec"]["devices"]
    devs[0]["attributes"][vocab.GPU_ATTR_UUID] = {"string": "GPU-0"}
    devs[1]["attributes"][vocab.GPU_ATTR_PARENT_UUID] = {"string": "GPU-0"}
    devs[2]["attributes"][vocab.GPU_ATTR_UUID] = {"string": "GPU-1"}
    watch_events.on_slice(t, "ADDED", slc, 0)
    mig = [(vocab.GPU_DRIVER, "n1", "g0-mig-a")]
    watch_events.on_claim(t, "ADDED", _claim("a", "loadgen-r1", mig), 1.0)
    watch_events.on_claim(t, "ADDED", _claim("b", "loadgen-r1", mig), 1.0)  # a capacity share
    assert watch_events.take_sample(t, 1.0).gpus_busy == 1
    watch_events.on_claim(
        t, "ADDED", _claim("c", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g1")]), 1.0
    )
    watch_events.on_claim(
        t, "ADDED", _claim("x", "elsewhere", [(vocab.GPU_DRIVER, "n1", "g0")]), 1.0
    )
    assert watch_events.take_sample(t, 2.0).gpus_busy == 2  # not someone else's
    watch_events.on_claim(t, "DELETED", _claim("a", "loadgen-r1", []), 3.0)
    watch_events.on_claim(t, "DELETED", _claim("b", "loadgen-r1", []), 3.0)
    assert watch_events.take_sample(t, 3.0).gpus_busy == 1


def _gpu_slice(node: str) -> dict[str, Any]:
    """One 80 GB GPU with a 10 GB MIG partition, and one shareable 80 GB GPU."""
    slc = _slice(node, vocab.GPU_DRIVER, [("g0", "r0", 0), ("g0-mig", "r0", 0), ("g1", "r1", 0)])
    devs = slc["spec"]["devices"]
    for dev, uuid, kind, memory in (
        (devs[0], "GPU-0", "gpu", "80Gi"),
        (devs[1], "", "mig", "10Gi"),
        (devs[2], "GPU-1", "gpu", "80Gi"),
    ):
        dev["attributes"][vocab.GPU_ATTR_TYPE] = {"string": kind}
        key = vocab.GPU_ATTR_UUID if uuid else vocab.GPU_ATTR_PARENT_UUID
        dev["attributes"][key] = {"string": uuid or "GPU-0"}
        dev["capacity"] = {vocab.GPU_CAP_MEMORY: {"value": memory}}
    return slc


def _needing(name: str, gib: int, *, node: str = "n1", plugin_gpus: int = 0) -> dict[str, Any]:
    pod = _pod(name, node=node, phase="Running")
    pod["metadata"]["annotations"] = {vocab.ANNOTATION_GPU_MEMORY: str(gib * 2**30)}
    if plugin_gpus:
        limits = {vocab.EXTENDED_RESOURCE_GPU: str(plugin_gpus)}
        pod["spec"]["containers"] = [{"name": "main", "resources": {"limits": limits}}]
    return pod


def test_memory_requested_against_what_capacity_shares_mig_and_whole_gpus_take() -> None:
    t = _records()
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n1", "labels": {"pool": "a"}}}, 0)
    watch_events.on_slice(t, "ADDED", _gpu_slice("n1"), 0)
    gib = 2**30
    # Two capacity shares of GPU-1 (each consumed 20Gi for a 15 GiB need), a MIG partition
    # of GPU-0 (10Gi taken for 5 GiB).
    share = _claim("s1", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g1")])
    share["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {
        vocab.GPU_CAP_MEMORY: "20Gi"
    }
    share2 = {**share, "metadata": {**share["metadata"], "name": "s2"}}
    watch_events.on_claim(t, "ADDED", share, 1.0)
    watch_events.on_claim(t, "ADDED", share2, 1.0)
    watch_events.on_claim(
        t, "ADDED", _claim("m", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g0-mig")]), 1
    )
    for name, need in (("p1", 15), ("p2", 15), ("p3", 5)):
        watch_events.on_pod(t, "ADDED", _needing(name, need), 1.0)
    s = watch_events.take_sample(t, 1.0)
    assert (s.memory_requested, s.memory_taken, s.memory_busy) == (35 * gib, 50 * gib, 160 * gib)
    # A whole GPU takes all of it: the MIG claim replaced by the full GPU-0.
    watch_events.on_claim(
        t, "MODIFIED", _claim("m", "loadgen-r1", [(vocab.GPU_DRIVER, "n1", "g0")]), 2
    )
    assert watch_events.take_sample(t, 2.0).memory_taken == 120 * gib
    # Finished pods and deleted claims give it back.
    watch_events.on_pod(t, "MODIFIED", {**_needing("p3", 5), "status": {"phase": "Succeeded"}}, 3.0)
    watch_events.on_claim(t, "DELETED", _claim("m", "loadgen-r1", []), 3.0)
    s = watch_events.take_sample(t, 3.0)
    assert (s.memory_requested, s.memory_taken, s.memory_busy) == (30 * gib, 40 * gib, 80 * gib)


def test_device_plugin_gpus_are_whole_busy_gpus_of_the_nodes_memory() -> None:
    t = _records()
    node = {
        "metadata": {"name": "n1", "labels": {"pool": "a"}},
        "status": {"capacity": {vocab.EXTENDED_RESOURCE_GPU: "8"}},
    }
    watch_events.on_node(t, "ADDED", node, 0)
    watch_events.on_node(t, "ADDED", {"metadata": {"name": "n2", "labels": {"pool": "a"}}}, 0)
    watch_events.on_slice(t, "ADDED", _gpu_slice("n1"), 0)
    watch_events.on_slice(t, "ADDED", _gpu_slice("n2"), 0)
    # On n2 (no plugin GPUs) DRA serves the extended resource with a claim: not counted here.
    watch_events.on_pod(t, "ADDED", _needing("via-dra", 10, node="n2", plugin_gpus=1), 1.0)
    watch_events.on_pod(t, "ADDED", _needing("dp", 10, plugin_gpus=2), 1.0)
    watch_events.on_pod(t, "ADDED", _needing("waiting", 10, node="", plugin_gpus=1), 1.0)
    s = watch_events.take_sample(t, 1.0)
    gib = 2**30
    assert (s.gpus_busy, s.memory_requested, s.memory_taken, s.memory_busy) == (
        2,
        20 * gib,
        160 * gib,
        160 * gib,
    )
    # They are allocated as truly as a claim's: the allocation chart and the heatmap count
    # them (the demo's device-plugin arm drew empty ones).
    assert s.gpus_allocated == 2 and fleet_views.occupancy(t)["n1"][0] == 2
    watch_events.relisting(t, "resourceclaims")  # claims relisted: the plugin's GPUs stay
    s = watch_events.take_sample(t, 1.5)
    assert (s.gpus_busy, s.gpus_allocated) == (2, 2)
    watch_events.on_pod(t, "DELETED", _needing("dp", 10, plugin_gpus=2), 2.0)
    s = watch_events.take_sample(t, 2.0)
    assert (s.gpus_busy, s.memory_requested, s.memory_taken) == (0, 10 * gib, 0)
    assert s.gpus_allocated == 0 and t.fleet.peak_gpus_allocated == 2


def _member(name: str, group: str, *, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    pod = _pod(name, node=node, phase=phase)
    del pod["metadata"]["labels"][vocab.LABEL_GANG]
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def test_a_native_gang_is_its_pod_group_timed_from_first_created_to_last_running() -> None:
    t = _records()
    for i in range(3):
        watch_events.on_pod(t, "ADDED", _member(f"a{i}", "ga"), 1.0 + i)
    for i in range(3):
        watch_events.on_pod(
            t, "MODIFIED", _member(f"a{i}", "ga", node=f"n{i}", phase="Running"), 10.0 + i
        )
    # Gang b: one of its two pods bound at the end (a partial gang); gang c: none bound.
    watch_events.on_pod(t, "ADDED", _member("b0", "gb", node="n0"), 2.0)
    watch_events.on_pod(t, "ADDED", _member("b1", "gb"), 2.0)
    watch_events.on_pod(t, "ADDED", _member("c0", "gc"), 2.0)
    states = gang_views.gang_states(t, {"p": 3})
    a, b, c = states["ga"], states["gb"], states["gc"]
    assert (a.size, a.scheduled, a.running, a.nodes) == (3, 3, 3, 3)
    assert a.time_to_running == 11.0 and not a.partial
    assert b.partial and b.time_to_running is None
    assert not c.partial and c.scheduled == 0
    assert gang_views.gang_spans(t) == {
        "ga": {"pods": 3, "nodes": 3, "racks": 3, "blocks": 3},
        "gb": {"pods": 1, "nodes": 1, "racks": 1, "blocks": 1},
    }


def _refused(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    return pod


def test_a_refusal_in_a_gang_being_bound_is_on_the_way_and_not_the_last_word() -> None:
    t = _records()
    # Gang a: two pods bound, the third still carries an earlier attempt's refusal.
    watch_events.on_pod(t, "ADDED", _member("a0", "ga", node="n0"), 1.0)
    watch_events.on_pod(t, "ADDED", _member("a1", "ga", node="n1"), 1.0)
    watch_events.on_pod(t, "ADDED", _refused(_member("a2", "ga")), 1.0)
    # Gang b: refused whole, the last word.
    for i in range(3):
        watch_events.on_pod(t, "ADDED", _refused(_member(f"b{i}", "gb")), 1.0)
    counts = records.phase_counts(t, "p")
    assert (counts.scheduled, counts.unschedulable) == (2, 4)
    assert gang_views.refusals_on_the_way(t, "p") == 1
    assert gang_views.refusals_on_the_way(t, "other phase") == 0
    # Once bound, it is scheduled and no longer a refusal at all.
    watch_events.on_pod(t, "MODIFIED", _member("a2", "ga", node="n2"), 2.0)
    assert gang_views.refusals_on_the_way(t, "p") == 0
    assert (counts.scheduled, counts.unschedulable) == (3, 3)
