"""Pure arrival schedules: when each object of a phase should be created.

Open loop (`fixed`, `poisson`) gives every object an offset in seconds from the phase start,
independent of how the cluster keeps up; `closed` has no schedule — the driver creates the
next object only when fewer than `max_in_flight` are still pending.
"""

from __future__ import annotations

import random
from typing import Literal

Arrival = Literal["fixed", "poisson", "closed"]


def offsets(n: int, qps: float, arrival: Arrival, *, seed: int = 0) -> list[float] | None:
    """Creation offsets (seconds, non-decreasing, first at 0) for `n` objects.

    `qps <= 0` means "as fast as allowed": every offset is 0. `closed` returns None.
    Poisson arrivals use a seeded generator so a scenario replays identically.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if arrival == "closed":
        return None
    if qps <= 0:
        return [0.0] * n
    if arrival == "fixed":
        return [i / qps for i in range(n)]
    rng = random.Random(seed)
    out: list[float] = []
    t = 0.0
    for i in range(n):
        if i:
            t += rng.expovariate(qps)
        out.append(t)
    return out


def waves(total: int, size: int) -> list[int]:
    """Sizes of consecutive waves covering `total` objects, each at most `size`."""
    if size <= 0:
        raise ValueError("wave size must be > 0")
    full, rest = divmod(total, size)
    return [size] * full + ([rest] if rest else [])
