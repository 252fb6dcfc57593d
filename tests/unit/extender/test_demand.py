"""A pod's demand from its claims and templates."""

from __future__ import annotations

from typing import Any

from extender import demand, expressions, selectors
from extender.config import Settings
from testbed import vocab
from tests.support import extender_objects as objects

NS = "ns"
EVALUATOR = expressions.Evaluator()
CLASSES = {
    c["metadata"]["name"]: selectors.parse_device_class(c, EVALUATOR) for c in objects.classes()
}


def of(pod: dict[str, Any], *objs: dict[str, Any]) -> demand.Demand:
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == "ResourceClaim"
    }
    templates = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == "ResourceClaimTemplate"
    }
    return demand.of_pod(
        pod,
        claim=lambda ns, n: claims.get((ns, n)),
        template=lambda ns, n: templates.get((ns, n)),
        classes=CLASSES,
        settings=Settings(),
    )


def test_pod_without_claims_demands_nothing() -> None:
    d = of(objects.pod(NS, "p"))
    assert d.empty and d.pairs == 0 and not d.notes


def test_template_gives_gpus_nics_and_aligned_groups() -> None:
    tmpl = objects.template(NS, "t", objects.pair_spec(2, aligned=True))
    d = of(objects.pod(NS, "p", templates=["t"]), tmpl)
    assert (d.gpu_class, d.gpus, d.nic_class, d.nics) == (
        vocab.CLASS_GPU,
        2,
        vocab.CLASS_RDMA_NIC,
        2,
    )
    assert d.groups == ((1, 1), (1, 1))
    assert d.pairs == 2


def test_generated_claim_named_in_pod_status_wins_over_template() -> None:
    tmpl = objects.template(NS, "t", objects.pair_spec(1))
    generated = objects.claim(NS, "p-t0-abcde", objects.pair_spec(4))
    pod = objects.pod(NS, "p", templates=["t"])
    pod["status"]["resourceClaimStatuses"] = [{"name": "t0", "resourceClaimName": "p-t0-abcde"}]
    assert of(pod, tmpl, generated).gpus == 4


def test_allocated_claims_add_no_demand() -> None:
    c = objects.claim(NS, "c", objects.pair_spec(1), allocated=[("gpu.nvidia.com", "n", "gpu-0")])
    d = of(objects.pod(NS, "p", claims=["c"]), c)
    assert d.gpus == 0 and any("already allocated" in n for n in d.notes)


def test_constraint_without_request_list_covers_all_requests() -> None:
    spec = objects.claim_spec(
        [objects.request("g", vocab.CLASS_GPU, 2), objects.request("n", vocab.CLASS_NIC)]
    )
    spec["devices"]["constraints"] = [{"matchAttribute": vocab.ATTR_PCIE_ROOT}]
    d = of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", spec))
    assert d.groups == ((2, 1),)


def test_unknown_class_and_missing_claim_are_notes_not_demand() -> None:
    spec = objects.claim_spec([objects.request("x", "no-such-class", 3)])
    d = of(objects.pod(NS, "p", claims=["c", "gone"]), objects.claim(NS, "c", spec))
    assert d.gpus == 0 and d.nics == 0
    assert any("no-such-class" in n for n in d.notes)
    assert any("gone not found" in n for n in d.notes)


def test_first_available_scores_as_its_first_choice_and_all_mode_is_left_to_allocation() -> None:
    spec = objects.claim_spec(
        [
            {"name": "fa", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}]},
            {
                "name": "all",
                "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
            },
        ]
    )
    d = of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", spec))
    assert d.gpus == 1 and d.notes == () and d.unjudged == ()
    assert len(d.specs) == 1  # the whole claim goes to allocation.judge


def test_annotations_and_job() -> None:
    pod = objects.pod(
        NS,
        "p",
        labels={vocab.LABEL_JOB_NAME: "train"},
        annotations={
            vocab.ANNOTATION_REQUIRE_ALIGNMENT: "PCIe-Root",
            vocab.ANNOTATION_REQUIRE_LOCALITY: "galaxy",
        },
    )
    d = of(pod)
    assert d.require_alignment == "pcie-root"
    assert d.require_locality is None and any("galaxy" in n for n in d.notes)
    assert d.job == "ns/train"


def test_gang_label_takes_precedence_over_job_name() -> None:
    pod = objects.pod(NS, "p", labels={vocab.LABEL_JOB_NAME: "j", vocab.LABEL_GANG: "g"})
    assert of(pod).job == "ns/g"


def test_a_pod_group_is_the_gang_ahead_of_label_and_job() -> None:
    pod = objects.pod(NS, "p", labels={vocab.LABEL_JOB_NAME: "j", vocab.LABEL_GANG: "g"})
    pod["spec"]["schedulingGroup"] = {"podGroupName": "pg"}
    assert of(pod).job == "ns/pg" and of(pod).group


def test_a_1_35_pod_follows_its_workloads_pod_group_as_its_gang() -> None:
    pod = objects.pod(NS, "p", labels={vocab.LABEL_JOB_NAME: "j"})
    pod["spec"]["workloadRef"] = {"name": "train", "podGroup": "workers"}
    d = of(pod)
    assert d.job == "ns/train/workers" and d.group


def _numa_spec(gpus: int, nics: int) -> dict[str, Any]:
    spec = objects.claim_spec(
        [
            objects.request("gpu", vocab.CLASS_GPU, gpus),
            objects.request("nic", vocab.CLASS_RDMA_NIC, nics),
        ]
    )
    spec["devices"]["constraints"] = [
        {"requests": ["gpu", "nic"], "matchAttribute": vocab.ATTR_NUMA_NODE}
    ]
    return spec


def test_an_in_tree_numa_constraint_over_gpus_and_nics_marks_the_pod_aligned_by_dra() -> None:
    d = of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", _numa_spec(4, 4)))
    assert d.aligned_in_tree and d.pairs == 4 and d.groups == ()
    # Over GPUs alone, or no NUMA constraint at all: nothing aligned by DRA.
    gpus_only = _numa_spec(2, 1)
    gpus_only["devices"]["constraints"][0]["requests"] = ["gpu"]
    assert not of(
        objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", gpus_only)
    ).aligned_in_tree
    tmpl = objects.template(NS, "t", objects.pair_spec(2, aligned=True))
    assert not of(objects.pod(NS, "p", templates=["t"]), tmpl).aligned_in_tree


def test_a_derived_numa_constraint_is_in_tree_alignment_too() -> None:
    spec = _numa_spec(4, 4)
    sources = {"gpu": vocab.ATTR_NUMA_NODE, "nic": vocab.NIC_ATTR_NUMA}
    for req in spec["devices"]["requests"]:
        domain, _, name = sources[req["name"]].rpartition("/")
        expr = f"device.attributes['{domain}'].{name}"
        req["exactly"]["derivedAttributes"] = [{"name": "derived/numa", "expression": expr}]
    spec["devices"]["constraints"][0]["matchAttribute"] = "derived/numa"
    d = of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", spec))
    assert d.aligned_in_tree and d.pairs == 4
    # Derived from something else than a NUMA node (or on one side only): not alignment.
    spec["devices"]["requests"][0]["exactly"]["derivedAttributes"][0]["expression"] = (
        "device.attributes['gpu.nvidia.com'].productName"
    )
    assert not of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", spec)).aligned_in_tree
    del spec["devices"]["requests"][0]["exactly"]["derivedAttributes"]
    assert not of(objects.pod(NS, "p", claims=["c"]), objects.claim(NS, "c", spec)).aligned_in_tree
