"""The optima as MILPs, solved by scipy's HiGHS within a time limit (pure).

Placement model (every workload but gangs): integer n[h, p] = nodes of hardware shape h
holding pattern p (`patterns`), every node holding exactly one pattern (the empty one
included). A phase's pods placed are the sum of its counts over the patterns in use.

Two optima, each an upper limit for any placer of its kind:

- **batch**: every pod of the run known at once; the load phases placed in full, the
  probe phases (`wait: settled`) as the objective likes.
- **online**: pods arrive phase by phase (each phase settles before the next, as loadgen's
  phases do), a placed pod never moves and none leaves, and a pod is refused only if no node
  can hold it when it arrives, as kube-scheduler behaves (it never holds a pod back to keep
  room for a later one). The placer may know what comes later. Written as a constraint: if a
  phase refuses any pod, every node must be left, after that phase, with no room for one
  more of its pods (`Pattern.closable`). A phase's pods are alike, so a refused pod may be
  taken to be its phase's last. Closability is taken over any device choice (a relaxation),
  so this is a limit, tight where one device choice serves both.
  With no departures, any final placement can be reached in arrival order, so where the batch
  optimum places every pod, the online optimum equals it; they differ only where the batch
  optimum refuses some pods of a probe to place more of a later one, which a scheduler that
  places whatever fits cannot do.

The arm's own figures of the fleet (GPUs stranded, pairs aligned) depend on how many pods it
placed, so their optima are taken over placements of the same pods per phase as the arm's
(conditional optima: the arm's own placement is one of them, so it can never beat them).

A time limit hit leaves the best placement found and HiGHS's bound: `Bound` carries both and
never calls the first optimal.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from experiment.oracle import patterns
from experiment.oracle.inputs import Fleet, Hardware, Phase, Workload
from experiment.oracle.patterns import Pattern

DEFAULT_TIME_LIMIT = 30.0
"""Seconds per MILP."""
Sense = Literal["max", "min"]


class NotHeld(ValueError):
    """The fleet cannot hold the workload's load phases; the message says which and by how
    much."""


@dataclass(frozen=True)
class Bound:
    """One optimum: the best placement found and the limit no placement passes."""

    objective: str
    sense: Sense
    value: float
    """The best placement's objective."""
    bound: float
    """No placement does better than this (equal to `value` when proven optimal)."""
    optimal: bool
    seconds: float

    @property
    def gap(self) -> float:
        """|bound - value| relative to the bound (0 when proven optimal)."""
        if self.optimal or self.bound == self.value:
            return 0.0
        return abs(self.bound - self.value) / max(abs(self.bound), 1e-9)

    def describe(self, fmt: str = "{:g}") -> str:
        if self.optimal:
            return fmt.format(self.value)
        return f"{fmt.format(self.value)} (limit {fmt.format(self.bound)}, gap {self.gap:.1%})"


@dataclass
class _Model:
    """The placement MILP's columns: one per (shape, pattern), then one per refusable phase
    (the online model's `refused` indicators)."""

    workload: Workload
    shapes: list[tuple[Hardware, int]]
    columns: list[tuple[int, Pattern]] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return sum(n for _, n in self.shapes)


def _model(fleet: Fleet, workload: Workload) -> _Model:
    demands = tuple(p.demand for p in workload.phases)
    limits = tuple(p.pods for p in workload.phases)
    shapes = sorted(
        (hw, n) for (hw, _), n in fleet.classes(workload.node_selector).items() if n > 0
    )
    model = _Model(workload, shapes)
    for s, (hw, _) in enumerate(shapes):
        model.columns.extend((s, p) for p in patterns.enumerate_patterns(hw, demands, limits))
    return model


Placed = Mapping[str, tuple[int, int]]
"""Per phase name, (fewest, most) pods placed."""


