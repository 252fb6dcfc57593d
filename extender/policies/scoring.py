"""Combine the terms into kube-scheduler's 0..10 score, and decide the filter.

The score is the weighted mean of the terms that apply to the pod (alignment when it wants
GPU-NIC pairs, packing when it asks for devices, locality when job siblings run), scaled to
0..10. A pod none of them applies to gets 0 everywhere: neutral, the scheduler's own plugins
decide. Nodes the index does not know get 0, never more than a known node.

`score_nodes` is the hot path (5,000 nodes per call): a node's scores for a pod shape are
remembered until the node changes (one look-up per node on a repeat), and node summaries are
shared between nodes in the same state (see cache.index), so even a node that changed is
scored from a summary already computed for another node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.config import Weights
from extender.demand import Demand
from extender.policies import alignment, locality, packing
from extender.topology import NodeView, Summary
from testbed.wire import MAX_PRIORITY, MIN_PRIORITY


@dataclass(frozen=True, slots=True)
class Terms:
    """One node's terms and score for one pod: the explanation of a decision."""

    alignment: float | None
    packing: float | None
    locality: float | None
    score: int


def _combine(w: Weights, align: float | None, pack: float | None, loc: float | None) -> int:
    total = weight = 0.0
    if align is not None and w.alignment:
        total += w.alignment * align
        weight += w.alignment
    if pack is not None and w.packing:
        total += w.packing * pack
        weight += w.packing
    if loc is not None and w.locality:
        total += w.locality * loc
        weight += w.locality
    if not weight:
        return MIN_PRIORITY
    return max(MIN_PRIORITY, min(MAX_PRIORITY, round(MAX_PRIORITY * total / weight)))


def terms(
    demand: Demand,
    node: NodeView | None,
    summary: Summary | None,
    siblings: locality.Siblings,
    w: Weights,
) -> Terms:
    if node is None or summary is None or not node.known:
        return Terms(None, None, None, MIN_PRIORITY)
    # The device terms depend on the summary (immutable) and the pod's shape only: each
    # summary works them out once per shape (the decision log explains the best nodes of
    # every call, mostly the same few summaries).
    key = (
        "terms",
        demand.gpu_class,
        demand.gpus,
        demand.nic_class,
        demand.nics,
        demand.aligned_in_tree,
        w.numa_credit,
    )
    memo = summary.memo
    device_terms = memo.get(key)
    if device_terms is None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        device_terms = memo[key] = (
            alignment.score(demand, summary, w.numa_credit),
            packing.score(demand, summary),
        )
    a, p = device_terms
    loc = locality.score(siblings, node.rack, node.block, w.block_credit)
    return Terms(a, p, loc, _combine(w, a, p, loc))


def score_nodes(
    demand: Demand,
    names: Sequence[str],
    nodes: Mapping[str, NodeView],
    summary_of: Callable[[NodeView], Summary],
    siblings: locality.Siblings,
    w: Weights,
    node_memo: Callable[[str], dict[str, Any]],
    fits: Callable[[NodeView], bool | None] | None = None,
    fits_key: str = "",
) -> list[int]:
    """Scores for `names` in order (a name the index does not know scores 0).

    `node_memo(key)` gives a dict that keeps, per node name, this pod shape's scores by place
    until the node changes, so a repeat call costs one look-up per node. `fits(node)` is
    DRA's verdict on the pod's claims there (`fits_key` names the claims): a node where they
    cannot fit scores 0; asked once per node and shape, on a memo miss."""
    if demand.empty:
        return [MIN_PRIORITY] * len(names)
    key = (
        f"score|{demand.gpu_class}|{demand.gpus}|{demand.nic_class}|{demand.nics}|"
        f"{demand.aligned_in_tree}|{fits_key}"
    )
    memo = node_memo(key)

    def entry_of(name: str) -> tuple[tuple[int, int, int, int], str | None, str | None] | None:
        """The node's scores by place (remembered), or None for a node the index does not
        know (not remembered: made-up names must not pile up)."""
        entry = memo.get(name)
        if entry is None:
            node = nodes.get(name)
            if node is None or not node.known:
                return None
            summary = node.summary or summary_of(node)
            by_place = summary.memo.get(key)
            if by_place is None:
                by_place = _by_place(demand, summary, w, summary.memo)
                summary.memo[key] = by_place
            if fits is not None and fits(node) is False:
                by_place = _NO_FIT
            entry = memo[name] = (by_place, node.rack, node.block)
        return entry

    if not siblings.pods:
        # The common case: a node's score is one int per pod shape, so a call costs one
        # C-level look-up per name, and only the nodes that changed since (a handful: the
        # last pods' nodes) are scored again.
        plain = node_memo(key + "|plain")
        scores: list[int | None] = list(map(plain.get, names))
        i = -1
        while True:
            try:
                i = scores.index(None, i + 1)
            except ValueError:
                return scores  # type: ignore[return-value]  # no None left
            name = names[i]
            entry = entry_of(name)
            if entry is None:
                scores[i] = MIN_PRIORITY
            else:
                scores[i] = plain[name] = entry[0][3]

    racks, blocks = siblings.racks, siblings.blocks
    out: list[int] = []
    append = out.append
    for name in names:
        entry = entry_of(name)
        if entry is None:
            append(MIN_PRIORITY)
            continue
        by_place, rack, block = entry
        if rack is not None and rack in racks:
            append(by_place[0])
        elif block is not None and block in blocks:
            append(by_place[1])
        else:
            append(by_place[2])
    return out


