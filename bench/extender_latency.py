"""Extender handler latency at scale, through a real HTTP client against the running server.

Renders a fleet (default 5,000 `dgx-h100` nodes: 8 GPUs + 8 RDMA NICs each) with the fleet's
renderer, allocates a random share of each node's devices with ResourceClaims (so node states
differ, the realistic case for the index), starts `extender serve --from-files` as its own
process (one core), then times kube-scheduler-shaped calls from this process:

  filter / prioritize  x  500 and all candidate names (nodeCacheCapable)

for a pod asking 8 GPU+RDMA-NIC pairs whose job siblings already run (every term active), and
a filter with `require-alignment: pcie-root` (the filter's per-node path). Sequential calls give
the round-trip percentiles (nearest rank) and calls/s; the server's own latency histogram
gives a bound on the handler's p99 (the smallest bucket holding 99 % of the calls: the time
inside the handler, without the client's or the HTTP stack's); the server's CPU time per call
(from /proc) gives the calls per CPU-second one core sustains, which a busy machine does not
skew.

    .venv/bin/python bench/extender_latency.py [--nodes 5000] [--calls 2000] [--json out.json]
        [--cel-classes]

`--cel-classes` replaces the fleet's DeviceClasses by ones that select with capacity and
semver comparisons (as real drivers' classes do), not only `device.driver ==`.

Targets (issue 4): p99 <= 2 ms at 500 names, <= 10 ms at 5,000; >= 1,000 calls/s on one core.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from fleet.render import render_profile
from testbed import vocab
from testbed.cluster import ports, processes

NS = "bench"


def _claims(nodes: list[str], rng: random.Random) -> list[dict[str, Any]]:
    """One claim per node holding a random subset of its GPUs and NICs (0..8 of each)."""
    out = []
    for name in nodes:
        gpus = rng.sample(range(8), rng.randint(0, 8))
        nics = rng.sample(range(8), rng.randint(0, len(gpus)))
        if not gpus:
            continue
        results = [
            {"request": "g", "driver": vocab.GPU_DRIVER, "pool": name, "device": f"gpu-{i}"}
            for i in gpus
        ]
        out.append(
            {
                "apiVersion": vocab.RESOURCE_API_VERSION,
                "kind": "ResourceClaim",
                "metadata": {"name": f"busy-{name}", "namespace": NS},
                "spec": {"devices": {"requests": []}},
                "status": {"allocation": {"devices": {"results": results}}},
                "_nics": nics,
            }
        )
    return out


def _nic_names(slices: list[dict[str, Any]]) -> dict[str, list[str]]:
    by_node: dict[str, list[str]] = {}
    for s in slices:
        if s["spec"]["driver"] == vocab.NIC_DRIVER:
            by_node[s["spec"]["nodeName"]] = [d["name"] for d in s["spec"]["devices"]]
    return by_node


CEL_CLASSES = {
    vocab.CLASS_GPU: (
        f"device.driver == '{vocab.GPU_DRIVER}' && "
        f"device.capacity['{vocab.GPU_DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0 && "
        f"device.attributes['{vocab.GPU_DRIVER}'].driverVersion.isGreaterThan(semver('535.0.0'))"
    ),
    vocab.CLASS_NIC: f"device.driver == '{vocab.NIC_DRIVER}'",
    vocab.CLASS_RDMA_NIC: (
        f"device.driver == '{vocab.NIC_DRIVER}' && device.attributes['{vocab.NIC_DRIVER}'].rdma "
        f"&& device.attributes['{vocab.NIC_DRIVER}'].mtu >= 4096"
    ),
}


def build_objects(
    nodes: int, seed: int, cel_classes: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    rendered = render_profile("dgx-h100", nodes, name="bench", seed=seed)
    if cel_classes:
        for cls in rendered.device_classes:
            expr = CEL_CLASSES.get(cls["metadata"]["name"])
            if expr is not None:
                cls["spec"]["selectors"] = [{"cel": {"expression": expr}}]
    names = [n["metadata"]["name"] for n in rendered.nodes]
    rng = random.Random(seed)
    nic_names = _nic_names(rendered.slices)
    claims = _claims(names, rng)
    for c in claims:
        node = c["metadata"]["name"].removeprefix("busy-")
        for i in c.pop("_nics"):
            c["status"]["allocation"]["devices"]["results"].append(
                {
                    "request": "n",
                    "driver": vocab.NIC_DRIVER,
                    "pool": node,
                    "device": nic_names[node][i],
                }
            )
    pairs = 8
    requests = [
        {"name": f"gpu-{i}", "exactly": {"deviceClassName": vocab.CLASS_GPU}} for i in range(pairs)
    ] + [
        {"name": f"nic-{i}", "exactly": {"deviceClassName": vocab.CLASS_RDMA_NIC}}
        for i in range(pairs)
    ]
    template = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "pairs", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": requests}}},
    }
    siblings = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"sib-{i}",
                "namespace": NS,
                "labels": {vocab.LABEL_JOB_NAME: "train"},
            },
            "spec": {"nodeName": names[i * 97 % len(names)]},
            "status": {"phase": "Running"},
        }
        for i in range(8)
    ]
    objs = [*rendered.objects(), *claims, template, *siblings]
    return objs, names


def pod(require_alignment: bool) -> dict[str, Any]:
    annotations = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"} if require_alignment else {}
    return {
        "metadata": {
            "name": "p",
            "namespace": NS,
            "uid": "u",
            "labels": {vocab.LABEL_JOB_NAME: "train"},
            "annotations": annotations,
        },
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {}}],
            "resourceClaims": [{"name": "pairs", "resourceClaimTemplateName": "pairs"}],
        },
        "status": {},
    }


CASES = (("filter", False), ("filter", True), ("prioritize", False))


def nearest_rank(sorted_values: list[float], p: float) -> float:
    return sorted_values[max(0, math.ceil(len(sorted_values) * p / 100) - 1)]


async def handler_seconds(
    session: aiohttp.ClientSession, base: str, verb: str
) -> tuple[float, dict[float, float]]:
    """Time the server spent inside its `verb` handler so far, and its calls by latency
    bucket (cumulative, upper bound in seconds), from its own metrics."""
    async with session.get(f"{base}/metrics") as r:
        text = await r.text()
    total = 0.0
    buckets: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith("extender_request_duration_seconds") or f'verb="{verb}"' not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("extender_request_duration_seconds_sum"):
            total = float(value)
        elif (le := _LE.search(name)) is not None:
            buckets[float(le.group(1))] = float(value)
    return total, buckets


_LE = re.compile(r'le="([^"]+)"')


def bucket_p99(before: dict[float, float], after: dict[float, float]) -> float:
    """The smallest histogram bound that holds 99 % of the calls between two scrapes: the
    handler's p99 is at most this (the server's own timing, without the client's or the
    HTTP stack's time)."""
    counts = {le: after[le] - before.get(le, 0.0) for le in after}
    total = counts.get(math.inf, 0.0)
    for le in sorted(counts):
        if total and counts[le] >= 0.99 * total:
            return le
    return math.inf


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (Linux /proc): contention-free cost per call."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    session: aiohttp.ClientSession, base: str, verb: str, body: bytes, calls: int, pid: int
) -> dict[str, float]:
    url = f"{base}/{verb}"
    for _ in range(min(50, calls)):  # warm-up: connection, summaries, caches
        async with session.post(url, data=body) as r:
            await r.read()
    times = []
    inside, buckets = await handler_seconds(session, base, verb)
    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    for _ in range(calls):
        t0 = time.perf_counter()
        async with session.post(url, data=body) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"{url}: HTTP {r.status}")
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu
    inside_after, buckets_after = await handler_seconds(session, base, verb)
    inside = inside_after - inside
    times.sort()
    return {
        "calls": calls,
        "p50_ms": 1000 * nearest_rank(times, 50),
        "p90_ms": 1000 * nearest_rank(times, 90),
        "p99_ms": 1000 * nearest_rank(times, 99),
        "max_ms": 1000 * times[-1],
        "calls_per_s": calls / wall,
        "handler_mean_ms": 1000 * inside / calls,
        "handler_p99_at_most_ms": 1000 * bucket_p99(buckets, buckets_after),
        "server_cpu_ms_per_call": 1000 * cpu / calls,
        "calls_per_cpu_s": calls / cpu if cpu else float("inf"),
    }


