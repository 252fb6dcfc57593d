"""A pod's Workload API group as each release's pods name it."""

from __future__ import annotations

from testbed import workloads


def test_1_36_and_1_37_pods_name_a_pod_group() -> None:
    assert workloads.group_of({"schedulingGroup": {"podGroupName": "g1"}}) == "g1"


def test_1_35_pods_name_a_workload_and_its_group_each_replica_a_gang_of_its_own() -> None:
    ref = {"name": "train", "podGroup": "workers"}
    assert workloads.group_of({"workloadRef": ref}) == "train/workers"
    replica = ref | {"podGroupReplicaKey": "r2"}
    assert workloads.group_of({"workloadRef": replica}) == "train/workers/r2"


def test_a_pod_naming_no_group_or_half_a_reference_has_none() -> None:
    assert workloads.group_of({}) is None
    assert workloads.group_of({"schedulingGroup": {}}) is None
    assert workloads.group_of({"workloadRef": {"name": "train"}}) is None
