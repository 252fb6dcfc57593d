"""Prometheus text exposition as data: parse a scrape, the changes over a run, and the
headline figures of one component (pure; `loadgen.scrape` fetches the text).
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
)
_GAUGES = ("process_resident_memory_bytes",)


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


def deltas(before: Samples, after: Samples, *, limit: int = 300) -> dict[str, float]:
    """Changes of the interesting counters, plus interesting gauges as their value after and
    their change (`change:<key>`)."""
    out: dict[str, float] = {}
    for key, value in after.items():
        name = key.split("{", 1)[0]
        if name.endswith(("_bucket", "_created")):
            continue
        if key.startswith(_GAUGES):
            out[key] = value
            if key in before:
                out[CHANGE + key] = round(value - before[key], 6)
        elif key.startswith(INTERESTING):
            change = value - before.get(key, 0.0)
            if change:
                out[key] = round(change, 6)
        if len(out) >= limit:
            break
    return out


def summary(d: Mapping[str, float]) -> dict[str, float]:
    """The headline figures of one component's deltas."""

    def total(prefix: str) -> float:
        return sum(v for k, v in d.items() if k.startswith(prefix))

    return {
        "cpu_seconds": total("process_cpu_seconds_total"),
        "rss_bytes": total("process_resident_memory_bytes"),
        "rss_growth_bytes": total(CHANGE + "process_resident_memory_bytes"),
        "schedule_attempts": total("scheduler_schedule_attempts_total"),
        "dynamic_resources_seconds": total("scheduler_plugin_execution_duration_seconds_sum"),
        "dra_filter_calls": total(DRA_FILTER_CALLS),
        "api_requests": total("apiserver_request_total"),
    }
