"""Where a Go component's CPU went, by named category: the one table of function-name rules
and the breakdown of decoded profiles (`loadgen.pprof`) it gives. Pure.

A sample (one call stack) takes the first category, in table order, with a rule matching
any of its frames: requeueing that runs DRA's hints and CEL counts as "queue and requeue"
(the cost is the requeue's, kubernetes/kubernetes#138095), CEL inside DRA's Filter as "CEL
matching". "GC and runtime" is the Go runtime's own work (GC workers, the goroutine
scheduler, allocation outside every category), "other" whatever no rule names.

    b = cpu.breakdown([pprof.decode(data) for data in slices])
    b.shares()          # {"queue and requeue": 0.46, ...}
    b.coverage          # share of samples a named category (not "other") took
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from loadgen import pprof

OTHER = "other"
QUEUE = "queue and requeue"
DRA = "DRA filter and allocator"
CEL = "CEL matching"
EXTENDER = "extender calls"
API = "binding and API calls"
INFORMERS = "informer event handling"
CYCLE = "scheduling cycle, other plugins"
SERVING = "metrics and profile serving"
APISERVER = "API server request handling and storage"
CONNECTIONS = "connections and TLS"
RUNTIME = "GC and runtime"


@dataclass(frozen=True)
class Rule:
    category: str
    patterns: tuple[str, ...]
    """Regular expressions searched in each frame's function name."""
    leaf_only: bool = False
    """Match the innermost frame only (the runtime's work wherever it was called from)."""


# Order matters: the first rule matching a sample's stack names it. Function names are Go's
# (`k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).isPodWorthRequeuing`).
# The binding cycle is binding, whatever it calls (DRA's PreBind writes claim status);
# the HTTP clients' own goroutines (the API server's connections) and the events a
# component posts count as API calls. "Connections and TLS" is what no rule above claims of
# a connection's work: handshakes (a scrape's or profile's, a client's), framing, reads.
RULES: tuple[Rule, ...] = (
    Rule(
        QUEUE,
        (
            r"scheduler/(?:internal|backend)/queue\.",
            r"\.isPodWorthRequeuing",
            r"MoveAllToActiveOrBackoffQueue",
            r"\.(?:Pre)?QueueingHint",
            r"\.isSchedulableAfter",
        ),
    ),
    Rule(EXTENDER, (r"scheduler\.\(\*HTTPExtender\)", r"findNodesThatPassExtenders")),
    Rule(
        API,
        (
            r"scheduler\.\(\*Scheduler\)\.(?:bind|bindingCycle|runBindingCycle)(?:$|\.)",
            r"defaultbinder\.",
            r"scheduler/backend/api_dispatcher",
            r"scheduler/framework/api_calls",
            r"^k8s\.io/client-go/rest\.",
            r"^k8s\.io/client-go/kubernetes/typed/",
            r"^k8s\.io/client-go/tools/(?:events|record)\.",
            r"^net/http\.\(\*(?:Transport|persistConn)\)",
            r"^golang\.org/x/net/http2\.\(\*(?:Transport|ClientConn|clientStream|clientConnReadLoop)\)",
        ),
    ),
    Rule(
        CEL,
        (
            r"^github\.com/google/cel-go/",
            r"dynamic-resource-allocation/cel\.",
            r"^k8s\.io/apiserver/pkg/cel",
        ),
    ),
    Rule(
        DRA,
        (
            r"plugins/dynamicresources\.",
            r"^k8s\.io/dynamic-resource-allocation/",
        ),
    ),
    Rule(
        INFORMERS,
        (
            r"^k8s\.io/client-go/tools/cache\.",
            r"scheduler/eventhandlers",
            r"scheduler\.addAllEventHandlers",
            r"^k8s\.io/apimachinery/pkg/watch\.",
            r"^k8s\.io/client-go/rest/watch\.",
            r"^k8s\.io/apimachinery/pkg/runtime/serializer",
        ),
    ),
    Rule(
        CYCLE,
        (
            r"scheduler\.\(\*Scheduler\)\.",
            r"^k8s\.io/kubernetes/pkg/scheduler/framework",
            r"^k8s\.io/kubernetes/pkg/scheduler/backend/cache\.",
        ),
    ),
    Rule(
        SERVING,
        (
            r"^github\.com/prometheus/",
            r"^k8s\.io/component-base/metrics",
            r"^net/http/pprof\.",
            r"^runtime/pprof\.",
        ),
    ),
    Rule(APISERVER, (r"^k8s\.io/apiserver/", r"^go\.etcd\.io/", r"^google\.golang\.org/grpc")),
    Rule(
        CONNECTIONS,
        (
            r"^crypto/tls\.",
            r"^net/http\.\(\*conn\)",
            r"^golang\.org/x/net/http2\.",
            r"^net\.\(\*(?:conn|netFD|TCPConn)\)",
        ),
    ),
    Rule(RUNTIME, (r"^runtime\.", r"^internal/runtime/", r"^syscall\.", r"^sync\."), True),
    Rule(RUNTIME, (r"^runtime\.(?:gcBgMarkWorker|bgsweep|bgscavenge|mcall|morestack)",)),
)
CATEGORIES: tuple[str, ...] = (*dict.fromkeys(r.category for r in RULES), OTHER)
"""Every category in the order reports list them."""

