"""The topology index: free devices per root and NUMA, kept in step incrementally."""

from __future__ import annotations

from extender.cache.index import Index, Outcome
from extender.cache.store import GROUP_WATCH, Store, watches
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


def test_device_class_change_rescores_nodes() -> None:
    store = store_of(objects.dgx("n1"))
    idx = store.index
    idx.summary(idx.nodes["n1"])
    store.apply("DeviceClass", Change("DELETED", objects.classes()[2]))
    assert RDMA not in idx.summary(idx.nodes["n1"]).classes


def test_pods_naming_their_group_only_are_watched_where_the_workload_api_is_served() -> None:
    store = Store(Index(Settings()))
    # By default only labelled pods are read: the two label selections.
    assert [n for n in store.watches if n.startswith("Pod")] == ["Pod/gang", "Pod/job"]
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
