"""Where an arm's path spends its CPU: each process's CPU seconds over the arm, kept in the
arm's record as `process_cpu` (`figures` reads its total per pod as "whole-path CPU per
pod", the reports show it process by process).

A loadgen arm's path is every process of the site this machine can read (the cluster's
components from their pid files: API server, etcd, controller manager, kwok, the cluster's own
kube-scheduler, ...), the arm's second scheduler and the extender as loadgen scraped them, and
loadgen itself (a child of the runner). An in-process arm's is the benchmark's whole process
tree (`in_process`). Where a site's processes cannot be read (an existing cluster's are not
this machine's) the set would be partial, so no `process_cpu` is kept: not measured, never 0.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from experiment.measure import figures
from experiment.measure.arm_record import ArmRecord, ProcessCpu, ResultDoc
from testbed.cluster import supervision

DEFAULT_SCHEDULER = "default-scheduler"
"""The cluster's own scheduler's name: a pid-file process of the site, not scraped apart."""
MEASURED_SCHEDULER = "scheduler (measured)"
SITE_SCHEDULER = "kube-scheduler"
"""The cluster's own scheduler's process: measured unless a second one is, then idle."""
EXTENDER = "extender"
IDLE_EXTENDER_PROCESS = "extender (idle)"
"""An extender that watched through the arm beside the one called (the testbed's own load)."""
LOADGEN = "loadgen"
CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager")


@dataclass(frozen=True)
class Reading:
    cpu_seconds: dict[str, float]
    busy_cores: float
    """The machine's busy cores over the arm (every process on it, ours or not)."""
    wall_seconds: float


@dataclass(frozen=True)
class Span:
    """CPU counters at an arm's start."""

    processes: Mapping[str, float]
    children: float
    busy: float
    started: float

    @classmethod
    def start(cls, processes: Mapping[str, float]) -> Span:
        busy, _ = supervision.machine_cpu_seconds()
        return cls(dict(processes), supervision.children_cpu_seconds(), busy, time.monotonic())

    def finish(
        self,
        processes: Mapping[str, float],
        *,
        children_as: str,
        at_fault: Mapping[str, float] | None = None,
        killed: str = "",
    ) -> Reading:
        """The CPU each process spent since the start (those seen at both ends), the
        children's ended meanwhile under `children_as`. `at_fault`: every process's CPU
        just before `killed` was killed meanwhile. A restarted process counts from 0 again,
        so what it spent is the sum over its two processes: the killed one, and any whose
        CPU went down since (one that died of the fault, as a counter's drop shows a reset;
        what it spent between the kill and its end is not seen)."""
        wall = max(time.monotonic() - self.started, 1e-9)
        busy, _ = supervision.machine_cpu_seconds()
        at_fault = at_fault or {}

        def restarted(n: str) -> bool:
            return n in at_fault and (n == killed or processes[n] < at_fault[n])

        spent = {
            n: processes[n] + at_fault[n] - before if restarted(n) else processes[n] - before
            for n, before in self.processes.items()
            if n in processes
        }
        spent[children_as] = supervision.children_cpu_seconds() - self.children
        return Reading(spent, (busy - self.busy) / wall, wall)


def kept(reading: Reading, pods: int, covers: str) -> ProcessCpu:
    """`reading` as an arm's record keeps it."""
    return ProcessCpu(
        covers=covers,
        pods=pods,
        cpu_seconds={n: round(v, 4) for n, v in sorted(reading.cpu_seconds.items())},
        busy_cores=round(reading.busy_cores, 3),
        wall_seconds=round(reading.wall_seconds, 2),
    )


LOADGEN_COVERS = (
    "every process of the site's cluster (pid files), the measured scheduler and the extender "
    "as loadgen scraped them, and loadgen itself over the run (its start-up and reports not "
    "counted, where its result says)"
)


def of_loadgen(
    result: ResultDoc,
    span: Span,
    processes: Mapping[str, float],
    scheduler: str,
    at_fault: Mapping[str, float] | None = None,
    killed: str = "",
) -> ProcessCpu | None:
    """A loadgen arm's CPU since `span` (`processes`: the site's at its end) with the
    scraped processes added: the measured scheduler where it is a second one (`scheduler`,
    its name: the cluster's own is among the site's processes), and the extender. None where
    the site's processes were not read or a scrape has no CPU figure (a partial set).
    `at_fault`, `killed`: the site's processes just before `killed` was killed in the arm
    (`Span.finish`)."""
    reading = span.finish(processes, children_as=LOADGEN, at_fault=at_fault, killed=killed)
    pods = result.counts.expected_pods
    scraped_of = ArmRecord(result)
    scraped = {EXTENDER: figures.scraped_cpu_seconds(scraped_of, "extender")}
    if scheduler != DEFAULT_SCHEDULER:
        scraped[MEASURED_SCHEDULER] = figures.scraped_cpu_seconds(scraped_of, "scheduler")
    if not processes or not pods or None in scraped.values():
        return None
    cpu = {**reading.cpu_seconds, **{n: v for n, v in scraped.items() if v is not None}}
    idle = figures.scraped_cpu_seconds(scraped_of, figures.IDLE_EXTENDER)
    if idle is not None:
        cpu[IDLE_EXTENDER_PROCESS] = idle
    if result.loadgen_cpu_seconds is not None and LOADGEN in cpu:
        # Its own reading over the run, as the scraped processes' are: as a child it is
        # counted whole, and its start-up and reports come before and after the measurement.
        cpu[LOADGEN] = result.loadgen_cpu_seconds
    return kept(Reading(cpu, reading.busy_cores, reading.wall_seconds), pods, LOADGEN_COVERS)


@dataclass(frozen=True)
class Breakdown:
    """One variant's CPU per pod by process on one workload, over its repeats."""

    workload: str
    variant: str
    covers: str
    ms_per_pod: dict[str, list[float]]
    """Process -> its value in each repeat that measured it."""
    busy_cores: list[float]

    @property
    def medians(self) -> dict[str, float]:
        return {n: statistics.median(v) for n, v in self.ms_per_pod.items()}


def breakdowns(results: Sequence[tuple[Any, ArmRecord]]) -> list[Breakdown]:
    """Per workload and variant (in the order the arms ran), the arms' CPU by process; arms
    without a reading are left out (pure). `results`: (arm, its record) pairs."""
    grouped: dict[tuple[str, str], list[ProcessCpu]] = {}
    for arm, rec in results:
        cpu = rec.process_cpu
        if arm.measure == "throughput" and cpu is not None and cpu.per_pod_ms() is not None:
            grouped.setdefault((arm.comparison, arm.variant), []).append(cpu)
    out = []
    for (workload, variant), cpus in grouped.items():
        values: dict[str, list[float]] = {}
        for c in cpus:
            for name, ms in (c.per_pod_ms() or {}).items():
                values.setdefault(name, []).append(ms)
        busy = [c.busy_cores for c in cpus]
        out.append(Breakdown(workload, variant, cpus[0].covers, values, busy))
    return out


@dataclass(frozen=True)
class Tax:
    """A loadgen arm's path split by what it is there for, ms per pod (medians)."""

    scheduling: float
    """The scheduler under test and the extender: what the arm measures. In a variant that does
    not call the extender its idle watches (~1 ms a pod) count here too: a breakdown does not
    say which variants call it."""
    control_plane: float
    """The API server, etcd and the controller manager: what any scheduler needs."""
    testbed: dict[str, float]
    """The rest, by process: kwok's fake nodes, loadgen, an idle scheduler, ... the testbed's
    own cost of measuring, which shares the machine with what it measures."""


def tax(b: Breakdown) -> Tax | None:
    """`b` split into scheduling, control plane and the testbed's own; None where it names no
    scheduler process (an in-process harness is one process doing all three)."""
    m = b.medians
    measured = next((n for n in (MEASURED_SCHEDULER, SITE_SCHEDULER) if n in m), None)
    if measured is None:
        return None
    scheduling = (measured, EXTENDER)
    return Tax(
        scheduling=sum(m.get(n, 0.0) for n in scheduling),
        control_plane=sum(m.get(n, 0.0) for n in CONTROL_PLANE),
        testbed={n: v for n, v in m.items() if n not in (*scheduling, *CONTROL_PLANE)},
    )


def _tax_line(t: Tax) -> str:
    own = sum(t.testbed.values())
    total = t.scheduling + t.control_plane + own or 1.0
    named = ", ".join(f"{n} {v:.1f}" for n, v in sorted(t.testbed.items(), key=lambda kv: -kv[1]))
    parts = [
        ("scheduling", t.scheduling, ""),
        ("control plane", t.control_plane, ""),
        ("the testbed's own", own, f": {named}" if named else ""),
    ]
    return ", ".join(
        f"{name} {ms:.1f} ({100 * ms / total:.0f} %{more})" for name, ms, more in parts
    )


def lines(b: Breakdown) -> list[str]:
    """A breakdown in words, largest first: `name 12.3`, the total and what it covers, then
    its split into scheduling, control plane and the testbed's own (`tax`)."""
    medians = sorted(b.medians.items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{n} {v:.1f}" for n, v in medians)
    total = sum(v for _, v in medians)
    busy = statistics.median(b.busy_cores)
    split = tax(b)
    return [
        f"{b.workload} / {b.variant}: {total:.1f} ms per pod over {b.covers} "
        f"(median over {max(len(v) for v in b.ms_per_pod.values())} repeat(s); machine busy "
        f"cores {busy:.2f})",
        f"  {parts}",
        *([f"  {_tax_line(split)}"] if split is not None else []),
    ]


def from_json(items: Sequence[Mapping[str, Any]]) -> list[Breakdown]:
    """`to_json`'s breakdowns back (an experiment.json's, for its rebuilt page)."""
    return [
        Breakdown(
            b["workload"],
            b["variant"],
            b["covers"],
            {n: list(v["values"]) for n, v in b["ms_per_pod"].items()},
            list(b["busy_cores"]),
        )
        for b in items
    ]


def to_json(items: Sequence[Breakdown]) -> list[dict[str, Any]]:
    return [
        {
            "workload": b.workload,
            "variant": b.variant,
            "covers": b.covers,
            "ms_per_pod": {
                n: {"values": [round(x, 3) for x in v], "median": round(b.medians[n], 3)}
                for n, v in b.ms_per_pod.items()
            },
            "busy_cores": b.busy_cores,
        }
        for b in items
    ]
