"""The word a pending pod's conditions give loadgen's pending reasons."""

from __future__ import annotations

from loadgen import watch_events
from testbed import vocab

GATED = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "SchedulingGated",
    "message": "Scheduling is blocked due to non-empty scheduling gates",
}


def test_the_schedulers_word_on_a_refused_pod_without_its_preemption_postscript() -> None:
    refused = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes ...",
    }
    assert watch_events.scheduling_verdict({"conditions": [refused]}) == (
        "0/3 nodes are available: 3 Insufficient cpu."
    )


def test_a_gated_pod_the_gang_placer_cannot_release_says_why_before_the_scheduler() -> None:
    placer = {
        "type": vocab.CONDITION_GANG_PLACEMENT,
        "status": "False",
        "reason": "NoRoom",
        "message": "gang ns/g of 7 pods fits in no blocks now",
    }
    status = {"conditions": [GATED, placer]}
    assert watch_events.scheduling_verdict(status) == "gang ns/g of 7 pods fits in no blocks now"
    assert watch_events.scheduling_verdict({"conditions": [GATED]}) == GATED["message"]
