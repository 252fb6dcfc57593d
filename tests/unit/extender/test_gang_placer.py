"""The gang placer's books over a real index: when a gated gang is placed, where, what it
holds, and what it says of gangs it cannot place (plain objects, no cluster)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from extender.gangs.placer import Placer, Write
from testbed import vocab
from testbed.kube.watching import Change, Snapshot
from tests.support import extender_objects as objects
from tests.unit.extender.helpers import NS, core_of

BLOCKS = {"b0": 3, "b1": 2, "b2": 1}
"""DGX nodes (8 GPU + 8 NIC) per block: room for that many 8-pair pods."""


def _fleet() -> list[dict[str, Any]]:
    out = [objects.template(NS, "pairs", objects.pair_spec(8))]
    for block, nodes in BLOCKS.items():
        for i in range(nodes):
            out += objects.dgx(f"{block}-n{i}", rack=f"{block}-r0", block=block)
    return out


def _member(gang: str, i: int, size: int | None, *, gated: bool = True) -> dict[str, Any]:
    annotations = {} if size is None else {vocab.ANNOTATION_GANG_SIZE: str(size)}
    pod = objects.pod(
        NS,
        f"{gang}-{i}",
        templates=["pairs"],
        labels={vocab.LABEL_GANG: gang},
        annotations=annotations,
    )
    pod["metadata"]["resourceVersion"] = "1"
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": vocab.GATE_GANG_PLACEMENT}]
    return pod


def _placer(outcomes: list[str], clock: list[float] | None = None) -> Placer:
    now = clock if clock is not None else [0.0]
    return Placer(core_of(_fleet()), 60.0, clock=lambda: now[0], on_outcome=outcomes.append)


def _blocks_of(writes: list[Write]) -> set[tuple[str, ...]]:
    out = set()
    for w in writes:
        assert not w.status, w
        terms = w.patch["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        out.add(tuple(terms[0]["matchExpressions"][-1]["values"]))
    return out


def _snapshot(pods: list[dict[str, Any]]) -> Snapshot:
    return Snapshot(items=pods, resource_version="1")


def test_a_gang_waits_until_all_its_pods_are_present() -> None:
    outcomes: list[str] = []
    placer = _placer(outcomes)
    placer.feed(_snapshot([_member("g", 0, 2)]))
    assert placer.due() == []
    placer.feed(Change("ADDED", _member("g", 1, 2)))
    patches = placer.due()
    assert sorted(w.pod["metadata"]["name"] for w in patches) == ["g-0", "g-1"]
    # The fullest block that holds 2: b1 (2 nodes), not b0 (3).
    assert _blocks_of(patches) == {("b1",)}
    assert outcomes == ["placed_one_block"]
    assert placer.due() == []  # sent once per version of each pod


def test_concurrent_gangs_do_not_take_the_same_room() -> None:
    outcomes: list[str] = []
    placer = _placer(outcomes)
    placer.feed(_snapshot([_member("a", i, 2) for i in range(2)]))
    first = placer.due()
    placer.feed(Change("ADDED", _member("b", 0, 2)))
    placer.feed(Change("ADDED", _member("b", 1, 2)))
    second = placer.due()
    assert _blocks_of(first) == {("b1",)}
    assert _blocks_of(second) == {("b0",)}  # b1 is held for gang a until its pods bind


def test_bound_pods_release_what_their_gang_held() -> None:
    placer = _placer([])
    gang = [_member("a", i, 2) for i in range(2)]
    placer.feed(_snapshot(gang))
    placer.due()
    for i, pod in enumerate(gang):  # bound: they leave the pending selection
        pod["spec"]["nodeName"] = f"b1-n{i}"
        pod["spec"].pop("schedulingGates")
        placer.feed(Change("DELETED", pod))
    assert placer.gangs == {}


def test_a_gang_no_block_holds_goes_to_the_fewest_blocks() -> None:
    placer = _placer([])
    placer.feed(_snapshot([_member("big", i, 5) for i in range(5)]))
    assert _blocks_of(placer.due()) == {("b0", "b1")}


def test_a_gang_that_fits_nowhere_stays_gated_and_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: list[str] = []
    placer = _placer(outcomes)
    placer.feed(_snapshot([_member("huge", i, 7) for i in range(7)]))
    with caplog.at_level(logging.WARNING):
        first = placer.due()
        assert placer.due() == []
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "gang ns/huge of 7 pods fits in no blocks now" in said[0]
    assert outcomes == ["no_room"]
    # Each pod's condition carries the same line (kubectl describe, loadgen's pending reasons).
    assert len(first) == 7 and all(w.status for w in first)
    (condition,) = first[0].patch["status"]["conditions"]
    assert condition == {
        "type": vocab.CONDITION_GANG_PLACEMENT,
        "status": "False",
        "reason": "NoRoom",
        "message": said[0],
    }
    assert len(placer.gangs["ns/huge"].pods) == 7  # followed still, nothing lost


def test_a_gated_pod_without_a_gang_size_is_said_once_and_left_gated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: list[str] = []
    placer = _placer(outcomes)
    with caplog.at_level(logging.WARNING):
        placer.feed(_snapshot([_member("g", 0, None)]))
        placer.feed(Change("MODIFIED", _member("g", 0, None)))
        (written,) = placer.due()
        assert placer.due() == []
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "names no gang size" in said[0], said
    assert outcomes == ["bad_input"]
    assert written.status and written.patch["status"]["conditions"][0]["reason"] == "BadInput"


def test_pods_not_gated_are_not_followed() -> None:
    placer = _placer([])
    placer.feed(_snapshot([_member("g", i, 2, gated=False) for i in range(2)]))
    assert placer.due() == [] and placer.gangs == {}


def test_a_gang_on_a_profile_no_scheduler_serves_is_named_when_its_hold_runs_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: list[str] = []
    clock = [0.0]
    placer = _placer(outcomes, clock)
    gang = [_member("a", i, 2) for i in range(2)]
    for pod in gang:
        pod["spec"]["schedulerName"] = "no-such-scheduler"
    placer.feed(_snapshot(gang))
    placer.due()
    clock[0] = 61.0
    with caplog.at_level(logging.WARNING):
        placer.due()
        placer.due()
    assert outcomes == ["placed_one_block", "hold_expired"]
    assert placer.gangs["ns/a"].held == {}
    said = caplog.records[0].getMessage()
    assert "not bound 60s after it was placed in b1" in said
    assert "their profile no-such-scheduler" in said


def test_only_nodes_the_pods_node_selector_allows_are_counted() -> None:
    placer = _placer([])
    gang = [_member("g", i, 2) for i in range(2)]
    for pod in gang:  # b1 would be the best fit; the pods may only go to b0's rack
        pod["spec"]["nodeSelector"] = {vocab.LABEL_RACK: "b0-r0"}
    placer.feed(_snapshot(gang))
    assert _blocks_of(placer.due()) == {("b0",)}


def test_a_gang_that_waited_is_told_so_and_then_placed() -> None:
    outcomes: list[str] = []
    placer = _placer(outcomes)
    first = [_member("a", i, 3) for i in range(3)]
    placer.feed(_snapshot(first))
    assert _blocks_of(placer.due()) == {("b0",)}
    for i in range(4):  # b0 is held for gang a: 3 pods of room left, in b1 and b2
        placer.feed(Change("ADDED", _member("b", i, 4)))
    told = placer.due()
    assert [w.patch["status"]["conditions"][0]["reason"] for w in told] == ["NoRoom"] * 4
    for pod in first:  # gang a goes away before binding: its hold with it
        placer.feed(Change("DELETED", pod))
    writes = placer.due()
    releases = [w for w in writes if not w.status]
    placed = [w.patch["status"]["conditions"][0] for w in writes if w.status]
    assert _blocks_of(releases) == {("b0", "b2")}
    assert (
        placed
        == [
            {
                "type": vocab.CONDITION_GANG_PLACEMENT,
                "status": "True",
                "reason": "Placed",
                "message": "placed in b0, b2",
            }
        ]
        * 4
    )
    assert outcomes == ["placed_one_block", "no_room", "placed_blocks"]
