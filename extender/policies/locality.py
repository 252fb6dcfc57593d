"""Job locality: pods of one Job (or gang) prefer the rack, then the block, where their
siblings already run (Kueue TAS / KAI read the same levels from node labels)."""

from __future__ import annotations

from dataclasses import dataclass

from extender.demand import Locality


@dataclass(frozen=True, slots=True)
class Siblings:
    """Where a pod's job siblings run right now."""

    pods: int = 0
    racks: frozenset[str] = frozenset()
    blocks: frozenset[str] = frozenset()


NO_SIBLINGS = Siblings()


def score(
    siblings: Siblings, rack: str | None, block: str | None, block_credit: float
) -> float | None:
    """1.0 in a sibling's rack, `block_credit` in a sibling's block, else 0; None when no
    sibling runs yet (the term then does not apply)."""
    if not siblings.pods:
        return None
    if rack is not None and rack in siblings.racks:
        return 1.0
    if block is not None and block in siblings.blocks:
        return block_credit
    return 0.0


def violation(
    required: Locality | None, siblings: Siblings, rack: str | None, block: str | None
) -> str | None:
    """Why the node provably breaks a required locality, or None."""
    if required is None or not siblings.pods:
        return None
    value, allowed = (rack, siblings.racks) if required == "rack" else (block, siblings.blocks)
    if not allowed:
        return None  # the siblings' nodes carry no such label: nothing to compare with
    if value is None:
        return f"node has no {required} label; job siblings run in {required}s {sorted(allowed)}"
    if value in allowed:
        return None
    return f"{required} {value} has none of the job's siblings (they run in {sorted(allowed)})"
