"""templates: claim templates, pods and Jobs as plain dicts."""

from __future__ import annotations

import pytest

from loadgen import scenarios, templates
from loadgen.scenarios.model import Claim, Phase
from testbed import vocab


def test_aligned_claim_pairs_each_gpu_with_its_own_nic_on_one_pcie_root() -> None:
    t = templates.claim_template(Claim(gpus=2, nics=2), "r1")
    devices = t["spec"]["spec"]["devices"]
    names = [r["name"] for r in devices["requests"]]
    assert names == ["gpu-0", "nic-0", "gpu-1", "nic-1"]
    assert devices["constraints"] == [
        {"requests": ["gpu-0", "nic-0"], "matchAttribute": vocab.ATTR_PCIE_ROOT},
        {"requests": ["gpu-1", "nic-1"], "matchAttribute": vocab.ATTR_PCIE_ROOT},
    ]
    nic = devices["requests"][1]["exactly"]
    assert nic["deviceClassName"] == vocab.CLASS_RDMA_NIC


def test_k_gpus_without_nics_is_one_exact_count_request() -> None:
    t = templates.claim_template(Claim(gpus=4), "r1")
    (req,) = t["spec"]["spec"]["devices"]["requests"]
    assert req["exactly"] == {
        "deviceClassName": vocab.CLASS_GPU,
        "allocationMode": "ExactCount",
        "count": 4,
    }
    assert "constraints" not in t["spec"]["spec"]["devices"]


def test_memory_selector_is_a_cel_quantity_comparison() -> None:
    t = templates.claim_template(Claim(min_memory="40Gi"), "r1")
    (sel,) = t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    assert sel["cel"]["expression"] == (
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    )


def test_pods_carry_run_labels_toleration_and_claim() -> None:
    phase = Phase(name="p", kind="pods", count=3)
    spec = templates.pod_spec(phase, {"pool": "mine"})
    pod = templates.build(phase, 2, "r1", spec)
    assert pod["metadata"]["name"] == "p-000002"
    assert pod["metadata"]["namespace"] == "loadgen-r1"
    assert pod["metadata"]["labels"][vocab.LABEL_RUN] == "r1"
    assert pod["metadata"]["labels"][vocab.LABEL_MANAGED_BY] == templates.MANAGED_BY
    assert pod["spec"]["nodeSelector"] == {"pool": "mine"}
    assert pod["spec"]["tolerations"][0]["key"] == vocab.KWOK_TAINT_KEY
    assert pod["spec"]["resourceClaims"] == [
        {"name": "devices", "resourceClaimTemplateName": "gpu1"}
    ]
    assert "annotations" not in pod["metadata"]  # bare pods run until deleted


def test_jobs_carry_run_time_as_the_kwok_stage_delay_and_gang_label() -> None:
    phase = Phase(
        name="g", kind="jobs", count=1, parallelism=4, completions=4, gang=True, run_time=30
    )
    job = templates.build(phase, 0, "r1", templates.pod_spec(phase, {}))
    assert job["spec"]["parallelism"] == 4 and job["spec"]["completions"] == 4
    meta = job["spec"]["template"]["metadata"]
    assert meta["annotations"] == {vocab.KWOK_POD_COMPLETE_DELAY: "30000ms"}
    assert meta["labels"][vocab.LABEL_GANG] == "g-000000"
    assert meta["labels"][vocab.LABEL_RUN] == "r1"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_device_plugin_pods_request_the_extended_resource_not_a_claim() -> None:
    phase = Phase(name="p", kind="pods", count=1, claim=Claim(gpus=2, device_plugin=True))
    spec = templates.pod_spec(phase, {})
    assert "resourceClaims" not in spec
    assert spec["containers"][0]["resources"]["limits"] == {vocab.EXTENDED_RESOURCE_GPU: "2"}


def test_pods_ask_for_the_named_scheduler_only_when_one_is_given() -> None:
    phase = Phase(name="p", kind="pods", count=1)
    assert "schedulerName" not in templates.pod_spec(phase, {})
    assert templates.pod_spec(phase, {}, "plain-scheduler")["schedulerName"] == "plain-scheduler"


def test_gang_pods_name_their_schedulers_gang_profile() -> None:
    phase = Phase(name="g", kind="jobs", count=1, gang=True, gang_profile=True)
    assert templates.pod_spec(phase, {})["schedulerName"] == "default-scheduler-gang"
    assert templates.pod_spec(phase, {}, "plain-scheduler")["schedulerName"] == (
        "plain-scheduler-gang"
    )
    window = phase.model_copy(update={"gang_profile": False})
    assert "schedulerName" not in templates.pod_spec(window, {})


