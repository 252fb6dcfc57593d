"""The gang placer's block choice and the patch that releases a pod (plain data)."""

from __future__ import annotations

import pytest

from extender.gangs import affinity, blocks

GATE = "testbed.dra.io/gang-placement"
LABEL = "cloud.provider.com/topology-block"


def test_room_sums_nodes_by_block_less_what_is_held() -> None:
    slots = [("b0", 1), ("b0", 1), ("b1", 1), (None, 1), ("b2", 0)]
    assert blocks.room(slots, {"b0": 1, "b9": 3}) == {"b0": 1, "b1": 1}


def test_a_block_fully_held_has_no_room() -> None:
    assert blocks.room([("b0", 1), ("b0", 1)], {"b0": 2}) == {}


def test_the_fullest_block_that_still_holds_the_gang_whole_is_chosen() -> None:
    # b1 has just enough: the roomier b0 and b2 stay whole for larger gangs.
    assert blocks.choose({"b0": 40, "b1": 4, "b2": 10, "b3": 3}, 4) == ("b1",)


def test_ties_go_to_the_block_named_first() -> None:
    assert blocks.choose({"b2": 4, "b1": 4}, 4) == ("b1",)


def test_a_gang_no_block_holds_goes_to_the_fewest_blocks() -> None:
    # 64 pods: no block holds them; two do (40 + 30), the second the least roomy that
    # completes it (30, not 35).
    room = {"b0": 40, "b1": 35, "b2": 30, "b3": 20}
    assert blocks.choose(room, 64) == ("b0", "b2")


def test_three_blocks_when_two_are_not_enough() -> None:
    assert blocks.choose({"b0": 10, "b1": 10, "b2": 10, "b3": 5}, 24) == ("b0", "b1", "b3")


def test_a_gang_larger_than_all_the_room_fits_nowhere() -> None:
    assert blocks.choose({"b0": 3, "b1": 3}, 7) is None
    assert blocks.choose({}, 1) is None


def test_a_gang_of_no_pods_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one pod"):
        blocks.choose({"b0": 1}, 0)


def test_shares_hold_each_chosen_block_for_its_part_of_the_gang() -> None:
    room = {"b0": 40, "b2": 30}
    assert blocks.shares(room, ("b0", "b2"), 64) == {"b0": 40, "b2": 24}
    assert blocks.shares(room, ("b2",), 4) == {"b2": 4}


def _pod(spec: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7"}, "spec": spec}


def test_the_release_narrows_to_the_blocks_and_removes_only_its_gate() -> None:
    pod = _pod({"schedulingGates": [{"name": GATE}, {"name": "other"}]})
    patch = affinity.released(pod, GATE, LABEL, ["b2", "b0"])
    assert patch["metadata"] == {"resourceVersion": "7"}
    required = patch["spec"]["affinity"]["nodeAffinity"]
    terms = required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": LABEL, "operator": "In", "values": ["b0", "b2"]}]}
    ]
    assert patch["spec"]["schedulingGates"] == [{"name": "other"}]


def test_the_last_gate_removed_leaves_none() -> None:
    patch = affinity.released(_pod({"schedulingGates": [{"name": GATE}]}), GATE, LABEL, ["b0"])
    assert patch["spec"]["schedulingGates"] is None


def test_a_pod_with_its_own_required_terms_gets_the_block_added_to_each() -> None:
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    host = {"key": "kubernetes.io/hostname", "operator": "Exists"}
    own = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchFields": [host]}]
                }
            }
        },
        "schedulingGates": [{"name": GATE}],
    }
    patch = affinity.released(_pod(own), GATE, LABEL, ["b0"])
    terms = patch["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    block = {"key": LABEL, "operator": "In", "values": ["b0"]}
    assert terms == [
        {"matchExpressions": [zone, block]},
        {"matchFields": [host], "matchExpressions": [block]},
    ]
