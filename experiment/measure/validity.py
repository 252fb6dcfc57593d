"""Did an arm run as labelled? (pure)

The extender is `ignorable` in the scheduler configuration: when it fails or times out,
kube-scheduler skips it and schedules anyway, so an "extender on" arm can silently be an "off"
arm. Such an arm is invalid: shown with its reason, never averaged into a figure or verdict.

Evidence, from both sides of the call:
- the extender's `extender_requests_total{verb,outcome}` counters, scraped by loadgen before
  and after the arm: every call answered "ok", and at least one filter call per pod scheduled
  (kube-scheduler calls filter in every scheduling cycle that reaches the extender). An answer
  given after kube-scheduler's `httpTimeout`, or after it hung up, is counted "late" by the
  extender: the scheduler had already gone on without it, so it is a failure too;
- kube-scheduler's log: it records every ignored filter failure as "Skipping extender as it
  returned error and has ignorable flag set" (schedule_one.go, findNodesThatPassExtenders; it
  has no metric for it). Failed prioritize calls are logged only at -v=5, so the extender's
  own counters cover those. The log is the local scheduler's file, or on an existing cluster
  the scheduler pod's log read through the API before and after each arm; where it cannot
  be read (not served, or restarted mid-arm), nothing shows the extender was not skipped:
  the arm is invalid;
- requests the extender could not judge (`extender_unjudged_requests_total{reason}`, e.g. a
  DeviceClass selector it does not evaluate) were left to DRA: for those pods "on" behaved as
  "off", so from UNJUDGED_LIMIT of filter calls the arm is invalid (below, its share is shown).

An arm whose scheduler does not send every pod to the filter (the shipped entries filter only
pods asking for the placement resource, `extenderFilter: required`; or prioritize only,
`none`) is held to the same rules for its prioritize calls, save the two about filtering:
it needs at least one prioritize call answered (kube-scheduler skips scoring where one node
is feasible, so not one per pod) and no share of unjudged requests makes it invalid (DRA
decides where such pods fit; the extender only scores them). Only `extenderFilter: all`
(every pod filtered) is held to a filter call per pod scheduled.

Any arm whose scrape of a component hit loadgen's series cap (`figures.capped`) is flagged in
its reason: that component's figures are left out of it, never read as 0.

An arm in which a component restarted (loadgen's `faults.restarts`) did not run as labelled
either: its cost figures pay for a restart the other arms did not have. It is invalid, with
the restart in its reason, unless its variant has a fault (then the restart is what it
measures). A variant's arm whose fault (its result's `injected_fault`) was not made and
repaired did not run as labelled: invalid. Where the fault killed the extender, the calls it
failed and kube-scheduler skipped are the fault's cost: the arm stays valid, with them in its
reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from experiment.measure import arm_record, fault_plan, figures
from experiment.measure.arm_record import ArmRecord

SCHEDULER_SKIPPED = "Skipping extender as it returned error and has ignorable flag set"
_REQUESTS = re.compile(r"^extender_requests_total\{(?P<labels>[^}]*)\}$")
_UNJUDGED = re.compile(r"^extender_unjudged_requests_total(\{(?P<labels>[^}]*)\})?$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


Validity = arm_record.Validity
VALID = arm_record.VALID
UNJUDGED_LIMIT = 0.01
"""Share of filter calls with requests left to DRA unjudged from which an "on" arm is not
an extender arm any more."""


def _extender_deltas(rec: ArmRecord) -> Mapping[str, float] | None:
    """The extender's changed series over the arm; None when it was not scraped."""
    metrics = rec.result.metrics
    return metrics["extender"].deltas if "extender" in metrics else None


def extender_calls(rec: ArmRecord) -> dict[tuple[str, str], float] | None:
    """(verb, outcome) -> calls during the arm, from loadgen's scrape of the extender; None
    when the extender was not scraped."""
    deltas = _extender_deltas(rec)
    if deltas is None:
        return None
    out: dict[tuple[str, str], float] = {}
    for key, value in deltas.items():
        if m := _REQUESTS.match(key):
            labels = dict(_LABEL.findall(m.group("labels")))
            k = (labels.get("verb", ""), labels.get("outcome", ""))
            out[k] = out.get(k, 0.0) + float(value)
    return out


def unjudged(rec: ArmRecord) -> dict[str, float]:
    """reason -> requests the extender could not judge during the arm."""
    out: dict[str, float] = {}
    for key, value in (_extender_deltas(rec) or {}).items():
        if m := _UNJUDGED.match(key):
            reason = dict(_LABEL.findall(m.group("labels") or "")).get("reason", "")
            out[reason] = out.get(reason, 0.0) + float(value)
    return out


def skipped_in_log(text: str) -> int:
    """How many times kube-scheduler's log says it skipped the extender."""
    return text.count(SCHEDULER_SKIPPED)


