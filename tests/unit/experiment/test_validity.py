"""An extender-on arm is valid only if the extender answered every pod and the scheduler
never skipped it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiment.measure import arm_record, figures, validity
from experiment.sites.site import Scheduler

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""


def doc(scheduled: int, unjudged: dict[str, float] | None = None, **calls: float) -> dict[str, Any]:
    deltas: dict[str, float] = {
        f'extender_requests_total{{verb="{k.split("_")[0]}",outcome="{k.split("_", 1)[1]}"}}': v
        for k, v in calls.items()
    }
    deltas["process_cpu_seconds_total"] = 1.5
    for reason, n in (unjudged or {}).items():
        deltas[f'extender_unjudged_requests_total{{reason="{reason}"}}'] = n
    return {
        "counts": {"pods_scheduled": scheduled},
        "metrics": {"extender": {"summary": {}, "deltas": deltas}},
    }


def test_every_pod_answered_and_nothing_skipped_is_valid() -> None:
    d = doc(100, filter_ok=104, prioritize_ok=104)
    assert validity.extender_calls(R(d)) == {("filter", "ok"): 104, ("prioritize", "ok"): 104}
    assert validity.extender_arm(R(d), scheduler_skipped=0) == validity.Validity(True, "ok", 0.0)


def test_a_failed_call_makes_the_arm_invalid_and_says_which() -> None:
    v = validity.extender_arm(R(doc(100, filter_ok=99, filter_not_ready=1)), scheduler_skipped=0)
    assert not v.valid and "1 filter not_ready" in v.reason


def test_fewer_filter_answers_than_pods_scheduled_is_invalid() -> None:
    # A timed-out call: the extender may still count it ok, but not every pod got an answer.
    v = validity.extender_arm(R(doc(100, filter_ok=60)), scheduler_skipped=0)
    assert not v.valid and "60 filter calls for 100 pods" in v.reason


def test_the_scheduler_log_skipping_the_extender_is_invalid() -> None:
    log = "I1122 ...] " + validity.SCHEDULER_SKIPPED + ' extender="..." err="timeout"\n'
    skipped = validity.skipped_in_log(log * 3)
    assert skipped == 3
    v = validity.extender_arm(R(doc(100, filter_ok=100)), scheduler_skipped=skipped)
    assert not v.valid and "skipped the extender 3 times" in v.reason


def test_an_arm_without_the_extender_scraped_is_invalid() -> None:
    v = validity.extender_arm(R({"counts": {"pods_scheduled": 1}}), scheduler_skipped=0)
    assert not v.valid and "not scraped" in v.reason


def test_answers_after_the_schedulers_timeout_make_the_arm_invalid() -> None:
    # A slowed extender: it answered every call, but 7 filter calls after httpTimeout, when
    # kube-scheduler had already scheduled without it ("on" silently became "off").
    v = validity.extender_arm(R(doc(100, filter_ok=100, filter_late=7)), scheduler_skipped=0)
    assert not v.valid and "after kube-scheduler's httpTimeout" in v.reason
    assert "7 filter" in v.reason


def test_an_unread_scheduler_log_makes_the_arm_invalid_not_zero_skips() -> None:
    v = validity.extender_arm(R(doc(100, filter_ok=100)), scheduler_skipped=None)
    assert not v.valid and "log could not be read" in v.reason
    # The extender's own side still catches what it can.
    late = validity.extender_arm(R(doc(100, filter_ok=100, filter_late=1)), scheduler_skipped=None)
    assert not late.valid


def test_unjudged_requests_from_one_percent_of_filter_calls_make_the_arm_invalid() -> None:
    d = doc(100, {"unknown_class": 20, "too_complex": 5}, filter_ok=100)
    assert validity.unjudged(R(d)) == {"unknown_class": 20, "too_complex": 5}
    v = validity.extender_arm(R(d), scheduler_skipped=0)
    assert not v.valid and v.unjudged_share == 0.25
    assert "25.0% of filter calls had requests left to DRA unjudged" in v.reason
    # All of them unjudged: "on" was "off" for every pod.
    every = validity.extender_arm(
        R(doc(100, {"unknown_class": 100}, filter_ok=100)), scheduler_skipped=0
    )
    assert not every.valid
    at_limit = validity.extender_arm(R(doc(100, {"x": 1}, filter_ok=100)), scheduler_skipped=0)
    assert not at_limit.valid
    # Below the limit: valid, and the share is said.
    below = validity.extender_arm(R(doc(1000, {"x": 9}, filter_ok=1000)), scheduler_skipped=0)
    assert below.valid and "0.90% of filter calls had requests left to DRA" in below.reason


def test_a_scrape_at_the_series_cap_is_flagged_and_its_figures_left_out() -> None:
    d = doc(100, filter_ok=100)
    apiserver = {f'apiserver_request_total{{code="{i}"}}': 1.0 for i in range(figures.SERIES_CAP)}
    d["counts"]["expected_pods"] = 100
    d["metrics"]["apiserver"] = {
        "summary": {"cpu_seconds": 0.0, "api_requests": 300},
        "deltas": apiserver,
    }
    v = validity.of_arm(R(d), extender=True, scheduler_skipped=0)
    assert v.valid and "flagged: the scrape of apiserver hit loadgen's 300-series cap" in v.reason
    plain = validity.of_arm(R(d), extender=False, scheduler_skipped=None)
    assert plain.valid and plain.reason.startswith("ok; flagged")
    # Its CPU and memory read 0 there: left out, not taken as a figure.
    assert figures.metric("API server requests per pod")[2](R(d)) is None
    del apiserver['apiserver_request_total{code="0"}']
    assert figures.metric("API server requests per pod")[2](R(d)) == 3.0
    assert validity.of_arm(R(d), extender=True, scheduler_skipped=0).reason == "ok"


SKIP_LINE = "I1125 ...] " + validity.SCHEDULER_SKIPPED + ' extender="x" err="timeout"\n'


def test_skips_during_an_arm_are_counted_from_a_log_file(tmp_path: Path) -> None:
    log = tmp_path / "kube-scheduler.log"
    log.write_text(SKIP_LINE * 2)
    s = Scheduler(name="s", metrics_url="m", log=log)
    before = s.skips_logged()
    log.write_text(SKIP_LINE * 5)
    assert validity.skipped_between(before, s.skips_logged()) == 3
    log.unlink()
    assert s.skips_logged() is None


def test_skips_are_counted_from_a_log_read_through_the_api() -> None:
    # An existing cluster's scheduler pod: no file, its log read on each call.
    served = [SKIP_LINE, SKIP_LINE * 4]
    s = Scheduler(name="s", metrics_url="m", read_log=lambda: served.pop(0))
    assert validity.skipped_between(s.skips_logged(), s.skips_logged()) == 3


def test_a_log_that_is_not_served_or_starts_anew_is_not_taken_as_zero_skips() -> None:
    assert Scheduler(name="s", metrics_url="m").skips_logged() is None
    assert Scheduler(name="s", metrics_url="m", read_log=lambda: None).skips_logged() is None
    assert validity.skipped_between(None, 4) is None
    assert validity.skipped_between(5, 1) is None  # restarted scheduler: cannot compare
    assert validity.skipped_between(2, 2) == 0


def test_a_prioritize_only_arm_needs_prioritize_calls_not_filter_calls() -> None:
    prio = validity.extender_arm(R(doc(100, prioritize_ok=97)), scheduler_skipped=0, filter=False)
    assert prio == validity.VALID
    # Held to filter's rules it would be invalid: no filter call at all.
    assert not validity.extender_arm(R(doc(100, prioritize_ok=97)), scheduler_skipped=0).valid
    none = validity.extender_arm(R(doc(100)), scheduler_skipped=0, filter=False)
    assert not none.valid and "no prioritize call for 100 pods" in none.reason
    failed = validity.extender_arm(
        R(doc(100, prioritize_ok=90, prioritize_error=3)), scheduler_skipped=0, filter=False
    )
    assert not failed.valid and "3 prioritize error" in failed.reason


def test_a_prioritize_only_arm_is_not_flagged_for_requests_left_to_dra() -> None:
    """DRA decides where every pod fits there: unjudged requests only leave a score neutral."""
    d = doc(100, {"unknown_class": 100}, prioritize_ok=100)
    assert validity.of_arm(R(d), extender=True, scheduler_skipped=0, filter=False) == validity.VALID
    assert not validity.of_arm(R(d), extender=True, scheduler_skipped=0).valid


def test_an_arm_in_which_the_scheduler_restarted_is_invalid_unless_faults_are_asked_for() -> None:
    d = doc(100, filter_ok=104)
    d["faults"] = {
        "restarts": [{"component": "scheduler", "seen_seconds": 34.0, "started_seconds": 33.2}]
    }
    v = validity.of_arm(R(d), extender=True, scheduler_skipped=0)
    assert not v.valid and "kube-scheduler at 33.2 s" in v.reason
    assert validity.of_arm(R(d), extender=True, scheduler_skipped=0, faults_expected=True).valid
    # A result written before restarts were recorded reads as none.
    assert validity.of_arm(R(doc(100, filter_ok=104)), extender=True, scheduler_skipped=0).valid
