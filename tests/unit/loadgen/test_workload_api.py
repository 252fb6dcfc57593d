"""Native gangs on a cluster without the Workload API: one line naming the release or gate."""

from __future__ import annotations

from loadgen import workload_api
from loadgen.scenarios import load


def test_an_older_release_is_named_with_the_release_the_api_starts_in() -> None:
    text = workload_api.problem("v1.36.4", served=False)
    assert text is not None
    assert "Kubernetes v1.36.4 has no such API (it starts in 1.37" in text
    assert "\n" not in text


def test_1_37_without_the_gate_names_the_gate() -> None:
    text = workload_api.problem("v1.37.2", served=False)
    assert text is not None and "GenericWorkload=true" in text


def test_a_serving_cluster_has_no_problem_and_only_native_gangs_need_it() -> None:
    assert workload_api.problem("v1.37.2", served=True) is None
    assert workload_api.needed(load("gang", {"native": "true"}))
    assert not workload_api.needed(load("gang", {}))
