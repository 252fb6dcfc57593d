"""What one node can hold (pure): every multiset of the workload's pods that fits its
devices, found by placing pods device by device on its PCIe roots.

A node's state is its roots' free GPUs and NICs (sorted: roots alike are interchangeable).
A pod takes GPUs and NICs from roots as its claim allows: aligned pairs one GPU and one NIC
of one root each, loose GPUs and NICs anywhere, a NUMA claim everything from one NUMA node.
Pods are added phase by phase in arrival order, so each pattern also knows at which phases
the node can be left with no room for one more pod of that phase (`closable`): what the
online optimum's rule (a refused pod fitted nowhere) needs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from experiment.oracle.inputs import Demand, Hardware

State = tuple[tuple[int, int, int], ...]
"""Per root (NUMA node, free GPUs, free NICs), sorted."""

MAX_STATES = 200_000
"""States explored per node shape before the oracle gives up (a workload too fine-grained
for pattern enumeration): a clear error, never a silent truncation."""


class TooManyPatterns(ValueError):
    pass


@dataclass(frozen=True)
class Pattern:
    counts: tuple[int, ...]
    """Pods of each phase on the node."""
    gpus: int
    """GPUs they take."""
    pcie_pairs: int
    """The most GPU-NIC pairs on one PCIe root any device choice gives them."""
    numa_pairs: int
    """The most GPU-NIC pairs on one NUMA node any device choice gives them."""
    closable: frozenset[int]
    """Phases after which some device choice leaves no room for one more of its pods."""


def _spread(amount: int, caps: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every way to take `amount` units from slots with these capacities."""
    if not caps:
        if amount == 0:
            yield ()
        return
    rest = sum(caps[1:])
    for take in range(max(0, amount - rest), min(amount, caps[0]) + 1):
        for tail in _spread(amount - take, caps[1:]):
            yield (take, *tail)


@functools.lru_cache(maxsize=1 << 16)
def place(state: State, demand: Demand) -> dict[State, tuple[int, int]]:
    """Every state `demand` can leave `state` in, with the most (PCIe, NUMA) aligned pairs
    reaching it (cached: the same states recur under many patterns; do not mutate)."""
    out: dict[State, tuple[int, int]] = {}
    numas = sorted({r[0] for r in state}) if demand.numa else [None]
    for numa in numas:
        idx = [i for i, r in enumerate(state) if numa is None or r[0] == numa]
        if demand.align:
            caps = [min(state[i][1], state[i][2]) for i in idx]
            choices: Iterator[tuple[tuple[int, ...], tuple[int, ...]]] = (
                (t, t) for t in _spread(demand.gpus, caps)
            )
        else:
            gpu_caps = [state[i][1] for i in idx]
            nic_caps = [state[i][2] for i in idx]
            choices = (
                (g, n)
                for g in _spread(demand.gpus, gpu_caps)
                for n in _spread(demand.nics, nic_caps)
            )
        for gpus, nics in choices:
            roots = list(state)
            by_numa: dict[int, list[int]] = {}
            pcie = 0
            for i, g, n in zip(idx, gpus, nics, strict=True):
                u, free_g, free_n = roots[i]
                roots[i] = (u, free_g - g, free_n - n)
                pcie += min(g, n)
                totals = by_numa.setdefault(u, [0, 0])
                totals[0] += g
                totals[1] += n
            numa_pairs = sum(min(g, n) for g, n in by_numa.values())
            key = tuple(sorted(roots))
            best = out.get(key, (-1, -1))
            out[key] = (max(best[0], pcie), max(best[1], numa_pairs))
    return out


def initial(hardware: Hardware) -> State:
    return tuple(sorted((r.numa, r.gpus, r.nics) for r in hardware))


@dataclass
class _Reach:
    pcie: int
    numa: int
    closable: frozenset[int]


@functools.lru_cache(maxsize=64)
def enumerate_patterns(
    hardware: Hardware, demands: tuple[Demand, ...], limits: tuple[int, ...]
) -> tuple[Pattern, ...]:
    """Every pattern of pods (at most `limits[i]` of phase i) that fits a node of `hardware`,
    the empty one included (cached: an experiment's repeats ask the same)."""
    frontier: dict[tuple[int, ...], dict[State, _Reach]] = {
        (): {initial(hardware): _Reach(0, 0, frozenset())}
    }
    explored = 0
    for phase, (demand, limit) in enumerate(zip(demands, limits, strict=True)):
        grown: dict[tuple[int, ...], dict[State, _Reach]] = {}
        for prefix, states in frontier.items():
            k = 0
            while states:
                nxt: dict[State, _Reach] = {}
                for state, reach in states.items():
                    fits = place(state, demand)
                    explored += len(fits) + 1
                    if explored > MAX_STATES:
                        raise TooManyPatterns(
                            f"more than {MAX_STATES} node states for one node shape: the "
                            "workload is too fine-grained for the oracle"
                        )
                    if not fits:
                        states[state] = _Reach(reach.pcie, reach.numa, reach.closable | {phase})
                    successors = fits if k < limit else {}
                    for after, (pcie, numa) in successors.items():
                        old = nxt.get(after)
                        new = _Reach(reach.pcie + pcie, reach.numa + numa, reach.closable)
                        if old is not None:
                            new = _Reach(
                                max(old.pcie, new.pcie),
                                max(old.numa, new.numa),
                                old.closable | new.closable,
                            )
                        nxt[after] = new
                grown[(*prefix, k)] = states
                states, k = nxt, k + 1
        frontier = grown
    out: list[Pattern] = []
    for counts, states in frontier.items():
        gpus = sum(c * d.gpus for c, d in zip(counts, demands, strict=True))
        out.append(
            Pattern(
                counts=counts,
                gpus=gpus,
                pcie_pairs=max(r.pcie for r in states.values()),
                numa_pairs=max(r.numa for r in states.values()),
                closable=frozenset().union(*(r.closable for r in states.values())),
            )
        )
    return tuple(out)


def capacity(hardware: Hardware, demand: Demand) -> int:
    """Most pods of `demand` one node of `hardware` holds."""
    states = {initial(hardware)}
    k = 0
    while states:
        states = {after for s in states for after in place(s, demand)}
        k += bool(states)
    return k
