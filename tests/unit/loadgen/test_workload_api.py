"""Native gangs on a cluster without the Workload API, or without the gang plugin's gate: one
line naming the release or gates."""

from __future__ import annotations

from loadgen import gates, workload_api
from loadgen.scenarios import load
from testbed.kube import workloads as workloads_api


def test_a_release_before_the_api_is_named_with_the_release_the_api_starts_in() -> None:
    text = workload_api.problem("v1.34.2", None)
    assert text is not None
    assert "Kubernetes v1.34.2 has no such API (it starts in 1.35" in text
    assert "\n" not in text


def test_each_release_without_the_api_names_the_gates_it_needs() -> None:
    text = workload_api.problem("v1.37.2", None)
    assert text is not None and "feature gates GenericWorkload=true " in text
    for old in ("v1.36.4", "v1.35.8"):
        text = workload_api.problem(old, None)
        assert text is not None and "GenericWorkload=true,GangScheduling=true" in text, text


def test_the_api_served_but_the_gang_plugin_off_is_refused_naming_its_gate() -> None:
    text = workload_api.problem("v1.36.4", "v1alpha2", ("GangScheduling",))
    assert text is not None and "runs with GangScheduling off" in text
    assert "--feature-gates GenericWorkload=true,GangScheduling=true" in text


def test_a_serving_cluster_has_no_problem_and_only_native_gangs_need_it() -> None:
    for version in ("v1beta1", "v1alpha2", "v1alpha1"):
        assert workload_api.problem("v1.37.2", version) is None
    assert workload_api.needed(load("gang", {"native": "true"}))
    assert not workload_api.needed(load("gang", {}))


def test_only_1_35s_v1alpha1_has_no_pod_group_objects() -> None:
    assert not workloads_api.standalone("v1alpha1")
    assert workloads_api.standalone("v1alpha2") and workloads_api.standalone("v1beta1")
    assert workloads_api.pod_groups("v1alpha2").path("ns") == (
        "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups"
    )
    assert workload_api.release_of("v1.36.4") == "1.36" and workload_api.release_of("x") is None


def test_derived_attributes_before_1_37_name_the_release_and_on_1_37_the_gate() -> None:
    text = gates.derived_problem("v1.36.4", {"DynamicResourceAllocation": True})
    assert text is not None and "\n" not in text
    assert "need Kubernetes 1.37 or later with the alpha gate DRADerivedAttributes" in text
    assert "Kubernetes v1.36.4 has no such gate" in text
    off = gates.derived_problem("v1.37.2", {"DRADerivedAttributes": False})
    assert off is not None and "(testbed up --feature-gates DRADerivedAttributes=true)" in off
    # A readable gate list without the gate at all is off, too; unknown is not refused.
    assert gates.derived_problem("v1.37.2", {"GenericWorkload": True}) is not None
    assert gates.derived_problem("v1.37.2", None) is None
    assert gates.derived_problem("v1.37.2", {"DRADerivedAttributes": True}) is None


def test_only_a_derived_claim_needs_the_gate() -> None:
    derived = {"numa": "true", "derived": "true", "align": "false"}
    assert gates.derived_needed(load("alignment", derived))
    assert not gates.derived_needed(load("alignment", {"numa": "true"}))
