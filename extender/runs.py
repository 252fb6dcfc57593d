"""The loadgen runs the extender sees, for Grafana's run annotations.

No scraped metric named a loadgen run, so a dashboard could not mark one. Every run records
itself on its own namespace (label `testbed.dra.io/run`, a heartbeat it refreshes while it
runs: `testbed.heartbeats`), and the extender is scraped wherever loadgen runs (locally and
on a real cluster), so it watches those namespaces and exports, at scrape time, when each
run started and (once it has) ended, as timestamps:
`extender_loadgen_run_start_timestamp_seconds{run}` and
`extender_loadgen_run_end_timestamp_seconds{run}`. The dashboard's annotations take the
value as the event's time (Grafana's "series value as timestamp"), so a run shorter than a
scrape interval is still marked at its true start and end, which a 0/1 "running" gauge would
miss or stretch to the scrape grid.

A run ends when its namespace is deleted (its deletionTimestamp), or at its last heartbeat
when it was kept (`--keep`) or abandoned (killed). A run is exported while it runs and for
`LINGER_SECONDS` after it ended (so a scrape sees its end), the newest `MAX_RUNS` at most:
the cardinality is bounded by the runs of the last few minutes, not by every run ever seen.

Pure: `runs`. I/O: `follow` (one list+watch of namespaces).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from testbed import heartbeats, vocab
from testbed.kube import resources
from testbed.kube.client import Kube
from testbed.kube.watching import Change, Liveness, RestartReason, informer

START: Final = "extender_loadgen_run_start_timestamp_seconds"
END: Final = "extender_loadgen_run_end_timestamp_seconds"
MAX_RUNS: Final = 20
"""Runs exported at most: far more than one cluster runs within `LINGER_SECONDS`."""
LINGER_SECONDS: Final = 300.0
"""How long an ended run stays exported: scrape intervals are 5 s locally, 30 s typically."""
SELECTOR: Final = f"{vocab.LABEL_MANAGED_BY}={vocab.LOADGEN_MANAGED_BY},{vocab.LABEL_RUN}"
"""loadgen's run namespaces (`loadgen.templates.namespace`)."""
RESOURCE: Final = resources.NAMESPACES
KIND: Final = RESOURCE.kind


@dataclass(frozen=True, slots=True)
class Run:
    run: str
    start: float
    end: float | None
    """None while it runs."""


def of_namespace(ns: Mapping[str, Any], now: float) -> Run | None:
    """The run a loadgen namespace records, as of `now` (None: not a run's namespace)."""
    meta = ns.get("metadata") or {}
    run = (meta.get("labels") or {}).get(vocab.LABEL_RUN)
    if not run:
        return None
    start = heartbeats.parse_time(meta.get("creationTimestamp")) or now
    end = heartbeats.parse_time(meta.get("deletionTimestamp"))
    if end is None and heartbeats.state(dict(ns), now) != "running":
        beat = heartbeats.parse_time(
            (meta.get("annotations") or {}).get(vocab.ANNOTATION_LOADGEN_HEARTBEAT)
        )
        end = beat if beat is not None else start
    return Run(str(run), start, end)


def runs(
    namespaces: Iterable[Mapping[str, Any]],
    gone: Iterable[Run],
    now: float,
    *,
    linger: float = LINGER_SECONDS,
    limit: int = MAX_RUNS,
) -> list[Run]:
    """The runs to export at `now`: those of the `namespaces` still there and those `gone`
    with them, running or ended within `linger`; the newest `limit`, by run id."""
    found = {r.run: r for r in gone}
    for ns in namespaces:
        r = of_namespace(ns, now)
        if r is not None:
            found[r.run] = r
    recent = [r for r in found.values() if r.end is None or now - r.end <= linger]
    newest = sorted(recent, key=lambda r: r.start, reverse=True)[:limit]
    return sorted(newest, key=lambda r: r.run)


class Runs(Collector):
    """The run namespaces last seen (fed by `follow`), and the runs whose namespace went
    away, read at scrape time."""

    def __init__(
        self, clock: Callable[[], float] = time.time, linger: float = LINGER_SECONDS
    ) -> None:
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.gone: dict[str, Run] = {}
        self.clock = clock
        self.linger = linger

    def replace(self, items: Iterable[dict[str, Any]]) -> None:
        fresh = {resources.name_of(ns): ns for ns in items}
        for name in set(self.namespaces) - set(fresh):
            self._gone(self.namespaces[name])
        self.namespaces = fresh

    def apply(self, change: Change) -> None:
        name = resources.name_of(change.object)
        if change.type == "DELETED":
            self.namespaces.pop(name, None)
            self._gone(change.object)
        else:
            self.namespaces[name] = change.object

    def _gone(self, ns: dict[str, Any]) -> None:
        now = self.clock()
        r = of_namespace(ns, now)
        if r is not None:
            self.gone[r.run] = Run(r.run, r.start, r.end if r.end is not None else now)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self.clock()
        self.gone = {
            k: r for k, r in self.gone.items() if r.end is None or now - r.end <= self.linger
        }
        start = GaugeMetricFamily(
            START,
            "When a loadgen run started (its namespace's creation), by run id: exported while "
            "it runs and for a while after it ended (Grafana's run annotations).",
            labels=["run"],
        )
        end = GaugeMetricFamily(
            END,
            "When a loadgen run ended (its namespace's deletion, or its last heartbeat if kept "
            "or killed), by run id: exported for a while after it ended.",
            labels=["run"],
        )
        for r in runs(self.namespaces.values(), self.gone.values(), now, linger=self.linger):
            start.add_metric([r.run], r.start)
            if r.end is not None:
                end.add_metric([r.run], r.end)
        yield start
        yield end


async def follow(
    kube: Kube,
    runs: Runs,
    *,
    on_restart: Callable[[str, RestartReason], None] | None = None,
    stop: asyncio.Event | None = None,
    liveness: Liveness | None = None,
) -> None:
    """Keep `runs` in step with loadgen's namespaces (not part of readiness: the scheduler's
    calls never read them)."""

    def restarted(reason: RestartReason) -> None:
        if on_restart is not None:
            on_restart(KIND, reason)

    async for item in informer(
        kube,
        RESOURCE,
        label_selector=SELECTOR,
        on_restart=restarted,
        stop=stop,
        liveness=liveness,
    ):
        if isinstance(item, Change):
            runs.apply(item)
        else:
            runs.replace(item.items)
