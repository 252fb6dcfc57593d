"""The placement oracle against brute force on tiny fleets: every pod tried on every node and
every set of devices, one by one in arrival order (hypothesis draws fleets and workloads)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiment.oracle import inputs, solve
from experiment.oracle.inputs import Demand, Phase, Root, Workload

Device = tuple[str, int, int, int]
"""(kind "g" or "n", root index, NUMA node, serial)."""


def _devices(hardware: tuple[Root, ...]) -> list[Device]:
    out: list[Device] = []
    for i, root in enumerate(hardware):
        out += [("g", i, root.numa, k) for k in range(root.gpus)]
        out += [("n", i, root.numa, k) for k in range(root.nics)]
    return out


def _choices(free: frozenset[Device], d: Demand) -> Iterator[tuple[frozenset[Device], int, int]]:
    """Every device set `d` can take from `free`, with its (PCIe, NUMA) aligned pairs."""
    gpus = sorted(x for x in free if x[0] == "g")
    nics = sorted(x for x in free if x[0] == "n")
    for g in itertools.combinations(gpus, d.gpus):
        for n in itertools.combinations(nics, d.nics):
            if d.numa and len({x[2] for x in (*g, *n)}) > 1:
                continue
            # aligned: one NIC per GPU on its root, a perfect matching by root counts
            if d.align and Counter(x[1] for x in g) != Counter(x[1] for x in n):
                continue
            pcie = _matched(g, n, 1)
            numa = _matched(g, n, 2)
            yield frozenset(g) | frozenset(n), pcie, numa


def _matched(g: tuple[Device, ...], n: tuple[Device, ...], key: int) -> int:
    gc, nc = Counter(x[key] for x in g), Counter(x[key] for x in n)
    return sum(min(c, nc[v]) for v, c in gc.items())


def _brute(
    hardware: list[tuple[Root, ...]], workload: Workload, *, online: bool
) -> dict[tuple[int, ...], tuple[int, int, int]]:
    """Per reachable tuple of pods placed per phase: the fewest GPUs stranded and the most
    (PCIe, NUMA) aligned pairs. Load phases must be placed in full; `online`: a pod is
    refused only where nothing fits it at its turn."""
    pods = [(i, p.demand) for i, p in enumerate(workload.phases) for _ in range(p.pods)]
    totals = [sum(r.gpus for r in hw) for hw in hardware]
    best: dict[tuple[int, ...], tuple[int, int, int]] = {}
    seen: set[tuple[object, ...]] = set()

    def walk(
        k: int, free: list[frozenset[Device]], placed: list[int], pcie: int, numa: int
    ) -> None:
        state = (k, tuple(free), tuple(placed), pcie, numa)
        if state in seen:
            return
        seen.add(state)
        if k == len(pods):
            stranded = 0
            for node in range(len(hardware)):
                left = sum(1 for x in free[node] if x[0] == "g")
                if 0 < totals[node] - left < totals[node]:
                    stranded += left
            key = tuple(placed)
            old = best.get(key, (10**9, -1, -1))
            best[key] = (min(old[0], stranded), max(old[1], pcie), max(old[2], numa))
            return
        phase, demand = pods[k]
        fitted = False
        for node in range(len(hardware)):
            for taken, p, n in _choices(free[node], demand):
                fitted = True
                placed[phase] += 1
                walk(
                    k + 1,
                    [f - taken if i == node else f for i, f in enumerate(free)],
                    placed,
                    pcie + p,
                    numa + n,
                )
                placed[phase] -= 1
        refusable = workload.phases[phase].refusable
        if refusable and not (online and fitted):
            walk(k + 1, free, placed, pcie, numa)

    walk(0, [frozenset(_devices(hw)) for hw in hardware], [0] * len(workload.phases), 0, 0)
    return best


roots = st.builds(
    Root,
    numa=st.integers(0, 1),
    gpus=st.integers(0, 2),
    nics=st.integers(0, 1),
)
hardware = st.lists(roots, min_size=1, max_size=3).map(lambda rs: tuple(sorted(rs)))


@st.composite
def demands(draw: st.DrawFn) -> Demand:
    gpus = draw(st.integers(1, 2))
    align = draw(st.booleans())
    nics = gpus if align else draw(st.integers(0, gpus))
    return Demand(gpus, nics, align and nics > 0, nics > 0 and draw(st.booleans()))


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple[Root, ...]], Workload]:
    nodes = draw(st.lists(hardware, min_size=1, max_size=2))
    phases = []
    for i in range(draw(st.integers(1, 3))):
        pods = draw(st.integers(1, 2))
        phases.append(
            Phase(
                name=f"p{i}",
                demand=draw(demands()),
                pods=pods,
                placed=0,
                refusable=draw(st.booleans()),
            )
        )
    return nodes, Workload(tuple(phases), {})


def _fleet(nodes: list[tuple[Root, ...]]) -> inputs.Fleet:
    return inputs.Fleet({f"n{i}": hw for i, hw in enumerate(nodes)}, {})


def _with_placed(workload: Workload, placed: tuple[int, ...]) -> Workload:
    phases = tuple(
        Phase(p.name, p.demand, p.pods, n, p.refusable)
        for p, n in zip(workload.phases, placed, strict=True)
    )
    return Workload(phases, {})


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(cases())
def test_the_batch_optimum_is_brute_forces_and_the_online_one_a_limit_of_it(
    case: tuple[list[tuple[Root, ...]], Workload],
) -> None:
    nodes, workload = case
    batch = _brute(nodes, workload, online=False)
    online = _brute(nodes, workload, online=True)
    try:
        oracle = solve.Oracle(_fleet(nodes), workload, time_limit=10)
    except solve.NotHeld:
        assert not batch, "the oracle said the load does not fit, brute force fitted it"
        return
    assert batch, "the oracle fitted a load brute force could not place"
    for i, phase in enumerate(workload.phases):
        if not phase.refusable:
            continue
        most_batch = oracle.most_placed(phase.name, online=False)
        if not online:
            # A probe before a load phase took the room the load needed: no scheduler that
            # places what fits holds the load, and the oracle says so.
            with pytest.raises(solve.NotHeld):
                oracle.most_placed(phase.name, online=True)
            continue
        most_online = oracle.most_placed(phase.name, online=True)
        assert most_batch.optimal and most_online.optimal
        assert most_batch.value == max(k[i] for k in batch)
        # The online model is a limit: never below what a scheduler placing pod by pod
        # (refusing only what fits nowhere) reaches, never above the batch optimum.
        assert most_online.value >= max(k[i] for k in online)
        assert most_online.value <= most_batch.value


@FAST
@given(cases())
def test_conditional_optima_match_brute_force_for_the_pods_an_arm_placed(
    case: tuple[list[tuple[Root, ...]], Workload],
) -> None:
    nodes, workload = case
    batch = _brute(nodes, workload, online=False)
    if not batch:
        return
    placed = sorted(batch)[len(batch) // 2]
    stranded, pcie, numa = batch[placed]
    oracle = solve.Oracle(_fleet(nodes), _with_placed(workload, placed), time_limit=10)
    assert oracle.least_stranded(online=False).value == stranded
    if any(p.demand.nics for p in workload.phases):
        assert oracle.most_aligned("pcie", online=False).value == pcie
        assert oracle.most_aligned("numa", online=False).value == numa