_MEMO_LIMIT = 64
_NO_FIT = (MIN_PRIORITY,) * 4


def _by_place(
    demand: Demand, summary: Summary, w: Weights, memo: dict[object, object]
) -> tuple[int, int, int, int]:
    """A node's score in a sibling's rack, in a sibling's block, elsewhere, and when the pod
    has no siblings: the device terms depend only on the node's summary, so each distinct
    summary is scored once per pod shape and reused until the node's devices change."""
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    a = alignment.score(demand, summary, w.numa_credit)
    p = packing.score(demand, summary)
    return (
        _combine(w, a, p, 1.0),
        _combine(w, a, p, w.block_credit),
        _combine(w, a, p, 0.0),
        _combine(w, a, p, None),
    )


def anchor(
    names: Sequence[str], scores: Sequence[int], nodes: Mapping[str, NodeView]
) -> locality.Siblings:
    """Where a gang with no placed pod should gather: the rack (and block) of the first of
    the best-scoring candidates in (block, rack, name) order, as a stand-in sibling. Pods of
    one group scored against the same state get the same anchor; as its rack fills, the
    scheduler's filter drops those nodes and the next anchor is the next rack of the block.
    No sibling when no candidate carries a rack or block label."""
    best = max(scores, default=MIN_PRIORITY)
    chosen: tuple[str, str, str] | None = None
    for name, s in zip(names, scores, strict=True):
        view = nodes.get(name)
        if s != best or view is None or (view.rack is None and view.block is None):
            continue
        key = (view.block or "", view.rack or "", name)
        if chosen is None or key < chosen:
            chosen = key
    if chosen is None:
        return locality.NO_SIBLINGS
    view = nodes[chosen[2]]
    racks = frozenset({view.rack}) if view.rack is not None else frozenset()
    blocks = frozenset({view.block}) if view.block is not None else frozenset()
    return locality.Siblings(1, racks, blocks)


def filter_nodes(
    demand: Demand,
    names: Sequence[str],
    nodes: Mapping[str, NodeView],
    summary_of: Callable[[NodeView], Summary],
    siblings: locality.Siblings,
) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(passed, failed, failed and unresolvable) for `names`, in order; the alignment verdict
    is remembered per distinct summary like the scores are."""
    key = f"filter|{demand.require_alignment}|{demand.gpu_class}|{demand.nic_class}|{demand.pairs}"
    passed: list[str] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    get = nodes.get
    required = demand.require_locality if siblings.pods else None
    for name in names:
        node = get(name)
        if node is None or not node.known:
            passed.append(name)  # never seen: not provable
            continue
        if required is not None:
            reason = locality.violation(required, siblings, node.rack, node.block)
            if reason is not None:
                unresolvable[name] = reason  # evicting pods does not move a node elsewhere
                continue
        if demand.require_alignment is None:
            passed.append(name)
            continue
        summary = node.summary or summary_of(node)
        memo = summary.memo
        if key in memo:
            reason = memo[key]
        else:
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            reason = memo[key] = alignment.violation(demand, summary)
        if reason is not None:
            failed[name] = reason  # preempting device holders could free an aligned pair
        else:
            passed.append(name)
    return passed, failed, unresolvable
