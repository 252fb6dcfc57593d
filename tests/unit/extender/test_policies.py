"""Scoring and filtering decisions, through the core, on plain objects."""

from __future__ import annotations

from typing import Any

from extender.config import Settings, Weights
from testbed import vocab
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import core_of

NS = "ns"
G, N = vocab.GPU_DRIVER, vocab.NIC_DRIVER


def pair_pod(pairs: int = 1, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    tmpl = objects.template(NS, f"pairs-{pairs}", objects.pair_spec(pairs))
    return objects.pod(NS, "p", templates=[tmpl["metadata"]["name"]], **kw), tmpl


def gpu_pod(gpus: int, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = objects.claim_spec([objects.request("g", vocab.CLASS_GPU, gpus)])
    tmpl = objects.template(NS, f"gpus-{gpus}", spec)
    return objects.pod(NS, "p", templates=[tmpl["metadata"]["name"]], **kw), tmpl


def allocate(node: str, devices: list[tuple[str, str]], name: str = "busy") -> dict[str, Any]:
    return objects.claim(NS, name, {}, allocated=[(d, node, dev) for d, dev in devices])


# -- alignment ------------------------------------------------------------------------------


def test_aligned_beats_numa_beats_unaligned() -> None:
    pod, tmpl = pair_pod(8)
    core = core_of([*objects.dgx("al"), *objects.numa_only("nu"), *objects.unaligned("un"), tmpl])
    al, nu, un = core.prioritize(pod, ["al", "nu", "un"])
    assert al > nu > un


def test_alignment_counts_free_devices_only() -> None:
    pod, tmpl = pair_pod(1)
    # On "half", every NIC is taken except one on a root whose GPU is taken: no aligned pair.
    taken = [(G, "gpu-0")] + [(N, f"nic-{i}") for i in range(1, 8)]
    core = core_of([*objects.dgx("half"), *objects.dgx("free"), allocate("half", taken), tmpl])
    half, free = core.prioritize(pod, ["half", "free"])
    assert free > half


def test_gpu_only_pods_are_not_judged_on_alignment() -> None:
    pod, tmpl = gpu_pod(8)
    core = core_of([*objects.dgx("al"), *objects.unaligned("un"), tmpl])
    al, un = core.prioritize(pod, ["al", "un"])
    assert al == un


# -- packing --------------------------------------------------------------------------------


def test_best_fit_prefers_the_fuller_node() -> None:
    pod, tmpl = gpu_pod(1)
    busy = allocate("full", [(G, f"gpu-{i}") for i in range(6)])
    core = core_of([*objects.dgx("full"), *objects.dgx("empty"), busy, tmpl])
    full, empty = core.prioritize(pod, ["full", "empty"])
    assert full > empty


def test_exact_fit_scores_ten() -> None:
    pod, tmpl = gpu_pod(8)
    assert core_of([*objects.dgx("n"), tmpl]).prioritize(pod, ["n"]) == [10]


# -- job locality ---------------------------------------------------------------------------


def test_job_siblings_pull_to_their_rack_then_block() -> None:
    pod, tmpl = gpu_pod(1, labels={vocab.LABEL_JOB_NAME: "train"})
    nodes = [
        *objects.dgx("sib", rack="r1", block="b1"),
        *objects.dgx("same-rack", rack="r1", block="b1"),
        *objects.dgx("same-block", rack="r2", block="b1"),
        *objects.dgx("far", rack="r9", block="b9"),
    ]
    sibling = objects.pod(
        NS, "sib-0", labels={vocab.LABEL_JOB_NAME: "train"}, node_name="sib", phase="Running"
    )
    core = core_of([*nodes, tmpl, sibling])
    rack, block, far = core.prioritize(pod, ["same-rack", "same-block", "far"])
    assert rack > block > far


def test_a_sibling_being_bound_pulls_to_its_nominated_node() -> None:
    """kube-scheduler (1.35 on) writes its choice to `status.nominatedNodeName` before it
    writes a DRA pod's claims and binding; the gang's next pod, scored meanwhile, follows it
    there instead of taking any node (2026-11-27: seconds between the two on a busy API
    server, long enough for a whole gang of 4 to be scored with no sibling seen)."""
    labels = {vocab.LABEL_GANG: "g"}
    pod, tmpl = gpu_pod(1, labels=labels)
    nodes = [
        *objects.dgx("chosen", rack="r1", block="b1"),
        *objects.dgx("same-rack", rack="r1", block="b1"),
        *objects.dgx("same-block", rack="r2", block="b1"),
        *objects.dgx("far", rack="r9", block="b9"),
    ]
    being_bound = objects.pod(NS, "g-0", labels=labels)
    being_bound["status"]["nominatedNodeName"] = "chosen"
    core = core_of([*nodes, tmpl, being_bound])
    rack, block, far = core.prioritize(pod, ["same-rack", "same-block", "far"])
    assert rack > block > far
    assert core.siblings("ns/g").pods == 1


def test_siblings_of_another_job_do_not_count() -> None:
    pod, tmpl = gpu_pod(1, labels={vocab.LABEL_JOB_NAME: "mine"})
    other = objects.pod(
        NS, "o", labels={vocab.LABEL_JOB_NAME: "other"}, node_name="a", phase="Running"
    )
    core = core_of([*objects.dgx("a", rack="r1"), *objects.dgx("b", rack="r2"), tmpl, other])
    a, b = core.prioritize(pod, ["a", "b"])
    assert a == b


# -- neutral and unknown ------------------------------------------------------------------


def test_pods_without_claims_get_neutral_scores_and_pass_the_filter() -> None:
    core = core_of(objects.dgx("n"))
    pod = objects.pod(NS, "plain")
    assert core.prioritize(pod, ["n", "ghost"]) == [0, 0]
    assert core.filter(pod, ["n", "ghost"]).passed == ["n", "ghost"]


def test_unknown_nodes_never_score_above_known_ones() -> None:
    pod, tmpl = pair_pod(8)
    core = core_of([*objects.unaligned("worst"), tmpl])
    worst, ghost = core.prioritize(pod, ["worst", "ghost"])
    assert ghost == 0 and worst >= ghost


def test_nothing_is_judged_before_the_cache_is_ready() -> None:
    pod, tmpl = pair_pod(8, annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    core = core_of([*objects.unaligned("un"), tmpl])
    core.ready = lambda: False
    assert core.filter(pod, ["un"]).passed == ["un"]
    assert core.prioritize(pod, ["un"]) == [0]


def test_weights_change_the_balance() -> None:
    # "al" is aligned but emptier; "tight" fits exactly but is unaligned.
    pod, tmpl = pair_pod(2)
    busy = allocate("tight", [(G, f"gpu-{i}") for i in range(6)])
    objs = [*objects.dgx("al"), *objects.unaligned("tight"), busy, tmpl]
    align_heavy = Settings(weights=Weights(alignment=10, packing=1, locality=0))
    pack_heavy = Settings(weights=Weights(alignment=0.1, packing=10, locality=0))
    al, tight = core_of(objs, align_heavy).prioritize(pod, ["al", "tight"])
    assert al > tight
    al, tight = core_of(objs, pack_heavy).prioritize(pod, ["al", "tight"])
    assert tight > al


# -- filter: required alignment and locality -----------------------------------------------


def test_required_alignment_rejects_only_provably_impossible_nodes() -> None:
    pod, tmpl = pair_pod(8, annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    core = core_of([*objects.dgx("al"), *objects.numa_only("nu"), tmpl])
    out = core.filter(pod, ["al", "nu", "ghost"])
    assert out.passed == ["al", "ghost"]
    assert set(out.failed) == {"nu"} and "PCIe root" in out.failed["nu"]
    assert not out.unresolvable


def test_required_numa_alignment_accepts_numa_local_nodes() -> None:
    pod, tmpl = pair_pod(4, annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "numa"})
    core = core_of([*objects.dgx("al"), *objects.numa_only("nu"), *objects.unaligned("un"), tmpl])
    out = core.filter(pod, ["al", "nu", "un"])
    assert out.passed == ["al", "nu"] and set(out.failed) == {"un"}


def test_required_alignment_counts_allocated_devices() -> None:
    pod, tmpl = pair_pod(2, annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    taken = [(N, f"nic-{i}") for i in range(7)]
    core = core_of([*objects.dgx("n"), allocate("n", taken), tmpl])
    assert core.filter(pod, ["n"]).passed == []


def test_pods_without_requirements_are_never_filtered() -> None:
    pod, tmpl = pair_pod(8)
    core = core_of([*objects.unaligned("un"), tmpl])
    assert core.filter(pod, ["un"]).passed == ["un"]


def test_required_locality_keeps_the_job_in_its_rack() -> None:
    labels = {vocab.LABEL_JOB_NAME: "train"}
    pod, tmpl = gpu_pod(1, labels=labels, annotations={vocab.ANNOTATION_REQUIRE_LOCALITY: "rack"})
    sibling = objects.pod(NS, "s", labels=labels, node_name="a", phase="Running")
    nodes = [
        *objects.dgx("a", rack="r1"),
        *objects.dgx("b", rack="r1"),
        *objects.dgx("c", rack="r2"),
        objects.node("unlabelled", rack=None),
    ]
    out = core_of([*nodes, tmpl, sibling]).filter(pod, ["b", "c", "unlabelled"])
    assert out.passed == ["b"]
    assert set(out.unresolvable) == {"c", "unlabelled"}


def test_required_locality_passes_everything_for_the_first_pod() -> None:
    pod, tmpl = gpu_pod(
        1,
        labels={vocab.LABEL_JOB_NAME: "new"},
        annotations={vocab.ANNOTATION_REQUIRE_LOCALITY: "block"},
    )
    core = core_of([*objects.dgx("a"), *objects.dgx("b", block="b2"), tmpl])
    assert core.filter(pod, ["a", "b"]).passed == ["a", "b"]


def test_filter_changes_no_state() -> None:
    pod, tmpl = pair_pod(8, annotations={vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"})
    core = core_of([*objects.dgx("al"), tmpl])
    before = core.index.free_devices("al")
    core.filter(pod, ["al"])
    core.prioritize(pod, ["al"])
    assert core.index.free_devices("al") == before


def test_decisions_explain_each_term_only_where_debug_can_show_them() -> None:
    pod, tmpl = pair_pod(8)
    objs = [*objects.dgx("al"), *objects.unaligned("un"), tmpl]
    quiet = core_of(objs)
    quiet.prioritize(pod, ["un", "al"])
    quiet.filter(pod, ["un", "al"])
    assert not quiet.decisions  # nothing serves them without --debug: none are made
    core = core_of(objs, Settings(debug=True))
    core.prioritize(pod, ["un", "al"])
    last = core.decisions[-1]
    assert last["pod"] == "ns/p" and last["demand"]["gpus"] == 8
    assert last["top"][0]["node"] == "al"
    assert last["top"][0]["alignment"] == 1.0 and last["top"][0]["packing"] == 1.0
    assert len(last["top"]) == 1  # only the best-scoring nodes are explained


def test_claim_added_after_the_first_call_is_seen() -> None:
    pod = objects.pod(NS, "p", claims=["late"])
    core = core_of(objects.dgx("n"))
    assert core.demand(pod).gpus == 0
    spec = objects.claim_spec([objects.request("g", vocab.CLASS_GPU, 2)])
    core.index.upsert("ResourceClaim", objects.claim(NS, "late", spec))
    assert core.demand(pod).gpus == 2


# -- remembered scores follow the cluster ------------------------------------------------------


def test_scores_follow_allocations_and_labels_between_calls() -> None:
    pod, tmpl = gpu_pod(1, labels={vocab.LABEL_JOB_NAME: "train"})
    core = core_of([*objects.dgx("a", rack="r1"), *objects.dgx("b", rack="r2"), tmpl])
    first = core.prioritize(pod, ["a", "b"])
    assert first[0] == first[1]
    core.index.upsert("ResourceClaim", allocate("a", [(G, f"gpu-{i}") for i in range(6)]))
    a, b = core.prioritize(pod, ["a", "b"])
    assert a > b  # "a" filled up: best fit now prefers it
    sibling = objects.pod(
        NS, "s", labels={vocab.LABEL_JOB_NAME: "train"}, node_name="b", phase="Running"
    )
    core.index.upsert("Pod", sibling)
    a2, b2 = core.prioritize(pod, ["a", "b"])
    assert b2 > b and a2 < a  # locality now applies: "b" holds the sibling
    core.index.upsert("Node", objects.node("a", rack="r2"))  # "a" moves into the sibling's rack
    a3, _ = core.prioritize(pod, ["a", "b"])
    assert a3 > a2
    core.index.delete("Node", objects.node("a"))
    assert core.prioritize(pod, ["a", "b"])[0] == 0  # gone: never above a known node


def test_an_in_tree_numa_constrained_pod_is_not_scored_on_alignment_again() -> None:
    spec = objects.claim_spec(
        [
            objects.request("gpu", vocab.CLASS_GPU, 4),
            objects.request("nic", vocab.CLASS_RDMA_NIC, 4),
        ]
    )
    spec["devices"]["constraints"] = [
        {"requests": ["gpu", "nic"], "matchAttribute": vocab.ATTR_NUMA_NODE}
    ]
    tmpl = objects.template(NS, "numa4", spec)
    pod = objects.pod(NS, "p", templates=["numa4"])
    core = core_of([*objects.dgx("al"), *objects.numa_only("nu"), tmpl])
    al, nu = core.prioritize(pod, ["al", "nu"])
    assert al == nu  # DRA keeps both NUMA-local; root alignment is not scored on top
    plain, plain_tmpl = pair_pod(4)
    core = core_of([*objects.dgx("al"), *objects.numa_only("nu"), plain_tmpl])
    al, nu = core.prioritize(plain, ["al", "nu"])
    assert al > nu


def test_a_pod_group_with_nothing_placed_gathers_at_one_anchor_rack_then_its_block() -> None:
    """kube-scheduler places a PodGroup's pods in one cycle and binds none before the last,
    so the extender never sees a sibling placed: every pod follows the same anchor instead."""
    pod, tmpl = pair_pod(8, labels={vocab.LABEL_JOB_NAME: "train"})
    pod["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    nodes = [
        *objects.dgx("far", rack="r1", block="b1"),
        *objects.dgx("near", rack="r5", block="b0"),
        *objects.dgx("home", rack="r0", block="b0"),
        tmpl,
    ]
    core = core_of(nodes)
    far, near, home = core.prioritize(pod, ["far", "near", "home"])
    assert home > near > far
    assert core.prioritize(pod, ["far", "near"]) == [far, home]  # r0 full: r5 of b0 next
    # Without a PodGroup, a first pod has no sibling and no anchor: all alike.
    plain, _ = pair_pod(8, labels={vocab.LABEL_JOB_NAME: "train"})
    a, b, c = core.prioritize(plain, ["far", "near", "home"])
    assert a == b == c
