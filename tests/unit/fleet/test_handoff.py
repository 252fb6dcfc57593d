"""When `fleet apply --through-service` may stop waiting: the Fleet's status, read purely."""

from __future__ import annotations

from typing import Any

from fleet import handoff


def fleet(generation: int | None, status: str = "", reason: str = "", message: str = "") -> Any:
    conditions = [{"type": "Ready", "status": status, "reason": reason, "message": message}]
    body: dict[str, Any] = {"metadata": {"name": "f"}}
    if generation is not None:
        body["status"] = {"observedGeneration": generation, "conditions": conditions}
    return body


def test_ready_only_at_the_generation_written() -> None:
    assert handoff.readiness(fleet(None), 2) == (False, None, "waiting for fleet serve")
    assert handoff.readiness(fleet(1, "True", "AllNodesReady", "3/3"), 2)[0] is False
    assert handoff.readiness(fleet(2, "True", "AllNodesReady", "3/3"), 2) == (
        True,
        None,
        "AllNodesReady: 3/3",
    )


def test_an_invalid_spec_is_final_a_failed_reconcile_is_retried() -> None:
    refused = handoff.readiness(fleet(2, "False", "InvalidSpec", "unknown profile 'x'"), 2)
    assert refused == (
        False,
        "InvalidSpec: unknown profile 'x'",
        "InvalidSpec: unknown profile 'x'",
    )
    retried = handoff.readiness(fleet(2, "False", "Error", "API server down"), 2)
    assert retried == (False, None, "Error: API server down")
    # A refusal of an older generation says nothing about this one.
    assert handoff.readiness(fleet(1, "False", "InvalidSpec", "bad"), 2)[1] is None


def test_a_deletion_is_acknowledged_only_at_the_generation_that_marked_it() -> None:
    # The API server bumps the generation when it marks a Fleet deleted (2 -> 3 here).
    marked = {"metadata": {"generation": 3, "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert not handoff.acknowledged({**marked, "status": {"observedGeneration": 2}})
    assert not handoff.acknowledged(marked)
    assert handoff.acknowledged({**marked, "status": {"observedGeneration": 3}})
    live = {"metadata": {"generation": 3}, "status": {"observedGeneration": 3}}
    assert not handoff.acknowledged(live)
