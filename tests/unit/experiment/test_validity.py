"""An extender-on arm is valid only if the extender answered every pod and the scheduler
never skipped it."""

from __future__ import annotations

from typing import Any

from experiment import validity


def doc(scheduled: int, **calls: float) -> dict[str, Any]:
    deltas = {
        f'extender_requests_total{{verb="{k.split("_")[0]}",outcome="{k.split("_", 1)[1]}"}}': v
        for k, v in calls.items()
    }
    deltas["process_cpu_seconds_total"] = 1.5
    return {
        "counts": {"pods_scheduled": scheduled},
        "metrics": {"extender": {"summary": {}, "deltas": deltas}},
    }


def test_every_pod_answered_and_nothing_skipped_is_valid() -> None:
    d = doc(100, filter_ok=104, prioritize_ok=104)
    assert validity.extender_calls(d) == {("filter", "ok"): 104, ("prioritize", "ok"): 104}
    assert validity.extender_arm(d, scheduler_skipped=0) == validity.VALID


def test_a_failed_call_makes_the_arm_invalid_and_says_which() -> None:
    v = validity.extender_arm(doc(100, filter_ok=99, filter_not_ready=1), scheduler_skipped=0)
    assert not v.valid and "1 filter not_ready" in v.reason


def test_fewer_filter_answers_than_pods_scheduled_is_invalid() -> None:
    # A timed-out call: the extender may still count it ok, but not every pod got an answer.
    v = validity.extender_arm(doc(100, filter_ok=60), scheduler_skipped=0)
    assert not v.valid and "60 filter calls for 100 pods" in v.reason


def test_the_scheduler_log_skipping_the_extender_is_invalid() -> None:
    log = "I1122 ...] " + validity.SCHEDULER_SKIPPED + ' extender="..." err="timeout"\n'
    skipped = validity.skipped_in_log(log * 3)
    assert skipped == 3
    v = validity.extender_arm(doc(100, filter_ok=100), scheduler_skipped=skipped)
    assert not v.valid and "skipped the extender 3 times" in v.reason


def test_an_arm_without_the_extender_scraped_is_invalid() -> None:
    v = validity.extender_arm({"counts": {"pods_scheduled": 1}}, scheduler_skipped=0)
    assert not v.valid and "not scraped" in v.reason
