"""Where the extender's CPU goes, by named stage, in every run.

Each stage is a synchronous stretch of the event loop's thread, timed with that thread's CPU
clock (`time.thread_time`: CPU spent, not wall time, so a busy machine that deschedules the
extender mid-call does not inflate it): decoding a call's body, working out the pod's demand
(its claims and templates looked up), judging (DRA's verdicts on the candidates, the
filter's rules or the scores), encoding the reply, and applying watch events to the index.
What no stage covers (aiohttp reading requests and writing replies, the event loop, the
watch streams' reads and JSON decoding, the admission gate, metrics) is the process's CPU
(`process_cpu_seconds_total`) less their sum: reports show it as "http, watch reads and
event loop".

Why not a sampling profiler: py-spy and its kin sample wall time, and on the 2 shared cores
this runs on, a thread made runnable but not yet run (in uvloop's socket write, say) reads
as busy; the stages here cost about 0.3 us a boundary, a few per call.

Exposed as `extender_cpu_seconds_total{stage}`, read at scrape time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

STAGES: Final = ("decode", "demand", "judge", "encode", "events")
now = time.thread_time


class CpuStages(Collector):
    """CPU seconds per stage; `lap(stage, since)` adds the CPU since `since` (a `now()`
    reading) to `stage` and returns the new reading, so a handler chains its stages."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)

    def lap(self, stage: str, since: float) -> float:
        t = now()
        self.seconds[stage] += t - since
        return t

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "extender_cpu_seconds",
            "CPU seconds of the event loop's thread by stage of the extender's work: decode "
            "(call bodies), demand (the pod's claims looked up), judge (DRA verdicts, filter "
            "rules, scores), encode (replies), events (watch events applied to the index). "
            "The rest of process_cpu_seconds_total is HTTP, watch reads and the event loop.",
            labels=["stage"],
        )
        for stage, seconds in self.seconds.items():
            family.add_metric([stage], seconds)
        yield family
