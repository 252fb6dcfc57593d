"""The extender's decisions for one call: demand, filter, scores, and their explanation.

No HTTP here (handlers decode and encode) and no I/O: the index is read as it stands. Until
the store is ready nothing is judged: the filter passes every candidate and every score is 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any, TypeVar

from extender import allocation, claims, cpu_stages
from extender import demand as demand_mod
from extender.cache.index import Index
from extender.config import Settings
from extender.policies import locality, scoring
from extender.topology import NodeView
from testbed import scheduler_profiles, vocab
from testbed.wire import MIN_PRIORITY

log = logging.getLogger(__name__)
_T = TypeVar("_T")

_TOP = 5
_FAILED_SHOWN = 20


@dataclass(frozen=True, slots=True)
class FilterOutcome:
    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


class Core:
    def __init__(
        self,
        index: Index,
        settings: Settings,
        *,
        ready: Callable[[], bool],
        clock: Callable[[], float] = time.time,
        on_unjudged: Callable[[str], None] | None = None,
        stages: cpu_stages.CpuStages | None = None,
    ) -> None:
        self.index = index
        self.settings = settings
        self.ready = ready
        self.clock = clock
        self.on_unjudged = on_unjudged
        """Called with a reason label for each request or pod the extender could not judge."""
        self.stages = stages if stages is not None else cpu_stages.CpuStages()
        self._parsed: dict[str, claims.Pod] = {}
        self._parsed_classes: object = None
        self._spec_keys: dict[int, tuple[object, str]] = {}
        self._last_spec_key: tuple[object, str] | None = None
        # Only /debug/decisions reads them: without `debug` none are made (each costs CPU in
        # every call), unless debug logging prints them.
        self.decisions: deque[dict[str, Any]] = deque(
            maxlen=settings.explain_pods if settings.debug else 0
        )
        self._said: set[tuple[str, str]] = set()
        """(reason, pod) said once already (`_say_once`)."""

    @contextlib.contextmanager
    def unjudged_into(self, sink: Callable[[str], None] | None) -> Iterator[None]:
        """Inside the block what cannot be judged goes to `sink` (None: nowhere), not to
        `on_unjudged`."""
        counting, self.on_unjudged = self.on_unjudged, sink
        try:
            yield
        finally:
            self.on_unjudged = counting

    def demand(self, pod: dict[str, Any]) -> demand_mod.Demand:
        d = demand_mod.of_pod(
            pod,
            claim=self.index.claim,
            template=self.index.template,
            classes=self.index.classes,
            settings=self.settings,
        )
        if self.on_unjudged is not None:
            for reason in d.unjudged:
                self.on_unjudged(reason)
        return d

    def _claims(self, d: demand_mod.Demand) -> tuple[claims.Pod, str] | None:
        """The pod's claims parsed for `allocation.judge`, and a key naming them; None when
        it has none or they cannot be judged (counted)."""
        if not d.specs:
            return None
        key = self._key_of(d.specs)
        pod = self._parsed.get(key)
        # Parsed anew when a class changed, or an expression proved too costly (from then on
        # its request is not judged).
        version = (self.index.classes_version, self.index.evaluator.costly_version)
        if pod is None or self._parsed_classes != version:
            if len(self._parsed) >= 256 or self._parsed_classes != version:
                self._parsed.clear()
                self._parsed_classes = version
            pod = self._parsed[key] = claims.parse_claims(
                d.specs, self.index.classes, self.index.evaluator
            )
        if pod.unjudged is not None:
            if self.on_unjudged is not None:
                self.on_unjudged(pod.unjudged)
            return None
        return pod, key

    def _key_of(self, specs: tuple[dict[str, Any], ...]) -> str:
        """A key naming these claim specs' contents. The index replaces a claim's or
        template's objects when they change, so the JSON is made once per `devices` object
        (held here, so its id is not reused while the key is)."""
        parts = []
        for spec in specs:
            devices = spec.get("devices")
            hit = self._spec_keys.get(id(devices))
            if hit is None or hit[0] is not devices:
                if len(self._spec_keys) >= 4096:
                    self._spec_keys.clear()
                # Each pod's claim made from a template is a new object asking what the last
                # one asked: an equal object's JSON is its JSON (comparing is C, no text).
                last = self._last_spec_key
                text = (
                    last[1]
                    if last is not None and last[0] == devices
                    else json.dumps(devices, sort_keys=True, default=str)
                )
                hit = self._spec_keys[id(devices)] = self._last_spec_key = (devices, text)
            parts.append(hit[1])
        return "judge|" + "|".join(parts)

    def verdicts(self, d: demand_mod.Demand, names: list[str]) -> dict[str, allocation.Verdict]:
        """Whether each named node can satisfy the pod's unallocated claims (DRA's request
        semantics over its devices as allocated now); nodes the index does not know, or a
        pod without claims, are left out. Remembered per node until the node changes."""
        judged = self._claims(d)
        if judged is None:
            return {}
        pod, key = judged
        memo = self.index.node_memo(key)
        out: dict[str, allocation.Verdict] = {}
        nodes = self.index.nodes
        for name in names:
            view = nodes.get(name)
            if view is not None and view.known:
                out[name] = self._verdict(memo, view, pod)
            elif name in memo:
                out[name] = memo[name]
        return out

    def _verdict(self, memo: dict[str, Any], view: NodeView, pod: claims.Pod) -> allocation.Verdict:
        """`view`'s verdict on `pod`'s claims, judged once per memo (node_memo: until the
        node changes); filter's and prioritize's calls share it."""
        verdict: allocation.Verdict | None = memo.get(view.name)
        if verdict is None:
            verdict = memo[view.name] = self.index.judge(view, pod)
        return verdict

    def siblings(self, job: str | None) -> locality.Siblings:
        if job is None:
            return locality.NO_SIBLINGS
        where = self.index.jobs.get(job)
        if not where:
            return locality.NO_SIBLINGS
        racks: set[str] = set()
        blocks: set[str] = set()
        for name in where:
            view = self.index.nodes.get(name)
            if view is not None:
                if view.rack is not None:
                    racks.add(view.rack)
                if view.block is not None:
                    blocks.add(view.block)
        return locality.Siblings(sum(where.values()), frozenset(racks), frozenset(blocks))

    def filter(self, pod: dict[str, Any], names: list[str]) -> FilterOutcome:
        if not self.ready():
            return FilterOutcome(passed=names)
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if not any(k in annotations for k in vocab.REQUIRE_ANNOTATIONS):
            # Most pods require nothing: pass them without working out their demand (which
            # prioritize does, and counts what it cannot judge, once per pod).
            return FilterOutcome(passed=names)
        return self._staged(pod, names, self._filtered)

    def _staged(
        self,
        pod: dict[str, Any],
        names: list[str],
        judge: Callable[[dict[str, Any], demand_mod.Demand, list[str]], _T],
    ) -> _T:
        """`judge(pod, demand, names)` after working out the pod's demand, each timed as its
        stage (`extender.cpu_stages`)."""
        t = self.stages.start()
        d = self.demand(pod)
        t = self.stages.lap("demand", t)
        try:
            return judge(pod, d, names)
        finally:
            self.stages.lap("judge", t)

    def _filtered(
        self, pod: dict[str, Any], d: demand_mod.Demand, names: list[str]
    ) -> FilterOutcome:
        if d.require_alignment is None and d.require_locality is None:
            return FilterOutcome(passed=names)  # nothing required: never reject
        sib = self.siblings(d.job)
        passed, failed, unresolvable = scoring.filter_nodes(
            d, names, self.index.nodes, self.index.summary, sib
        )
        # A pod that requires a placement also gets DRA's own verdict enforced here, so
        # the nodes it keeps can hold its claims (constraints included).
        verdicts = self.verdicts(d, passed)
        if verdicts:
            kept = []
            for name in passed:
                v = verdicts.get(name)
                if v is not None and v.fits is False:
                    failed[name] = f"claims do not fit: {v.reason}"
                else:
                    kept.append(name)
            passed = kept
        if self._explaining():
            shown = dict(islice(chain(unresolvable.items(), failed.items()), _FAILED_SHOWN))
            rejected = len(failed) + len(unresolvable)
            self._record("filter", pod, d, sib, len(names), rejected, shown, [])
        return FilterOutcome(passed, failed, unresolvable)

    def _explaining(self) -> bool:
        """Whether a call's decision is kept (`debug`) or logged (debug logging)."""
        return bool(self.decisions.maxlen) or log.isEnabledFor(logging.DEBUG)

    def prioritize(self, pod: dict[str, Any], names: list[str]) -> list[int]:
        if not self.ready():
            return [MIN_PRIORITY] * len(names)
        return self._staged(pod, names, self._prioritized)

    def _prioritized(
        self, pod: dict[str, Any], d: demand_mod.Demand, names: list[str]
    ) -> list[int]:
        self._check_routed(pod)
        if d.job is None:
            self._check_gang_profile(pod)
        scored = self._scores(d, names)
        if scored is None:
            return [MIN_PRIORITY] * len(names)
        scores, sib = scored
        nodes = self.index.nodes
        w = self.settings.weights
        if self._explaining():
            top = []
            for i in _best(scores, _TOP):
                view = nodes.get(names[i])
                summary = self.index.summary(view) if view is not None else None
                terms = scoring.terms(d, view, summary, sib, w)
                top.append(
                    {
                        "node": names[i],
                        "alignment": terms.alignment,
                        "packing": terms.packing,
                        "locality": terms.locality,
                        "score": terms.score,
                    }
                )
            self._record("prioritize", pod, d, sib, len(names), 0, {}, top)
        return scores

    def _check_routed(self, pod: dict[str, Any]) -> None:
        """A pod that requires a placement but does not ask for `vocab.PLACEMENT_RESOURCE`
        never reaches the filter under the shipped configuration, so its requirement is not
        enforced: said once per pod (log and `extender_unjudged_requests_total`)."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if not any(k in annotations for k in vocab.REQUIRE_ANNOTATIONS) or _asks_placement(pod):
            return
        self._say_once(
            pod,
            "requirement_not_routed",
            "pod %s requires a placement (%s) but asks for no %s: the scheduler does not call "
            "the filter for it, so the requirement is not enforced; add %s: 1 to a "
            "container's limits",
            ", ".join(k for k in vocab.REQUIRE_ANNOTATIONS if k in annotations),
            vocab.PLACEMENT_RESOURCE,
            vocab.PLACEMENT_RESOURCE,
        )

    def _check_gang_profile(self, pod: dict[str, Any]) -> None:
        """A pod that names a gang profile (`testbed.scheduler_profiles`) but belongs to no
        gang (no Workload API group, gang label or Job) pays for every node scored and has no
        siblings to follow: said once per pod (log and `extender_unjudged_requests_total`)."""
        profile = (pod.get("spec") or {}).get("schedulerName") or ""
        if not profile.endswith(scheduler_profiles.GANG_SUFFIX):
            return
        self._say_once(
            pod,
            "gang_profile_without_gang",
            "pod %s names the gang profile %s but belongs to no gang (no PodGroup, %s label "
            "or Job): every node is scored for it and it has no siblings to follow",
            profile,
            self.settings.gang_label,
        )

    def _say_once(self, pod: dict[str, Any], reason: str, message: str, *args: object) -> None:
        """Log `message` (its first argument the pod's namespace/name, then `args`) and count
        `reason` as not judged, the first time `reason` is said of this pod."""
        meta = pod.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if (reason, key) in self._said:
            return
        if len(self._said) >= 4096:
            self._said.clear()
        self._said.add((reason, key))
        if self.on_unjudged is not None:
            self.on_unjudged(reason)
        log.warning(message, key, *args)

    def warm(self, pod: dict[str, Any], names: list[str]) -> None:
        """Pay now what the first `prioritize` of a pod shaped like `pod` would pay over
        `names` (its claims parsed, compiled and judged on each node, its scores remembered),
        without recording it or counting what cannot be judged: it is no scheduler call
        (start-up's warm-up, `extender.warmup`)."""
        with self.unjudged_into(None):
            self._scores(self.demand(pod), names)

    def _scores(
        self, d: demand_mod.Demand, names: list[str]
    ) -> tuple[list[int], locality.Siblings] | None:
        """The scores of `names` for demand `d`, and the siblings they followed; None when
        there is nothing to score by (every node scores the minimum)."""
        if d.empty:
            return None
        sib = self.siblings(d.job)
        if not (d.gpus or d.nics or sib.pods):
            return None  # a job's first device-less pod: nothing to say
        nodes = self.index.nodes
        w = self.settings.weights
        judged = self._claims(d)
        fits = None
        if judged is not None:
            pod_claims, fits_key = judged
            index = self.index
            verdicts = index.node_memo(fits_key)  # shared with `verdicts`: judged once

            def fits(view: NodeView) -> bool | None:
                return self._verdict(verdicts, view, pod_claims).fits

        def score(sib: locality.Siblings) -> list[int]:
            return scoring.score_nodes(
                d,
                names,
                nodes,
                self.index.summary,
                sib,
                w,
                self.index.node_memo,
                fits,
                fits_key if judged is not None else "",
            )

        scores = score(sib)
        if d.group and not sib.pods:
            # A PodGroup's pods are placed in one cycle, none bound before the last: no
            # sibling shows. Each pod follows the same anchor instead, the first rack (by
            # block, then rack) among the best nodes it may take, so the group converges.
            anchor = scoring.anchor(names, scores, nodes)
            if anchor.pods:
                sib = anchor
                scores = score(sib)
        return scores, sib

    def _record(
        self,
        verb: str,
        pod: dict[str, Any],
        d: demand_mod.Demand,
        sib: locality.Siblings,
        candidates: int,
        rejected: int,
        rejections: dict[str, str],
        top: list[dict[str, Any]],
    ) -> None:
        meta = pod.get("metadata") or {}
        entry: dict[str, Any] = {
            "time": self.clock(),
            "verb": verb,
            "pod": f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            "demand": {
                "gpuClass": d.gpu_class,
                "gpus": d.gpus,
                "nicClass": d.nic_class,
                "nics": d.nics,
                "alignedGroups": [list(g) for g in d.groups],
                "alignedInTree": d.aligned_in_tree,
                "requireAlignment": d.require_alignment,
                "requireLocality": d.require_locality,
                "job": d.job,
                "siblings": sib.pods,
            },
            "notes": list(d.notes),
            "candidates": candidates,
            "rejected": rejected,
            "rejections": rejections,
            "top": top,
        }
        self.decisions.append(entry)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s pod=%s candidates=%d rejected=%d demand=%s notes=%s top=%s",
                verb,
                entry["pod"],
                candidates,
                rejected,
                entry["demand"],
                entry["notes"],
                top,
            )


def _asks_placement(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        resources = c.get("resources") or {}
        for part in ("limits", "requests"):
            if vocab.PLACEMENT_RESOURCE in (resources.get(part) or {}):
                return True
    return False


def _best(scores: list[int], k: int) -> list[int]:
    """Indices of up to `k` nodes with the highest score (in input order); C-speed scans."""
    if not scores:
        return []
    top = max(scores)
    out: list[int] = []
    i = -1
    while len(out) < k:
        try:
            i = scores.index(top, i + 1)
        except ValueError:
            break
        out.append(i)
    return out
