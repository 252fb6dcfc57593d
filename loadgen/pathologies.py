"""Known reasons a scheduler is slow, named from a run's evidence, with the upstream issue
and the knob to try. Pure: plain figures in (`Evidence`), findings out; every rule and
threshold of the detector is here.

    for f in pathologies.detect(evidence):
        print(f.title, f.issue, f.evidence, f.knob)

The findings:
- requeue storm (kubernetes/kubernetes#138095): pods held gated or unschedulable while the
  run's claims exist, and kube-scheduler's CPU in requeueing them (every claim event
  re-evaluates every such pod under the queue lock);
- partitionable pool gathering (kubernetes/kubernetes#138917): 1.36's allocator gathers
  every node's counter slices for each node it filters;
- extender-bound: the scheduling algorithm's time outside its extension points (the extender
  calls) a large share of each attempt;
- API-server-bound: binding's API calls most of each attempt's time, kube-scheduler waiting
  on its API client's rate limiter, or its CPU in binding and API calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from loadgen import cpu

# Thresholds, each a share or a count the evidence must reach.
STUCK_PODS = 200
"""Pods gated + unschedulable at the peak for a storm (and at least STUCK_SHARE of the run)."""
STUCK_SHARE = 0.1
REQUEUE_SHARE = 0.25
"""kube-scheduler CPU in queue and requeue for a storm (#138095 measured 46 %)."""
REQUEUE_EVENT_SHARE = 0.5
"""Without a profile: seconds handling claim events per second of run."""
SLOW_PODS_PER_SECOND = 20.0
"""Below this the storm is said to cost throughput (upstream's DRA threshold is 56 on CI)."""
POOL_SHARE = 0.1
"""kube-scheduler CPU under GatherPools for #138917."""
DRA_SHARE = 0.5
EXTENDER_SHARE = 0.4
"""Algorithm time outside the extension points, of the attempt time."""
MIN_ATTEMPTS = 20
THROTTLE_SHARE = 0.2
"""Seconds waited on the client rate limiter per second of run."""
API_SHARE = 0.3
"""kube-scheduler CPU in binding and API calls."""
BINDING_SHARE = 0.5
"""Binding's API calls (PreBind, Bind) of the attempts' time (an attempt ends bound)."""
BINDING_SECONDS = 0.1
"""... and at least this long per attempt."""
GATE = "SchedulerPreQueueingHints"
GATE_RELEASE = (1, 37)
POOL_FIX_RELEASE = (1, 37)

_RELEASE = re.compile(r"^v?(\d+)\.(\d+)")


def release_tuple(version: str | None) -> tuple[int, int] | None:
    m = _RELEASE.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What a run saw, as plain figures; absent evidence is None or empty (a rule that needs
    it stays silent)."""

    release: str | None = None
    """kube-scheduler's release, e.g. "1.37.2"."""
    gates: Mapping[str, bool] = field(default_factory=dict)
    """Feature gates known to be set (from kubernetes_feature_enabled)."""
    pods: int = 0
    claims: int = 0
    """ResourceClaims of the run's pods seen (templates' claims included)."""
    partitionable: bool = False
    """The run asked for partitions of devices (MIG: counter sets)."""
    seconds: float = 0.0
    throughput: float = 0.0
    """Pods scheduled per second, on average."""
    pending_peak: Mapping[str, float] = field(default_factory=dict)
    """scheduler_pending_pods by queue, the highest sample."""
    claim_event_seconds: float = 0.0
    """kube-scheduler's seconds handling ResourceClaim events over the run."""
    cpu_shares: Mapping[str, float] | None = None
    """kube-scheduler's CPU by `cpu` category (None: not profiled)."""
    signature_shares: Mapping[str, float] = field(default_factory=dict)
    attempts: float = 0.0
    attempt_seconds: float = 0.0
    outside_points_seconds: float = 0.0
    extender_served_seconds: float = 0.0
    extender_calls: float = 0.0
    throttle_seconds: float = 0.0
    binding_seconds: float = 0.0
    """Seconds in the PreBind and Bind extension points (claim status and binding writes)."""


@dataclass(frozen=True)
class Finding:
    name: str
    """requeue-storm, partitionable-pool-gathering, extender-bound, api-server-bound."""
    title: str
    issue: str | None
    """The upstream issue, e.g. kubernetes/kubernetes#138095 (None: a setting, no issue)."""
    evidence: str
    knob: str


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def requeue_storm(e: Evidence) -> Finding | None:
    stuck = e.pending_peak.get("gated", 0.0) + e.pending_peak.get("unschedulable", 0.0)
    if not e.claims or stuck < max(STUCK_PODS, STUCK_SHARE * e.pods):
        return None
    shares = e.cpu_shares or {}
    requeue = max(shares.get(cpu.QUEUE, 0.0), e.signature_shares.get("isPodWorthRequeuing", 0.0))
    handling = e.claim_event_seconds / e.seconds if e.seconds else 0.0
    if e.cpu_shares is not None:
        if requeue < REQUEUE_SHARE:
            return None
        cost = f"{_pct(requeue)} of kube-scheduler's CPU in queue and requeue"
    else:
        if handling < REQUEUE_EVENT_SHARE:
            return None
        cost = f"{handling:.2f} s handling claim events per second (not profiled)"
    slow = f", {e.throughput:.1f} pods/s" if e.throughput < SLOW_PODS_PER_SECOND else ""
    evidence = (
        f"up to {stuck:.0f} pods gated or unschedulable while {e.claims} claims existed; "
        f"{cost}{slow}"
    )
    release = release_tuple(e.release)
    if e.gates.get(GATE):
        knob = (
            f"{GATE} is already on: the pod-update path is still unscoped "
            "(kubernetes/kubernetes#142109)"
        )
    elif release is not None and release < GATE_RELEASE:
        knob = (
            f"the fix's gate {GATE} exists from 1.37 (kubernetes/kubernetes#138916): run 1.37 "
            f"with `--feature-gates {GATE}=true`; on {e.release}, restarting kube-scheduler "
            "rebuilds its queue"
        )
    else:
        knob = (
            f"`--feature-gates {GATE}=true` (alpha in 1.37, kubernetes/kubernetes#138916; "
            f"`testbed up --feature-gates {GATE}=true` locally)"
        )
    return Finding("requeue-storm", "requeue storm", "kubernetes/kubernetes#138095", evidence, knob)


def pool_gathering(e: Evidence) -> Finding | None:
    release = release_tuple(e.release)
    if release is None or release >= POOL_FIX_RELEASE or e.cpu_shares is None:
        return None
    gather = e.signature_shares.get("GatherPools", 0.0)
    dra = e.cpu_shares.get(cpu.DRA, 0.0) + e.cpu_shares.get(cpu.CEL, 0.0)
    if not (gather >= POOL_SHARE or (e.partitionable and dra >= DRA_SHARE)):
        return None
    evidence = (
        f"{_pct(gather)} of kube-scheduler's CPU under GatherPools, {_pct(dra)} in DRA and CEL"
        + (" with partitionable devices" if e.partitionable else "")
        + f" on {e.release}"
    )
    knob = "fixed in 1.37.0 and in no 1.36 patch: run 1.37 (`testbed up --kubernetes 1.37`)"
    return Finding(
        "partitionable-pool-gathering",
        "partitionable pool gathering",
        "kubernetes/kubernetes#138917",
        evidence,
        knob,
    )


def extender_bound(e: Evidence) -> Finding | None:
    if e.attempts < MIN_ATTEMPTS or not e.attempt_seconds or not e.extender_calls:
        return None
    share = e.outside_points_seconds / e.attempt_seconds
    if share < EXTENDER_SHARE:
        return None
    per_attempt = e.outside_points_seconds / e.attempts
    served = e.extender_served_seconds / e.extender_calls
    evidence = (
        f"{_pct(share)} of the scheduling attempts' time outside the framework's extension "
        f"points ({per_attempt * 1000:.1f} ms per attempt); the extender served "
        f"{served * 1000:.1f} ms per call"
    )
    knob = (
        "the extender entry: `nodeCacheCapable: true` (names, not whole nodes: "
        "kubernetes/kubernetes#72634), `managedResources` so only the pods it judges are "
        "sent, a lower `percentageOfNodesToScore`; if it serves slowly, the extender itself"
    )
    return Finding(
        "extender-bound", "extender-bound", "kubernetes/kubernetes#72634", evidence, knob
    )


def api_server_bound(e: Evidence) -> Finding | None:
    throttled = e.throttle_seconds / e.seconds if e.seconds else 0.0
    api = (e.cpu_shares or {}).get(cpu.API, 0.0)
    binding = e.binding_seconds / e.attempt_seconds if e.attempt_seconds else 0.0
    per_attempt = e.binding_seconds / e.attempts if e.attempts else 0.0
    slow_binding = (
        e.attempts >= MIN_ATTEMPTS and binding >= BINDING_SHARE and per_attempt >= BINDING_SECONDS
    )
    if throttled < THROTTLE_SHARE and api < API_SHARE and not slow_binding:
        return None
    parts = []
    if slow_binding:
        parts.append(
            f"binding's API calls (PreBind, Bind) {_pct(binding)} of the scheduling attempts' "
            f"time, {per_attempt * 1000:.0f} ms per attempt"
        )
    if throttled >= THROTTLE_SHARE:
        parts.append(
            f"kube-scheduler's API client waited {e.throttle_seconds:.0f} s on its own rate "
            f"limiter ({throttled:.2f} s per second of run)"
        )
    if api >= API_SHARE:
        parts.append(f"{_pct(api)} of its CPU in binding and API calls")
    knob = (
        "KubeSchedulerConfiguration `clientConnection.qps`/`burst` (default 50/100) when "
        "throttled; when the API server answers slowly, its load and "
        "`--max-requests-inflight`/`--max-mutating-requests-inflight`"
    )
    return Finding("api-server-bound", "API-server-bound", None, "; ".join(parts), knob)


RULES = (requeue_storm, pool_gathering, extender_bound, api_server_bound)


def detect(e: Evidence) -> list[Finding]:
    """Every pathology the evidence shows, in RULES order."""
    return [f for rule in RULES if (f := rule(e)) is not None]
