"""The topology index: free devices per root and NUMA, kept in step incrementally."""

from __future__ import annotations

from extender.cache.index import Index, Outcome
from extender.cache.store import (
    GROUP_WATCH,
    NOMINATED,
    NOMINATED_FIELD_SELECTOR,
    POD_FIELD_SELECTOR,
    Store,
    watches,
)
from extender.config import Settings
from testbed import vocab
from testbed.kube.watching import Change
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import store_of

GPU, NIC, RDMA = vocab.CLASS_GPU, vocab.CLASS_NIC, vocab.CLASS_RDMA_NIC


def test_dgx_node_has_eight_aligned_pairs() -> None:
    store = store_of(objects.dgx("n1"))
    s = store.index.summary(store.index.nodes["n1"])
    assert s.classes[GPU].free == 8 and s.classes[RDMA].free == 8
    assert s.pairs(GPU, RDMA) == (8, 8)


def test_numa_only_and_unaligned_nodes() -> None:
    store = store_of([*objects.numa_only("n"), *objects.unaligned("u")])
    idx = store.index
    assert idx.summary(idx.nodes["n"]).pairs(GPU, RDMA) == (0, 8)
    assert idx.summary(idx.nodes["u"]).pairs(GPU, RDMA) == (0, 0)


def test_gpu_numa_falls_back_to_the_nic_on_its_root() -> None:
    store = store_of(objects.dgx("n1", gpu_numa=False))
    s = store.index.summary(store.index.nodes["n1"])
    assert s.classes[GPU].numa_free == {0: 4, 1: 4}


def test_allocation_and_release_update_free_counts() -> None:
    store = store_of(objects.dgx("n1"))
    idx = store.index
    alloc = [(vocab.GPU_DRIVER, "n1", "gpu-0"), (vocab.NIC_DRIVER, "n1", "nic-1")]
    c = objects.claim("ns", "c", objects.pair_spec(1), allocated=alloc)
    store.apply("ResourceClaim", Change("ADDED", c))
    s = idx.summary(idx.nodes["n1"])
    assert s.classes[GPU].free == 7 and s.classes[RDMA].free == 7
    assert s.pairs(GPU, RDMA) == (6, 7)  # roots 0 and 1 each lost one side
    store.apply("ResourceClaim", Change("DELETED", c))
    assert idx.summary(idx.nodes["n1"]).classes[GPU].free == 8
    assert idx.free_devices("n1") == set(idx.nodes["n1"].devices)


def test_relist_drops_objects_the_list_no_longer_has() -> None:
    store = store_of([*objects.dgx("n1"), *objects.dgx("n2")])
    store.replace("Node", [objects.node("n1")])
    store.replace("ResourceSlice", [o for o in objects.dgx("n1") if o["kind"] == "ResourceSlice"])
    assert set(store.index.nodes) == {"n1"}
    assert store.index.counts()["ResourceSlice"] == 2


def test_nodes_in_the_same_state_share_one_summary() -> None:
    store = store_of([*objects.dgx("a"), *objects.dgx("b")])
    idx = store.index
    assert idx.summary(idx.nodes["a"]) is idx.summary(idx.nodes["b"])


def test_ready_only_after_every_kind_listed() -> None:
    store = store_of([], with_classes=False)
    assert store.ready.is_set()
    fresh = type(store)(store.index)
    fresh.replace("Node", [])
    assert not fresh.ready.is_set()


def test_placements_are_classified_per_gpu() -> None:
    seen: list[tuple[Outcome, int]] = []
    store = store_of([*objects.dgx("n1"), *objects.numa_only("n2")], placements=seen)
    g, n = vocab.GPU_DRIVER, vocab.NIC_DRIVER
    aligned = objects.claim("ns", "a", {}, allocated=[(g, "n1", "gpu-0"), (n, "n1", "nic-0")])
    numa = objects.claim("ns", "b", {}, allocated=[(g, "n2", "gpu-0"), (n, "n2", "nic-1")])
    far = objects.claim("ns", "c", {}, allocated=[(g, "n1", "gpu-1"), (n, "n1", "nic-5")])
    for c in (aligned, numa, far):
        store.apply("ResourceClaim", Change("ADDED", c))
    store.apply("ResourceClaim", Change("MODIFIED", aligned))  # no double counting
    assert seen == [("aligned", 1), ("numa", 1), ("unaligned", 1)]


def test_job_siblings_follow_pod_lifecycle() -> None:
    store = store_of(objects.dgx("n1"))
    labels = {vocab.LABEL_JOB_NAME: "j"}
    running = objects.pod("ns", "p", labels=labels, node_name="n1", phase="Running")
    store.apply("Pod", Change("ADDED", running))
    assert store.index.jobs == {"ns/j": {"n1": 1}}
    done = objects.pod("ns", "p", labels=labels, node_name="n1", phase="Succeeded")
    store.apply("Pod", Change("MODIFIED", done))
    assert store.index.jobs == {}