def test_only_gangs_take_the_gang_profile() -> None:
    with pytest.raises(ValueError, match="gang_profile applies to gangs"):
        Phase(name="p", kind="jobs", count=1, gang_profile=True)


def test_a_gated_gang_job_carries_the_placement_gate_and_its_size() -> None:
    phase = Phase(name="g", kind="jobs", count=1, parallelism=4, completions=4, gang=True)
    gated = phase.model_copy(update={"gang_gated": True})
    job = templates.build(gated, 0, "r1", templates.pod_spec(gated, {}))
    template = job["spec"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": vocab.GATE_GANG_PLACEMENT}]
    assert template["metadata"]["annotations"][vocab.ANNOTATION_GANG_SIZE] == "4"
    assert template["metadata"]["labels"][vocab.LABEL_GANG] == "g-000000"
    plain = templates.build(phase, 0, "r1", templates.pod_spec(phase, {}))["spec"]["template"]
    assert "schedulingGates" not in plain["spec"]
    assert vocab.ANNOTATION_GANG_SIZE not in plain["metadata"].get("annotations", {})


@pytest.mark.parametrize("native", [False, True])
def test_only_labelled_gangs_are_gated(native: bool) -> None:
    with pytest.raises(ValueError, match="gang_gated applies to labelled gangs"):
        Phase(name="p", kind="jobs", count=1, gang=native, native_gang=native, gang_gated=True)


def test_the_gang_scenario_gates_on_request_and_refuses_native_gated_gangs() -> None:
    (phase,) = scenarios.load("gang", {"placement": "gated", "profile": False}).phases
    assert phase.gang_gated and not phase.gang_profile
    with pytest.raises(
        scenarios.ScenarioError,
        match=r"^scenario gang: .*placement gated applies to labelled gangs",
    ):
        scenarios.load("gang", {"placement": "gated", "native": True})


def _gpu_request(claim: Claim) -> dict[str, object]:
    (req,) = templates.claim_spec(claim)["devices"]["requests"]
    return req


def test_all_gpus_asks_allocation_mode_all_without_a_count() -> None:
    req = _gpu_request(Claim(all_gpus=True))
    assert req["exactly"] == {"deviceClassName": vocab.CLASS_GPU, "allocationMode": "All"}


def test_a_memory_share_is_a_capacity_request() -> None:
    req = _gpu_request(Claim(memory="10Gi"))
    assert req["exactly"]["capacity"] == {"requests": {vocab.GPU_CAP_MEMORY: "10Gi"}}
    assert Claim(memory="10Gi").gpus_per_claim == 0  # only the scheduler can count shares


def test_a_compute_share_is_a_milli_unit_capacity_request_beside_memory() -> None:
    req = _gpu_request(Claim(compute="250m"))
    assert req["exactly"]["capacity"] == {"requests": {vocab.GPU_CAP_COMPUTE: "250m"}}
    both = _gpu_request(Claim(compute="0.5", memory="10Gi"))["exactly"]["capacity"]
    assert both == {"requests": {vocab.GPU_CAP_MEMORY: "10Gi", vocab.GPU_CAP_COMPUTE: "0.5"}}
    assert Claim(compute="250m").gpus_per_claim == 0
    # One template per amount, however it is written.
    assert Claim(compute="0.25").key == Claim(compute="250m").key == "gpu1-compute250m"


def test_admin_access_marks_the_request_and_labels_the_namespace() -> None:
    assert _gpu_request(Claim(admin_access=True))["exactly"]["adminAccess"] is True
    ns = templates.namespace("r1", admin_access=True)
    assert ns["metadata"]["labels"][templates.LABEL_ADMIN_ACCESS] == "true"
    assert templates.LABEL_ADMIN_ACCESS not in templates.namespace("r1")["metadata"]["labels"]


def test_every_run_namespace_enforces_pod_security_baseline() -> None:
    for admin in (False, True):
        labels = templates.namespace("r1", admin_access=admin)["metadata"]["labels"]
        assert labels[templates.LABEL_POD_SECURITY_ENFORCE] == "baseline"
        assert [k for k in labels if k.startswith("pod-security.kubernetes.io/")] == [
            templates.LABEL_POD_SECURITY_ENFORCE
        ]


def test_first_available_lists_alternatives_in_order_with_the_claims_class() -> None:
    claim = Claim.model_validate({"first_available": "1>=80Gi,2", "gpu_class": "g.example.com"})
    req = _gpu_request(claim)
    first, second = req["firstAvailable"]
    assert (first["name"], first["count"], first["deviceClassName"]) == ("alt0", 1, "g.example.com")
    assert "80Gi" in first["selectors"][0]["cel"]["expression"]
    assert (second["name"], second["count"]) == ("alt1", 2) and "selectors" not in second
    assert claim.gpus_per_claim == 1


def test_pods_sharing_a_claim_name_the_claim_of_their_group() -> None:
    phase = Phase(name="s", kind="pods", count=7, claim=Claim(gpus=2, shared_by=3))
    spec = templates.pod_spec(phase, {})
    names = [
        templates.pod(phase, i, "r1", spec)["spec"]["resourceClaims"][0]["resourceClaimName"]
        for i in range(7)
    ]
    assert names == ["s-shared-000000"] * 3 + ["s-shared-000001"] * 3 + ["s-shared-000002"]
    claim = templates.shared_claim(phase, 1, "r1")
    assert claim["kind"] == "ResourceClaim" and claim["metadata"]["name"] == "s-shared-000001"
    assert claim["spec"] == templates.claim_spec(phase.claim)
    assert phase.gpus_held == 6  # three claims of two GPUs
    assert "resourceClaimName" not in str(spec)  # the shared spec itself is left alone


def test_claim_shapes_are_refused_where_they_make_no_sense() -> None:
    import pytest
    from pydantic import ValidationError

    for bad in (
        {"device_plugin": True, "shared_by": 2},
        {"all_gpus": True, "memory": "10Gi"},
        {"gpus": 2, "nics": 2, "all_gpus": True},
        {"memory": "lots"},
        {"gpus": 0, "admin_access": True},
    ):
        with pytest.raises(ValidationError):
            Claim.model_validate(bad)
    with pytest.raises(ValidationError):
        Phase(name="j", kind="jobs", count=1, claim=Claim(shared_by=2))


def test_a_mig_profile_asks_the_mig_class_for_that_partition() -> None:
    claim = Claim(mig_profile="1g.10gb")
    req = _gpu_request(claim)
    assert req["exactly"]["deviceClassName"] == vocab.CLASS_MIG
    (sel,) = req["exactly"]["selectors"]
    assert sel["cel"]["expression"] == "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    assert claim.key == "gpu1-mig1g10gb" and claim.gpus_per_claim == 0


def test_a_mig_profile_must_look_like_one() -> None:
    import pytest
    from pydantic import ValidationError

    for bad in ({"mig_profile": "big"}, {"mig_profile": "1g.10gb", "all_gpus": True}):
        with pytest.raises(ValidationError):
            Claim.model_validate(bad)


def test_pods_say_the_gpu_memory_their_workload_uses_for_the_utilization_figures() -> None:
    def annotations(claim: Claim) -> dict[str, str]:
        phase = Phase(name="p", kind="pods", count=1, claim=claim)
        meta = templates.build(phase, 0, "r1", templates.pod_spec(phase, {}))["metadata"]
        return dict(meta.get("annotations") or {})

    assert annotations(Claim(gpus=2, footprint="10G")) == {
        vocab.ANNOTATION_GPU_MEMORY: str(2 * 10**10)
    }
    # A capacity share says its request; a whole GPU without a footprint says nothing.
    assert annotations(Claim(memory="4.5Gi")) == {vocab.ANNOTATION_GPU_MEMORY: str(9 * 2**29)}
    assert annotations(Claim(gpus=1)) == {}
    assert annotations(Claim(device_plugin=True, footprint="80G")) == {
        vocab.ANNOTATION_GPU_MEMORY: str(80 * 10**9)
    }


def test_a_numa_claim_is_one_in_tree_constraint_over_every_gpu_and_nic_request() -> None:
    spec = templates.claim_spec(Claim(gpus=4, nics=4, align=False, numa=True))
    assert [r["name"] for r in spec["devices"]["requests"]] == ["gpu", "nic"]
    assert spec["devices"]["constraints"] == [
        {"requests": ["gpu", "nic"], "matchAttribute": vocab.ATTR_NUMA_NODE}
    ]
    both = templates.claim_spec(Claim(gpus=2, nics=2, numa=True))["devices"]["constraints"]
    assert both[-1] == {
        "requests": ["gpu-0", "nic-0", "gpu-1", "nic-1"],
        "matchAttribute": vocab.ATTR_NUMA_NODE,
    }
    assert [c["matchAttribute"] for c in both[:2]] == [vocab.ATTR_PCIE_ROOT] * 2
    assert Claim(gpus=2, nics=2, numa=True).key == "gpu2-nic2-aligned-numa"


def test_a_derived_numa_claim_maps_each_drivers_own_numa_attribute_to_one_name() -> None:
    spec = templates.claim_spec(Claim(gpus=4, nics=4, align=False, numa=True, derived=True))
    gpu, nic = spec["devices"]["requests"]
    assert gpu["exactly"]["derivedAttributes"] == [
        {
            "name": vocab.DERIVED_NUMA_NODE,
            "expression": "device.attributes['resource.kubernetes.io'].numaNode",
        }
    ]
    assert nic["exactly"]["derivedAttributes"] == [
        {"name": vocab.DERIVED_NUMA_NODE, "expression": "device.attributes['dra.net'].numaNode"}
    ]
    assert spec["devices"]["constraints"] == [
        {"requests": ["gpu", "nic"], "matchAttribute": vocab.DERIVED_NUMA_NODE}
    ]
    # Aligned pairs keep their PCIe-root constraints on the physical attribute.
    pairs = templates.claim_spec(Claim(gpus=2, nics=2, numa=True, derived=True))["devices"]
    assert [c["matchAttribute"] for c in pairs["constraints"]] == [
        vocab.ATTR_PCIE_ROOT,
        vocab.ATTR_PCIE_ROOT,
        vocab.DERIVED_NUMA_NODE,
    ]
    assert all(len(r["exactly"]["derivedAttributes"]) == 1 for r in pairs["requests"])
    assert Claim(gpus=2, nics=2, numa=True, derived=True).key == "gpu2-nic2-aligned-numa-derived"


def test_derived_without_numa_is_refused() -> None:
    with pytest.raises(ValueError, match="derived is a way of numa alignment: set numa too"):
        Claim(gpus=1, nics=1, derived=True)


def _gang_phase(native: bool) -> Phase:
    return Phase(
        name="gang",
        kind="jobs",
        count=2,
        parallelism=4,
        completions=4,
        gang=True,
        native_gang=native,
    )


def test_a_native_gang_job_names_its_pod_group_and_carries_no_private_label() -> None:
    phase = _gang_phase(True)
    job = templates.build(phase, 1, "r1", templates.pod_spec(phase, {}))
    template = job["spec"]["template"]
    assert template["spec"]["schedulingGroup"] == {"podGroupName": "gang-000001"}
    assert vocab.LABEL_GANG not in template["metadata"]["labels"]
    group = templates.pod_group(phase, 1, "r1")
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1" and group["kind"] == "PodGroup"
    assert group["metadata"]["name"] == "gang-000001"
    assert group["spec"] == {
        "workloadRef": {"workloadName": "gang-000001", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 4}},
    }
    workload = templates.workload(phase, 1, "r1")
    assert workload["kind"] == "Workload"
    assert workload["spec"]["podGroupTemplates"] == [
        {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}
    ]


