"""Prometheus text exposition as data: parse a scrape, the series whose change over a run is
reported, and the headline figures of one component (pure; `loadgen.scrape` fetches the text,
`loadgen.segments` takes the changes over the component's processes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

Samples = dict[str, float]

# DynamicResources Filter calls: one per node the scheduler checks for a pod, its main cost
# with claims (every device's selectors are evaluated in CEL), so per pod it shows how many
# nodes a policy makes the scheduler look at.
DRA_FILTER_CALLS = (
    'scheduler_plugin_evaluation_total{extension_point="Filter",plugin="DynamicResources"'
)
# A sample line: name, labels (a quoted value may hold `}`, `,` and escaped quotes), value.
# Not prometheus_client.parser: on kube-apiserver's 2.4 MB page it took 2.9 s against this
# regex's 0.2 s, and it renames counters exposed without `_total` (authenticated_user_requests
# became authenticated_user_requests_total), so keys would no longer be the exposed series.
_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
# Series whose change over a run is worth reporting (prefix match on the full series key).
INTERESTING = (
    "scheduler_schedule_attempts_total",
    "scheduler_scheduling_attempt_duration_seconds_sum",
    "scheduler_scheduling_attempt_duration_seconds_count",
    # The scheduling cycle's filter and score, extender calls included (schedule_one.go).
    "scheduler_scheduling_algorithm_duration_seconds_sum",
    "scheduler_scheduling_algorithm_duration_seconds_count",
    "scheduler_framework_extension_point_duration_seconds_sum",
    "scheduler_framework_extension_point_duration_seconds_count",
    'scheduler_plugin_execution_duration_seconds_sum{extension_point="PreFilter",plugin="DynamicResources"',
    'scheduler_plugin_execution_duration_seconds_sum{extension_point="Filter",plugin="DynamicResources"',
    DRA_FILTER_CALLS,
    "apiserver_request_total",
    "process_cpu_seconds_total",
    "extender_",
    # kube-controller-manager's Job pods made, and etcd's writes, where they are scraped.
    "job_controller_job_pods_creation_total",
    "etcd_mvcc_put_total",
)
GAUGES = ("process_resident_memory_bytes",)
SERIES_LIMIT = 300
"""Changed series kept per component (the experiment engine knows this cap)."""


def parse(text: str, prefixes: tuple[str, ...] = ()) -> Samples:
    """Series key (`name{labels}` exactly as exposed) -> value; comments and lines that are
    not samples skipped; with `prefixes`, only series whose name starts with one of them (a
    scrape taken every few seconds reads only what it keeps)."""
    out: Samples = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        if prefixes and not line.startswith(prefixes):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        try:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        except ValueError:
            continue
    return out


# Prefix of a gauge's change over the run (its plain key holds the value after the run).
CHANGE = "change:"


def kept(key: str) -> bool:
    """Whether a series' change over the run is reported (`loadgen.segments` takes it)."""
    if key.split("{", 1)[0].endswith(("_bucket", "_created")):
        return False
    return key.startswith(INTERESTING) or key.startswith(GAUGES)


def summary(
    d: Mapping[str, float], *, partial: bool = False, spans_processes: bool = False
) -> dict[str, float]:
    """The headline figures of one component's deltas. `partial`: its counters could not be
    made whole, so only its memory after is given; `spans_processes`: it restarted, so its
    memory growth (across processes) is not given either."""

    def total(prefix: str) -> float:
        return sum(v for k, v in d.items() if k.startswith(prefix))

    figures = {
        "cpu_seconds": total("process_cpu_seconds_total"),
        "rss_bytes": total("process_resident_memory_bytes"),
        "rss_growth_bytes": total(CHANGE + "process_resident_memory_bytes"),
        "schedule_attempts": total("scheduler_schedule_attempts_total"),
        "dynamic_resources_seconds": total("scheduler_plugin_execution_duration_seconds_sum"),
        "dra_filter_calls": total(DRA_FILTER_CALLS),
        "api_requests": total("apiserver_request_total"),
    }
    if partial:
        return {"rss_bytes": figures["rss_bytes"]}
    if spans_processes:
        del figures["rss_growth_bytes"]
    return figures