# Function patterns whose cumulative share is evidence on its own (the detector reads them).
SIGNATURES: Mapping[str, str] = {
    "isPodWorthRequeuing": r"\.isPodWorthRequeuing",
    "GatherPools": r"\.GatherPools",
}

_COMPILED = tuple(re.compile("|".join(f"(?:{p})" for p in r.patterns)) for r in RULES)
_SIGNATURES = tuple(re.compile(p) for p in SIGNATURES.values())


@functools.cache
def _frame_matches(frame: str) -> tuple[int, int]:
    """Which rules (bit i: RULES[i]) and which signatures (bit j) match one function name.
    Profiles hold a few thousand names under millions of frames: each is searched once."""
    rules = sum(1 << i for i, pattern in enumerate(_COMPILED) if pattern.search(frame))
    found = sum(1 << j for j, pattern in enumerate(_SIGNATURES) if pattern.search(frame))
    return rules, found


def _stack_matches(stack: tuple[str, ...]) -> tuple[int, int, int]:
    """The rules matching the leaf, the rules and the signatures matching any frame."""
    leaf = _frame_matches(stack[0])[0] if stack else 0
    anywhere = found = 0
    for frame in stack:
        rules, sigs = _frame_matches(frame)
        anywhere |= rules
        found |= sigs
    return leaf, anywhere, found


def _category(leaf: int, anywhere: int) -> str:
    for i, rule in enumerate(RULES):
        if ((leaf if rule.leaf_only else anywhere) >> i) & 1:
            return rule.category
    return OTHER


def categorize(stack: tuple[str, ...]) -> str:
    """The category of one sample's stack (function names, leaf first)."""
    return _category(*_stack_matches(stack)[:2])


@dataclass(frozen=True)
class Breakdown:
    by_category: dict[str, int]
    """Category -> CPU (the profile's unit, nanoseconds), every category present."""
    total: int
    seconds_profiled: float
    """Wall-clock seconds the profiles covered together."""
    signatures: dict[str, int] = field(default_factory=dict)
    """SIGNATURES name -> CPU of the samples with such a frame anywhere in the stack."""
    top_other: list[tuple[str, int]] = field(default_factory=list)
    """The leaf functions of "other" with the most CPU: where a new rule would go."""

    def shares(self) -> dict[str, float]:
        return {k: (v / self.total if self.total else 0.0) for k, v in self.by_category.items()}

    def signature_shares(self) -> dict[str, float]:
        return {k: (v / self.total if self.total else 0.0) for k, v in self.signatures.items()}

    @property
    def coverage(self) -> float:
        """Share of the CPU a named category took (1 - the share of "other")."""
        return 1.0 - self.shares().get(OTHER, 0.0) if self.total else 0.0

    @property
    def cpu_seconds(self) -> float:
        return self.total / 1e9


def breakdown(profiles: Iterable[pprof.Profile], *, top: int = 8) -> Breakdown:
    """The categories of every sample of `profiles` (consecutive slices of one component)."""
    by_category: Counter[str] = Counter({c: 0 for c in CATEGORIES})
    signatures: Counter[str] = Counter({s: 0 for s in SIGNATURES})
    other: Counter[str] = Counter()
    seconds = 0.0
    # Samples repeat the same few thousand stacks: each is classified once.
    cache: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}
    for profile in profiles:
        seconds += profile.duration_seconds
        for stack, value in profile.stacks:
            known = cache.get(stack)
            if known is None:
                leaf, anywhere, sigs = _stack_matches(stack)
                found = tuple(name for j, name in enumerate(SIGNATURES) if (sigs >> j) & 1)
                known = cache[stack] = (_category(leaf, anywhere), found)
            category, found = known
            by_category[category] += value
            if category == OTHER:
                other[stack[0] if stack else "?"] += value
            for name in found:
                signatures[name] += value
    return Breakdown(
        by_category=dict(by_category),
        total=sum(by_category.values()),
        seconds_profiled=round(seconds, 3),
        signatures=dict(signatures),
        top_other=other.most_common(top),
    )