def _solve(
    model: _Model,
    objective: Sequence[float],
    sense: Sense,
    placed: Placed,
    *,
    online: bool,
    name: str,
    time_limit: float,
) -> Bound | None:
    """Solve over n (and the online indicators); None when nothing satisfies `placed`."""
    phases = model.workload.phases
    probes = [i for i, p in enumerate(phases) if p.refusable] if online else []
    cols = len(model.columns) + len(probes)
    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(coefs: np.ndarray, low: float, high: float) -> None:
        rows.append(coefs)
        lo.append(low)
        hi.append(high)

    for s, (_, count) in enumerate(model.shapes):
        coefs = np.zeros(cols)
        for j, (shape, _) in enumerate(model.columns):
            coefs[j] = shape == s
        row(coefs, count, count)
    for i, phase in enumerate(phases):
        coefs = np.zeros(cols)
        for j, (_, pattern) in enumerate(model.columns):
            coefs[j] = pattern.counts[i]
        low, high = placed.get(phase.name, (phase.pods, phase.pods))
        row(coefs, low, high)
    for k, i in enumerate(probes):
        refused = len(model.columns) + k
        # refused_i = 0 forces every pod of phase i placed ...
        coefs = np.zeros(cols)
        for j, (_, pattern) in enumerate(model.columns):
            coefs[j] = pattern.counts[i]
        coefs[refused] = phases[i].pods
        row(coefs, phases[i].pods, np.inf)
        # ... and refused_i = 1 leaves no node with room for one more of its pods.
        coefs = np.zeros(cols)
        for j, (_, pattern) in enumerate(model.columns):
            coefs[j] = i not in pattern.closable
        coefs[refused] = model.nodes
        row(coefs, -np.inf, model.nodes)
    c = np.zeros(cols)
    c[: len(objective)] = objective
    upper = np.array(
        [model.shapes[s][1] for s, _ in model.columns] + [1] * len(probes), dtype=float
    )
    started = time.monotonic()
    res = milp(
        -c if sense == "max" else c,
        integrality=np.ones(cols),
        bounds=Bounds(np.zeros(cols), upper),
        constraints=LinearConstraint(np.array(rows), lo, hi),
        options={"time_limit": time_limit, "disp": False},
    )
    seconds = time.monotonic() - started
    if res.x is None:
        if res.status == 2:
            return None
        raise TimeoutError(f"{name}: no placement found within {time_limit:g} s")
    return _bound(name, sense, float(c @ np.round(res.x)), res, seconds)


def _bound(name: str, sense: Sense, value: float, res: object, seconds: float) -> Bound:
    optimal = getattr(res, "status", 1) == 0
    dual = getattr(res, "mip_dual_bound", None)
    if optimal or dual is None or not math.isfinite(dual):
        limit = value if optimal else (math.inf if sense == "max" else -math.inf)
    else:
        # Objectives are integral: a fractional limit rounds towards the value.
        limit = math.floor(-dual + 1e-6) if sense == "max" else math.ceil(dual - 1e-6)
    return Bound(name, sense, value, float(limit), optimal, seconds)


def _phase(workload: Workload, name: str) -> int:
    for i, p in enumerate(workload.phases):
        if p.name == name:
            return i
    raise KeyError(name)


def _load_placed(workload: Workload) -> dict[str, tuple[int, int]]:
    """Load phases in full, probes anywhere from none to all."""
    return {p.name: (0 if p.refusable else p.pods, p.pods) for p in workload.phases}


def _arm_placed(workload: Workload) -> dict[str, tuple[int, int]]:
    return {p.name: (p.placed, p.placed) for p in workload.phases}


class Oracle:
    """The optima of one workload on one fleet (placement model; gangs: `gang_spans`)."""

    def __init__(self, fleet: Fleet, workload: Workload, time_limit: float = DEFAULT_TIME_LIMIT):
        if workload.gangs:
            raise ValueError("gang workloads: use gang_spans")
        self.workload = workload
        self.time_limit = time_limit
        self.model = _model(fleet, workload)
        self._check_held()

    def _run(
        self, objective: Sequence[float], sense: Sense, placed: Placed, online: bool, name: str
    ) -> Bound | None:
        return _solve(
            self.model,
            objective,
            sense,
            placed,
            online=online,
            name=name,
            time_limit=self.time_limit,
        )

    def _check_held(self) -> None:
        """Raise NotHeld naming the first load phase that cannot be placed in full after the
        ones before it."""
        phases = self.workload.phases
        placed = {p.name: (0, p.pods) for p in phases}
        for i, phase in enumerate(phases):
            if not phase.refusable:
                counts = [float(p.counts[i]) for _, p in self.model.columns]
                best = self._run(counts, "max", placed, False, phase.name)
                most = 0 if best is None else int(min(best.bound, phase.pods))
                if most < phase.pods:
                    before = "" if i == 0 else " after the phases before it"
                    raise NotHeld(
                        f"phase {phase.name}: {phase.pods} pods of {_describe(phase)} asked, "
                        f"at most {most} fit{before} ({phase.pods - most} short)"
                    )
            placed[phase.name] = (0 if phase.refusable else phase.pods, phase.pods)

    def most_placed(self, phase: str, *, online: bool) -> Bound:
        """The most pods of probe phase `phase` placed, the load phases in full."""
        i = _phase(self.workload, phase)
        counts = [float(p.counts[i]) for _, p in self.model.columns]
        got = self._run(counts, "max", _load_placed(self.workload), online, phase)
        if got is None:
            raise NotHeld(
                "placing what fits as it comes, the probes before a load phase take the room "
                "it needs: no such scheduler holds the load"
            )
        return got

    def least_stranded(self, *, online: bool) -> Bound | None:
        """The fewest free GPUs on partly used nodes, the arm's pods placed. None (online
        only): no scheduler that places what fits ends with the arm's counts (the arm refused
        or left undecided a pod that fitted)."""
        per = []
        for s, p in self.model.columns:
            total = sum(r.gpus for r in self.model.shapes[s][0])
            per.append(float(total - p.gpus) if 0 < p.gpus < total else 0.0)
        placed = _arm_placed(self.workload)
        got = self._run(per, "min", placed, online, "GPUs stranded")
        return got if online else self._need(got)

    def most_aligned(self, level: Literal["pcie", "numa"], *, online: bool) -> Bound | None:
        """The most GPU-NIC pairs on one PCIe root (or NUMA node), the arm's pods placed;
        None as for `least_stranded`."""
        per = [
            float(p.pcie_pairs if level == "pcie" else p.numa_pairs) for _, p in self.model.columns
        ]
        placed = _arm_placed(self.workload)
        got = self._run(per, "max", placed, online, f"pairs on one {level}")
        return got if online else self._need(got)

    @staticmethod
    def _need(bound: Bound | None) -> Bound:
        if bound is None:
            raise NotHeld("no placement of this fleet holds the pods the arm placed")
        return bound


