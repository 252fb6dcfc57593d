"""templates: claim templates, pods and Jobs as plain dicts."""

from __future__ import annotations

from loadgen import templates
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
