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

The thread's CPU clock is a system call, a few microseconds each here and far more on a
loaded sandboxed machine, so it is read for a sample of the stretches (one in `PERIOD`,
chosen at random, every stage of a chained stretch together) and each sampled stretch counts
`PERIOD` times: an unbiased estimate whose own cost is a fraction of a microsecond a call.
Why not a sampling profiler: py-spy and its kin sample wall time, and on the 2 shared cores
this runs on, a thread made runnable but not yet run (in uvloop's socket write, say) reads
as busy.

Exposed as `extender_cpu_seconds_total{stage}`, read at scrape time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

STAGES: Final = ("decode", "demand", "judge", "encode", "events")
PERIOD: Final = 16
"""One stretch in this many is timed (and counts this many times)."""


class CpuStages(Collector):
    """Estimated CPU seconds per stage. A stretch begins with `t = start()` (a CPU clock
    reading, or None when this stretch is not sampled) and each stage of it ends with
    `t = lap(stage, t)`, which adds the CPU since `t` to `stage` and returns the next
    reading (None stays None)."""

    def __init__(self, period: int = PERIOD, rng: random.Random | None = None) -> None:
        self.period = period
        self._draw = (rng or random.Random()).random
        self._measured = dict.fromkeys(STAGES, 0.0)

    @property
    def seconds(self) -> dict[str, float]:
        """The estimate per stage."""
        return {s: v * self.period for s, v in self._measured.items()}

    def start(self) -> float | None:
        if self._draw() * self.period >= 1.0:
            return None
        return time.thread_time()

    def lap(self, stage: str, since: float | None) -> float | None:
        if since is None:
            return None
        t = time.thread_time()
        self._measured[stage] += t - since
        return t

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "extender_cpu_seconds",
            "CPU seconds of the event loop's thread by stage of the extender's work, estimated "
            f"from one stretch in {self.period}: decode (call bodies), demand (the pod's claims "
            "looked up), judge (DRA verdicts, filter rules, scores), encode (replies), events "
            "(watch events applied to the index). The rest of process_cpu_seconds_total is "
            "HTTP, watch reads and the event loop.",
            labels=["stage"],
        )
        for stage, seconds in self.seconds.items():
            family.add_metric([stage], seconds)
        yield family
