"""Which workloads `testbed perf` runs, and what running one takes (pure, given the text of
upstream's files).

- Upstream's DRA workloads, by their scheduler_perf names (`<test case>/<workload>`, e.g.
  `SchedulingWithResourceClaimTemplate/5000pods_500nodes`), read at run time from the
  release's own `performance-config.yaml` files in the Go module cache, run from their
  directory (their template paths are relative to it) with the allocator and topic upstream's
  benchmark function uses for that file. Which workloads exist differs by release (1.35 and
  1.36 name the steady-state ones `SteadyStateClusterResourceClaimTemplate/...`).
- Our fleet's shapes, `fleet/<profile>`: a config of our own in scheduler_perf's schema
  (`schedperf.fleetconfig`), sized by --nodes and --pods.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

import yaml

BENCHMARK: Final = "BenchmarkPerfScheduling"
FLEET_PREFIX: Final = "fleet/"


@dataclass(frozen=True)
class UpstreamFile:
    """One of upstream's DRA workload files, and how its benchmark function runs it."""

    path: str
    """Relative to the release's test/integration/scheduler_perf directory."""
    topic: str
    allocator: str


# As each file's BenchmarkPerfScheduling in upstream's *_test.go beside it (1.35 to 1.37; a
# release without a file has none of its workloads).
UPSTREAM_FILES: Final = (
    UpstreamFile("dra/performance-config.yaml", "dra", "incubating"),
    UpstreamFile(
        "dra/partitionabledevices/performance-config.yaml",
        "dra_partitionabledevices",
        "experimental",
    ),
    UpstreamFile(
        "dra/consumablecapacity/performance-config.yaml", "dra_consumablecapacity", "experimental"
    ),
    UpstreamFile(  # 1.37 on
        "dra/compatibilitygroups/performance-config.yaml",
        "dra_compatibilitygroups",
        "experimental",
    ),
)


@dataclass(frozen=True)
class Selected:
    """A workload resolved for one run: the benchmark's flags and where to run it."""

    name: str
    """As the user named it."""
    benchmark: str
    """`BenchmarkPerfScheduling/<test case>/<workload>`: the items' Name label's prefix."""
    config: str
    """The workload file, relative to `workdir`."""
    workdir: str
    """Upstream's: a directory of the module cache; ours: where the runner renders it."""
    topic: str
    allocator: str
    files: Mapping[str, str] = field(default_factory=dict)
    """Files to write under `workdir` first (our fleet's config and templates)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The workload's parameters (nodes, pods, ...), for the result's scenario."""


class UnknownWorkload(ValueError):
    """A workload name this release does not have; the message names those it has."""


def names_in(config_text: str) -> list[str]:
    """`<test case>/<workload>` of every workload in a scheduler_perf config file."""
    doc = yaml.safe_load(config_text) or []
    out = []
    for tc in doc if isinstance(doc, list) else []:
        for w in tc.get("workloads") or []:
            out.append(f"{tc['name']}/{w['name']}")
    return out


def params_in(config_text: str, name: str) -> dict[str, Any]:
    """The params of workload `name` (`<test case>/<workload>`) in a config file."""
    case, _, workload = name.partition("/")
    for tc in yaml.safe_load(config_text) or []:
        if tc.get("name") != case:
            continue
        for w in tc.get("workloads") or []:
            if w.get("name") == workload:
                return dict(w.get("params") or {})
    return {}


def bench_pattern(benchmark: str) -> str:
    """The `-test.bench` value that selects exactly `benchmark`: Go matches each
    `/`-separated part as an unanchored regular expression, so every part is anchored
    (`5000pods_500nodes` must not also run `5000pods_500nodes_QueueingHintsEnabled`)."""
    return "/".join(f"^{re.escape(part)}$" for part in benchmark.split("/"))


def summary_of(names: Iterable[str]) -> str:
    """`Case/{a,b}, Other/{c}`: every name, grouped by test case, on one line."""
    cases: dict[str, list[str]] = {}
    for n in names:
        case, _, w = n.partition("/")
        cases.setdefault(case, []).append(w)
    return ", ".join(
        f"{c}/{ws[0]}" if len(ws) == 1 else f"{c}/{{{','.join(ws)}}}" for c, ws in cases.items()
    )


def upstream(name: str, upstream_dir: str, configs: Mapping[str, str]) -> Selected | None:
    """`name` among upstream's files (`configs`: UpstreamFile.path -> its text, for the
    files this release has), or None."""
    for f in UPSTREAM_FILES:
        text = configs.get(f.path)
        if text is None or name not in names_in(text):
            continue
        path = PurePosixPath(upstream_dir) / f.path
        return Selected(
            name=name,
            benchmark=f"{BENCHMARK}/{name}",
            config=path.name,
            workdir=str(path.parent),
            topic=f.topic,
            allocator=f.allocator,
            params=params_in(text, name),
        )
    return None


def unknown(name: str, release: str, configs: Mapping[str, str], profiles: Iterable[str]) -> str:
    """The one line for a workload name that is neither upstream's nor a fleet profile."""
    ours = [f"{FLEET_PREFIX}{p}" for p in sorted(profiles)]
    theirs = [n for f in UPSTREAM_FILES if (t := configs.get(f.path)) for n in names_in(t)]
    return (
        f"unknown workload {name!r} for Kubernetes {release}; workloads: "
        f"{', '.join(ours)}, {summary_of(theirs)}"
    )