def test_each_pod_selection_has_a_twin_for_pods_nominated_and_not_bound() -> None:
    w = watches(Settings())
    for name in ("Pod/gang", "Pod/job"):
        bound, nominated = w[name], w[name + NOMINATED]
        assert bound.field_selector == POD_FIELD_SELECTOR and not bound.nominated
        assert nominated.field_selector == NOMINATED_FIELD_SELECTOR and nominated.nominated
        assert nominated.label_selector == bound.label_selector


def _gang_pod(node: str | None, nominated: str | None) -> dict[str, object]:
    p = objects.pod("ns", "p", labels={vocab.LABEL_GANG: "g"}, node_name=node)
    if nominated is not None:
        p["status"]["nominatedNodeName"] = nominated
    return p


def test_a_pod_being_bound_counts_at_its_nominated_node_then_where_it_is_bound() -> None:
    store = store_of([*objects.dgx("n1"), *objects.dgx("n2")])
    nominated, bound = "Pod/gang" + NOMINATED, "Pod/gang"
    store.apply(nominated, Change("ADDED", _gang_pod(None, "n1")))
    assert store.index.jobs == {"ns/g": {"n1": 1}}
    # Bound: it leaves the nominated selection (a DELETED there) and enters the bound one;
    # the two streams are not ordered with each other.
    store.apply(bound, Change("ADDED", _gang_pod("n1", "n1")))
    store.apply(nominated, Change("DELETED", _gang_pod(None, "n1")))
    assert store.index.jobs == {"ns/g": {"n1": 1}}
    store.apply(bound, Change("DELETED", _gang_pod("n1", "n1")))
    assert store.index.jobs == {}


def test_a_late_nominated_report_of_a_bound_pod_changes_nothing() -> None:
    store = store_of([*objects.dgx("n1"), *objects.dgx("n2")])
    nominated, bound = "Pod/gang" + NOMINATED, "Pod/gang"
    store.apply(bound, Change("ADDED", _gang_pod("n2", "n1")))
    store.apply(nominated, Change("ADDED", _gang_pod(None, "n1")))
    store.apply(nominated, Change("DELETED", _gang_pod(None, "n1")))
    assert store.index.jobs == {"ns/g": {"n2": 1}}
    # A relist of the nominated selection drops only what it alone reported.
    store.replace(nominated, [])
    assert store.index.jobs == {"ns/g": {"n2": 1}}


def test_device_class_change_rescores_nodes() -> None:
    store = store_of(objects.dgx("n1"))
    idx = store.index
    idx.summary(idx.nodes["n1"])
    store.apply("DeviceClass", Change("DELETED", objects.classes()[2]))
    assert RDMA not in idx.summary(idx.nodes["n1"]).classes


def test_pods_naming_their_group_only_are_watched_where_the_workload_api_is_served() -> None:
    store = Store(Index(Settings()))
    # By default only labelled pods are read: the two label selections, bound and nominated.
    assert [n for n in store.watches if n.startswith("Pod")] == [
        "Pod/gang",
        "Pod/gang" + NOMINATED,
        "Pod/job",
        "Pod/job" + NOMINATED,
    ]
    store.watch_groups()
    group = store.watches[GROUP_WATCH]
    assert group.label_selector == f"!{vocab.LABEL_JOB_NAME},!{vocab.LABEL_GANG}"
    assert group.field_selector == watches(Settings())["Pod/gang"].field_selector
    assert GROUP_WATCH in store.kinds  # not ready before it has listed too

    # 1.37 (schedulingGroup) and 1.35 (workloadRef) pods with no label: bound ones count as
    # their gang's placed pods; a pod naming no group is read and dropped.
    bound = objects.pod("ns", "a", node_name="n1", phase="Running")
    bound["spec"]["schedulingGroup"] = {"podGroupName": "pg"}
    old = objects.pod("ns", "b", node_name="n2", phase="Running")
    old["spec"]["workloadRef"] = {"name": "train", "podGroup": "workers"}
    plain = objects.pod("ns", "c", node_name="n1", phase="Running")
    store.replace(GROUP_WATCH, [bound, old, plain])
    assert store.index.jobs == {"ns/pg": {"n1": 1}, "ns/train/workers": {"n2": 1}}
    store.apply(GROUP_WATCH, Change("DELETED", bound))
    assert store.index.jobs == {"ns/train/workers": {"n2": 1}}