def test_on_1_36_the_pod_group_names_its_template_as_v1alpha2_has_it() -> None:
    phase = _gang_phase(True)
    group = templates.pod_group(phase, 1, "r1", "v1alpha2")
    assert group["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert group["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "gang-000001", "podGroupTemplateName": "workers"}
        },
        "schedulingPolicy": {"gang": {"minCount": 4}},
    }
    workload = templates.workload(phase, 1, "r1", "v1alpha2")
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    job = templates.build(phase, 1, "r1", templates.pod_spec(phase, {}), "v1alpha2")
    assert job["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": "gang-000001"}


def test_on_1_35_the_workload_holds_the_group_and_pods_name_it_by_workload_ref() -> None:
    phase = _gang_phase(True)
    workload = templates.workload(phase, 1, "r1", "v1alpha1")
    assert workload["apiVersion"] == "scheduling.k8s.io/v1alpha1"
    assert workload["spec"] == {
        "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 4}}}]
    }
    job = templates.build(phase, 1, "r1", templates.pod_spec(phase, {}), "v1alpha1")
    spec = job["spec"]["template"]["spec"]
    assert spec["workloadRef"] == {"name": "gang-000001", "podGroup": "workers"}
    assert "schedulingGroup" not in spec


def test_a_labelled_gang_job_keeps_the_private_label_and_no_scheduling_group() -> None:
    phase = _gang_phase(False)
    template = templates.build(phase, 0, "r1", templates.pod_spec(phase, {}))["spec"]["template"]
    assert template["metadata"]["labels"][vocab.LABEL_GANG] == "gang-000000"
    assert "schedulingGroup" not in template["spec"]