def _describe(phase: Phase) -> str:
    d = phase.demand
    what = f"{d.gpus} GPU" + (f" + {d.nics} NIC" if d.nics else "")
    how = (" aligned" if d.align else "") + (" on one NUMA node" if d.numa else "")
    return what + how


def gang_spans(
    fleet: Fleet, workload: Workload, level: str, time_limit: float = DEFAULT_TIME_LIMIT
) -> Bound:
    """The fewest distinct values of node label `level` (block, rack) per gang, on average,
    with every gang placed whole. Groups (label values) holding the same pods are
    interchangeable: the model names gangs and groups, but HiGHS prunes the symmetry well
    enough at the built-in comparisons' sizes; a time limit hit reports its gap."""
    demands = {p.demand for p in workload.phases}
    if len(demands) != 1:
        raise ValueError("gangs of different claims are not modelled")
    demand = demands.pop()
    caps: dict[str, int] = {}
    per_shape: dict[Hardware, int] = {}
    for (hw, group), n in fleet.classes(workload.node_selector, level).items():
        if hw not in per_shape:
            per_shape[hw] = patterns.capacity(hw, demand)
        caps[group] = caps.get(group, 0) + n * per_shape[hw]
    groups = [g for g in sorted(caps) if caps[g] > 0]
    sizes = [p.gang_size for p in workload.phases for _ in range(p.gangs)]
    held = sum(caps.values())
    if sum(sizes) > held:
        raise NotHeld(
            f"{len(sizes)} gangs need {sum(sizes)} pods of {_describe(workload.phases[0])}, "
            f"the fleet holds {held} ({sum(sizes) - held} short)"
        )
    if not sizes:
        return Bound(f"{level} per gang", "min", 0.0, 0.0, True, 0.0)
    G, B = len(sizes), len(groups)
    # columns: x[g, b] (pods of gang g in group b), then y[g, b] (gang g touches b)
    cols = 2 * G * B

    def x(g: int, b: int) -> int:
        return g * B + b

    def y(g: int, b: int) -> int:
        return G * B + g * B + b

    rows: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    for g, size in enumerate(sizes):
        coefs = np.zeros(cols)
        for b in range(B):
            coefs[x(g, b)] = 1
        rows.append(coefs)
        lo.append(size)
        hi.append(size)
        for b, group in enumerate(groups):
            coefs = np.zeros(cols)
            coefs[x(g, b)] = 1
            coefs[y(g, b)] = -min(size, caps[group])
            rows.append(coefs)
            lo.append(-np.inf)
            hi.append(0)
        # a gang needs at least ceil(size / biggest group) groups (tightens the relaxation)
        coefs = np.zeros(cols)
        for b in range(B):
            coefs[y(g, b)] = 1
        rows.append(coefs)
        lo.append(math.ceil(size / max(caps.values())))
        hi.append(np.inf)
    for b, group in enumerate(groups):
        coefs = np.zeros(cols)
        for g in range(G):
            coefs[x(g, b)] = 1
        rows.append(coefs)
        lo.append(-np.inf)
        hi.append(caps[group])
    c = np.zeros(cols)
    c[G * B :] = 1.0 / G
    upper = np.array(
        [min(sizes[g], caps[groups[b]]) for g in range(G) for b in range(B)] + [1] * G * B,
        dtype=float,
    )
    started = time.monotonic()
    res = milp(
        c,
        integrality=np.ones(cols),
        bounds=Bounds(np.zeros(cols), upper),
        constraints=LinearConstraint(np.array(rows), lo, hi),
        options={"time_limit": time_limit, "disp": False},
    )
    seconds = time.monotonic() - started
    name = f"{level} per gang"
    if res.x is None:
        raise TimeoutError(f"{name}: no placement found within {time_limit:g} s")
    touched = float(np.round(res.x[G * B :]).sum())
    optimal = res.status == 0
    dual = getattr(res, "mip_dual_bound", None)
    # each gang needs ceil(size / biggest group) groups whatever the solver proved
    limit = float(sum(math.ceil(s / max(caps.values())) for s in sizes))
    if optimal:
        limit = touched
    elif dual is not None and math.isfinite(dual):
        limit = max(limit, float(math.ceil(dual * G - 1e-6)))
    return Bound(name, "min", touched / G, limit / G, optimal, seconds)
