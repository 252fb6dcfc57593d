"""Choosing workloads: upstream's by their scheduler_perf names, ours by fleet profile."""

from __future__ import annotations

import re

from schedperf import workloads

CONFIG = """
- name: SchedulingWithResourceClaimTemplate
  workloadTemplate: []
  workloads:
  - name: fast
    params: {nodesWithDRA: 1, measurePods: 10}
  - name: 5000pods_500nodes
    params: {nodesWithDRA: 500, measurePods: 2500}
  - name: 5000pods_500nodes_QueueingHintsEnabled
    params: {nodesWithDRA: 500, measurePods: 2500}
- name: SteadyStateClusterResourceClaimTemplate
  workloads:
  - name: empty_500nodes
"""
DRA = "dra/performance-config.yaml"


def test_names_are_test_case_slash_workload() -> None:
    assert workloads.names_in(CONFIG) == [
        "SchedulingWithResourceClaimTemplate/fast",
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes_QueueingHintsEnabled",
        "SteadyStateClusterResourceClaimTemplate/empty_500nodes",
    ]


def test_an_upstream_workload_runs_from_its_files_directory_as_upstream_benchmarks_it() -> None:
    got = workloads.upstream(
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes", "/m/scheduler_perf", {DRA: CONFIG}
    )
    assert got is not None
    assert (got.workdir, got.config) == ("/m/scheduler_perf/dra", "performance-config.yaml")
    assert (got.topic, got.allocator) == ("dra", "incubating")
    assert got.benchmark == (
        "BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/5000pods_500nodes"
    )
    assert got.params == {"nodesWithDRA": 500, "measurePods": 2500}


def test_a_name_only_another_release_has_is_not_found() -> None:
    assert (
        workloads.upstream("SchedulingWithResourceClaimTemplate/half_500nodes", "/m", {DRA: CONFIG})
        is None
    )


def test_the_bench_pattern_selects_exactly_one_workload() -> None:
    # Go matches each /-separated part as an unanchored regexp.
    pattern = workloads.bench_pattern(
        "BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/5000pods_500nodes"
    )
    parts = pattern.split("/")
    names = workloads.names_in(CONFIG)
    matched = [
        n
        for n in names
        if all(re.search(p, s) for p, s in zip(parts[1:], n.split("/"), strict=True))
    ]
    assert matched == ["SchedulingWithResourceClaimTemplate/5000pods_500nodes"]


def test_the_unknown_workload_line_names_ours_and_theirs_grouped() -> None:
    line = workloads.unknown("nope", "1.37", {DRA: CONFIG}, ["dgx-h100", "l4-4gpu"])
    assert "\n" not in line
    assert line == (
        "unknown workload 'nope' for Kubernetes 1.37; workloads: fleet/dgx-h100, fleet/l4-4gpu, "
        "SchedulingWithResourceClaimTemplate/{fast,5000pods_500nodes,"
        "5000pods_500nodes_QueueingHintsEnabled}, SteadyStateClusterResourceClaimTemplate/"
        "empty_500nodes"
    )
