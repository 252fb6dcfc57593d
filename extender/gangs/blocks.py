"""Which blocks a gang goes to: the fewest that hold all of its pods (pure).

The placer counts, per topology block, how many more pods of the gang's shape the block
has room for (free now, less what earlier gangs hold reserved), and asks `choose`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def room(slots: Iterable[tuple[str | None, int]], reserved: Mapping[str, int]) -> dict[str, int]:
    """Pods each block has room for: the (block, pods) of every node summed by block, less
    `reserved`. Nodes without a block label are left out: no affinity term can name them."""
    out: dict[str, int] = {}
    for block, pods in slots:
        if block is not None and pods > 0:
            out[block] = out.get(block, 0) + pods
    for block, held in reserved.items():
        if block in out:
            out[block] -= held
    return {b: n for b, n in out.items() if n > 0}


def choose(room: Mapping[str, int], size: int) -> tuple[str, ...] | None:
    """The blocks a gang of `size` pods is narrowed to, given each block's room: the
    fullest block that holds it whole (the least room that is enough, so roomier blocks
    stay whole for larger gangs); else the fewest blocks that hold it together (the
    roomiest first, the last the least roomy that completes it); None when all of them
    together have too little room. Ties go to the block named first, so the choice is
    the same every time."""
    if size < 1:
        raise ValueError(f"a gang has at least one pod, not {size}")
    whole = [(n, b) for b, n in room.items() if n >= size]
    if whole:
        return (min(whole)[1],)
    # Any k blocks hold at most what the k roomiest do, so the roomiest first reach `size`
    # with the fewest blocks; the last one is then the best fit for what is left.
    ordered = sorted(((n, b) for b, n in room.items() if n > 0), key=lambda x: (-x[0], x[1]))
    chosen: list[str] = []
    need = size
    for i, (n, b) in enumerate(ordered):
        if n >= need:
            chosen.append(min((m, c) for m, c in ordered[i:] if m >= need)[1])
            return tuple(chosen)
        chosen.append(b)
        need -= n
    return None


def shares(room: Mapping[str, int], blocks: Iterable[str], size: int) -> dict[str, int]:
    """How many of a gang's `size` pods each chosen block is held for: the block's room,
    in the order chosen, the last what is left (what the placer reserves)."""
    out: dict[str, int] = {}
    need = size
    for b in blocks:
        take = min(room.get(b, 0), need)
        if take > 0:
            out[b] = take
            need -= take
    return out