@contextlib.asynccontextmanager
async def serving(objs: list[dict[str, Any]]) -> AsyncIterator[tuple[str, int]]:
    """`extender serve --from-files` on a free loopback port with `objs`, ready (synced)
    before yielding its base URL and pid; stopped on the way out."""
    port = ports.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps({"kind": "List", "items": objs}))
        argv = [sys.executable, "-c", "from extender.cli import main; main()"]
        argv += ["serve", "--from-files", str(path), "--port", str(port), "--log-level", "warning"]
        # Waits (blocking: nothing else runs yet) until the extender has synced the files.
        log = Path(tmp) / "extender.log"
        with processes.service("the extender", argv, port, log=log, timeout=300) as proc:
            yield f"http://127.0.0.1:{port}", proc.pid


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per case")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write results here too")
    ap.add_argument("--cel-classes", action="store_true", help="classes with capacity+semver")
    ns = ap.parse_args()

    objs, names = build_objects(ns.nodes, ns.seed, ns.cel_classes)
    results: dict[str, dict[str, float]] = {}
    async with serving(objs) as (base, pid), aiohttp.ClientSession() as session:
        rng = random.Random(ns.seed)
        for size in (500, len(names)):
            cands = rng.sample(names, size) if size < len(names) else names
            for verb, required in (
                ("filter", False),
                ("filter", True),
                ("prioritize", False),
            ):
                body = json.dumps(
                    {"Pod": pod(required), "Nodes": None, "NodeNames": cands}
                ).encode()
                case = f"{verb}{'+required' if required else ''}@{size}"
                results[case] = await measure(session, base, verb, body, ns.calls, pid)
                res = results[case]
                print(
                    f"{case:28s} p50 {res['p50_ms']:6.2f} ms  "
                    f"p90 {res['p90_ms']:6.2f} ms  p99 {res['p99_ms']:6.2f} ms  "
                    f"max {res['max_ms']:6.2f} ms  {res['calls_per_s']:7.0f} calls/s  "
                    f"(handler mean {res['handler_mean_ms']:5.2f} ms, "
                    f"p99 <= {res['handler_p99_at_most_ms']:g} ms; server CPU "
                    f"{res['server_cpu_ms_per_call']:5.2f} ms/call = "
                    f"{res['calls_per_cpu_s']:5.0f} calls per CPU-second)",
                    flush=True,
                )
    if ns.json:
        out = json.dumps({"nodes": ns.nodes, "calls": ns.calls, "results": results}, indent=2)
        await asyncio.to_thread(Path(ns.json).write_text, out)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