def skipped_between(before: int | None, after: int | None) -> int | None:
    """Skips logged during an arm from the counts before and after it; None when either
    reading failed or the count went down (a restarted scheduler's log starts anew)."""
    if before is None or after is None or after < before:
        return None
    return after - before


def extender_arm(rec: ArmRecord, *, scheduler_skipped: int | None, filter: bool = True) -> Validity:
    """Whether an extender-on arm really had the extender answer every pod.
    `scheduler_skipped`: the skips kube-scheduler logged during the arm; None when its log
    could not be read (said in the reason, never taken as zero). `filter`: the scheduler
    sends every pod to the filter verb (False: only some pods, or none)."""
    calls = extender_calls(rec)
    if calls is None:
        return Validity(False, "the extender's /metrics was not scraped: nothing shows it ran")
    answered = int(calls.get(("filter", "ok"), 0.0))
    unjudged_calls = sum(unjudged(rec).values())
    share = unjudged_calls / answered if answered and filter else None
    late = {k: v for k, v in calls.items() if k[1] == "late" and v}
    if late:
        detail = ", ".join(f"{int(v)} {verb}" for (verb, _), v in late.items())
        return Validity(
            False,
            f"extender answers after kube-scheduler's httpTimeout (it went on without them): "
            f"{detail}",
            share,
        )
    failed = {k: v for k, v in calls.items() if k[1] != "ok" and v}
    if failed:
        detail = ", ".join(f"{int(v)} {verb} {outcome}" for (verb, outcome), v in failed.items())
        return Validity(False, f"extender calls not answered ok: {detail}", share)
    if scheduler_skipped is None:
        return Validity(
            False,
            "kube-scheduler's log could not be read: nothing shows it never skipped the extender",
            share,
        )
    if scheduler_skipped:
        return Validity(
            False, f"kube-scheduler skipped the extender {scheduler_skipped} times (its log)", share
        )
    scheduled = rec.result.counts.pods_scheduled
    if not filter:
        if scheduled and not calls.get(("prioritize", "ok")):
            return Validity(
                False, f"the extender answered no prioritize call for {scheduled} pods scheduled"
            )
        return VALID
    if answered < scheduled:
        return Validity(
            False,
            f"the extender answered {answered} filter calls for {scheduled} pods scheduled",
            share,
        )
    if share is not None and share >= UNJUDGED_LIMIT:
        return Validity(
            False,
            f"{share:.1%} of filter calls had requests left to DRA unjudged (from "
            f"{UNJUDGED_LIMIT:.0%} the arm does not measure the extender)",
            share,
        )
    if unjudged_calls:
        return Validity(True, f"ok; {share:.2%} of filter calls had requests left to DRA", share)
    return Validity(True, "ok", share)


def restarts(rec: ArmRecord) -> list[str]:
    """The arm's component restarts in words (`kube-scheduler at 332.1 s`); a result written
    before loadgen recorded them has none."""
    names = {"scheduler": "kube-scheduler", "apiserver": "kube-apiserver"}
    out = []
    for r in rec.result.faults.restarts:
        at = r.seen_seconds if r.started_seconds is None else r.started_seconds
        out.append(f"{names.get(r.component, r.component)} at {at:.1f} s")
    return out


def of_arm(
    rec: ArmRecord,
    *,
    extender: bool,
    scheduler_skipped: int | None,
    filter: bool = True,
    faults_expected: bool = False,
) -> Validity:
    """An arm's validity (`extender_arm` on the extender's scheduler, else valid; invalid
    when a component restarted in it, unless `faults_expected`), flagged when a scrape hit
    loadgen's series cap."""
    v = extender_arm(rec, scheduler_skipped=scheduler_skipped, filter=filter) if extender else VALID
    if (fault := rec.fault) is not None:
        if not fault.done:
            v = Validity(
                False,
                f"its fault did not happen as planned ({fault_plan.describe(fault)}); {v.reason}",
                v.unjudged_share,
            )
        elif fault.kill == fault_plan.EXTENDER and not v.valid:
            # Calls failed and skipped while the extender was down are what the fault costs.
            v = Validity(True, f"ok under its fault: {v.reason}", v.unjudged_share)
    if (restarted := restarts(rec)) and not faults_expected:
        v = Validity(
            False,
            f"a component restarted during the arm ({', '.join(restarted)}): its cost figures "
            f"pay for the restart; {v.reason}",
            v.unjudged_share,
        )
    if capped := figures.capped(rec):
        flag = (
            f"flagged: the scrape of {', '.join(capped)} hit loadgen's {figures.SERIES_CAP}-"
            "series cap, its figures are left out"
        )
        return Validity(v.valid, f"{v.reason}; {flag}", v.unjudged_share)
    return v
