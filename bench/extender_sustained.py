"""The extender under sustained load: many concurrent clients for a while, at 5,000 nodes.

Serves the fleet of bench/extender_latency.py (default 5,000 `dgx-h100` nodes, 8 GPUs + 8
RDMA NICs each, a random share of devices held by claims, job siblings running) with
`extender serve --from-files` as its own process, then for each case

  filter (with `require-alignment: pcie-root`, the filter's per-node path) and prioritize
  x 500 and 5,000 candidate names (nodeCacheCapable)

runs `--clients` aiohttp clients (each its own connection, each calling back-to-back) for
`--seconds`. Prints per case: client-side p50/p90/p99/max (nearest rank; under many
concurrent clients this includes queueing in the server), calls/s, errors and dropped calls
(non-2xx or connection errors: must be 0), the server's own handler time from its /metrics
histogram (mean, and the bucket bounds of p50/p99) and its count of calls by outcome
(`overloaded` = refused with 503, `deadline` = answered not judged), the kernel's count of
listen-queue overflows during the case (connection attempts dropped before the server saw
them), the server's CPU (cores used) and RSS.

    .venv/bin/python bench/extender_sustained.py [--nodes 5000] [--clients 32] [--procs 1]
        [--seconds 60]

One client process can itself be the limit (its event loop then queues the calls and the
client-side latency is its own); `--procs` spreads the clients over processes.

Targets (issue 4, for one call at a time): p99 <= 2 ms at 500 names, <= 10 ms at 5,000.
Overload (issue 30: `--clients 320 --procs 2`, 10x the clients): no crash, no 5xx but the
counted 503s, RSS flat, p99 of the answered calls within kube-scheduler's 5 s httpTimeout.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import common  # the same fleet, pods and helpers as extender_latency (bench/ is on sys.path)

from loadgen import stats
from testbed import runtime
from testbed.cluster import supervision


async def histogram(session: aiohttp.ClientSession, base: str, verb: str) -> dict[str, float]:
    """The server's own timing and outcomes of its `verb` calls so far."""
    async with session.get(f"{base}/metrics") as r:
        return common.request_histogram(await r.text(), verb)


def server_side(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    count = after.get("count", 0) - before.get("count", 0)
    if not count:
        return {"calls": 0}

    def bound(p: float) -> str:
        le = common.bound_holding(before, after, p / 100)
        return "inf" if le == float("inf") else f"{le * 1000:g} ms"

    mean = (after.get("sum", 0) - before.get("sum", 0)) / count
    outcomes = {
        k.split(" ", 1)[1]: int(v - before.get(k, 0))
        for k, v in after.items()
        if k.startswith("outcome ") and v - before.get(k, 0)
    }
    return {
        "calls": int(count),
        "mean_ms": mean * 1000,
        "p50_le": bound(50),
        "p99_le": bound(99),
        "outcomes": outcomes,
    }


def proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds, RSS MiB) of `pid` (0 and NaN once it is gone)."""
    rss = supervision.rss_bytes(pid)
    cpu = supervision.cpu_seconds(pid) or 0.0
    return cpu, rss / 2**20 if rss is not None else float("nan")


Samples = dict[str, list[float]]
"""Per answered call, seconds: `call` from the client's start to the answer read (`first`
and `later`: a client's first call, which opens its connection, and the others), `sent` from
its body's last byte handed to the client's transport to the answer read (without the
client's own queueing before it sends); per new connection, `connect`: the time to open it."""


def samples() -> Samples:
    return {"call": [], "first": [], "later": [], "sent": [], "connect": []}


async def client(
    url: str, bodies: list[bytes], until: float, out: Samples, errors: dict[str, int]
) -> None:
    connector = aiohttp.TCPConnector(limit=1)
    timeout = aiohttp.ClientTimeout(total=30)
    mark = {"sent": 0.0, "connect": 0.0}

    async def sent(*_: object) -> None:
        mark["sent"] = time.perf_counter()

    async def connecting(*_: object) -> None:
        mark["connect"] = time.perf_counter()

    async def connected(*_: object) -> None:
        out["connect"].append(time.perf_counter() - mark["connect"])

    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(sent)
    trace.on_connection_create_start.append(connecting)
    trace.on_connection_create_end.append(connected)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, trace_configs=[trace]
    ) as s:
        i = random.randrange(len(bodies))
        out_of_first = False
        while time.perf_counter() < until:
            body = bodies[i % len(bodies)]
            i += 1
            t0 = time.perf_counter()
            try:
                async with s.post(url, data=body) as r:
                    await r.read()
                    if r.status != 200:
                        errors[f"HTTP {r.status}"] = errors.get(f"HTTP {r.status}", 0) + 1
                        continue
            except (TimeoutError, aiohttp.ClientError) as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                continue
            now = time.perf_counter()
            out["call"].append(now - t0)
            out["later" if out_of_first else "first"].append(now - t0)
            out_of_first = True
            out["sent"].append(now - mark["sent"])


# Spawned, not forked: a fork inherits the parent's heap (the 5,000-node fleet it rendered),
# and a client process paying for it (copy-on-write, the garbage collector walking it) stalls
# its clients, which the client-side times would blame on the server.
_SPAWN = multiprocessing.get_context("spawn")


async def client_pool(procs: int) -> concurrent.futures.ProcessPoolExecutor:
    """`procs` client processes, started (imports done) before any case measures."""
    pool = concurrent.futures.ProcessPoolExecutor(procs, mp_context=_SPAWN)
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(pool, time.sleep, 1.0) for _ in range(procs)))
    return pool


def client_process(
    url: str, bodies: list[bytes], until: float, clients: int
) -> tuple[Samples, dict[str, int]]:
    """`clients` clients in a process of their own (perf_counter is system-wide on Linux)."""
    out = samples()
    errors: dict[str, int] = {}

    async def run() -> None:
        await asyncio.gather(*(client(url, bodies, until, out, errors) for _ in range(clients)))

    asyncio.run(run())
    return out, errors


async def case(
    base: str,
    verb: str,
    bodies: list[bytes],
    clients: int,
    seconds: float,
    pid: int,
    pool: concurrent.futures.ProcessPoolExecutor | None,
) -> dict[str, Any]:
    url = f"{base}/{verb}"
    async with aiohttp.ClientSession() as s:
        for body in bodies[:5]:  # warm-up: summaries and score memos
            async with s.post(url, data=body) as r:
                await r.read()
        hist0 = await histogram(s, base, verb)
        cpu0, _ = proc_stats(pid)
        overflows0 = supervision.listen_overflows()
        got = samples()
        errors: dict[str, int] = {}
        started = time.perf_counter()
        until = started + seconds
        if pool is None:
            await asyncio.gather(*(client(url, bodies, until, got, errors) for _ in range(clients)))
        else:  # spread the clients over processes, so that one client loop is not the limit
            loop = asyncio.get_running_loop()
            procs = pool._max_workers
            shares = [clients // procs + (i < clients % procs) for i in range(procs)]
            parts = await asyncio.gather(
                *(loop.run_in_executor(pool, client_process, url, bodies, until, n) for n in shares)
            )
            for part, part_errors in parts:
                for kind, values in part.items():
                    got[kind] += values
                for k, v in part_errors.items():
                    errors[k] = errors.get(k, 0) + v
        wall = time.perf_counter() - started
        overflows = supervision.listen_overflows() - overflows0
        cpu1, rss = proc_stats(pid)
        hist1 = await histogram(s, base, verb)
    times = sorted(got["call"])
    first, later = sorted(got["first"]), sorted(got["later"])
    after_sent = sorted(got["sent"])
    connects = sorted(got["connect"])
    return {
        "calls": len(times),
        "calls_per_s": len(times) / wall,
        "p50_ms": 1000 * stats.percentile(times, 50),
        "p90_ms": 1000 * stats.percentile(times, 90),
        "p99_ms": 1000 * stats.percentile(times, 99),
        "max_ms": 1000 * times[-1],
        "first_p99_ms": 1000 * stats.percentile(first, 99),
        "later_p99_ms": 1000 * stats.percentile(later, 99) if later else 0.0,
        "sent_p99_ms": 1000 * stats.percentile(after_sent, 99),
        "sent_max_ms": 1000 * after_sent[-1],
        "connects": len(connects),
        "connect_max_ms": 1000 * connects[-1] if connects else 0.0,
        "errors": errors,
        # The in-flight cap's 503s are the extender refusing load on purpose (counted by it);
        # anything else is a dropped call.
        "overloaded_503": errors.get("HTTP 503", 0),
        "dropped": sum(v for k, v in errors.items() if k != "HTTP 503"),
        "server": server_side(hist0, hist1),
        "listen_overflows": overflows,
        "server_cores": (cpu1 - cpu0) / wall,
        "server_rss_mib": rss,
        "load": os.getloadavg()[0],
    }


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--clients", type=int, default=32, help="concurrent clients per case")
    ap.add_argument("--seconds", type=float, default=60.0, help="duration of each case")
    ap.add_argument("--procs", type=int, default=1, help="client processes sharing --clients")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write results here too")
    ns = ap.parse_args()

    objs, names = common.build_objects(ns.nodes, ns.seed)
    rng = random.Random(ns.seed)
    results: dict[str, Any] = {}
    pool = await client_pool(ns.procs) if ns.procs > 1 else None
    try:
        async with common.serving_files(objs) as (base, pid):
            _, rss = proc_stats(pid)
            print(
                f"{ns.nodes} nodes served, RSS {rss:.0f} MiB; {ns.clients} clients in "
                f"{ns.procs} process(es) x "
                f"{ns.seconds:g}s per case; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            for size in (500, len(names)):
                for verb in ("filter", "prioritize"):
                    pod = common.pod(require_alignment=verb == "filter")
                    bodies = [
                        json.dumps(
                            {
                                "Pod": pod,
                                "Nodes": None,
                                "NodeNames": rng.sample(names, size)
                                if size < len(names)
                                else names,
                            }
                        ).encode()
                        for _ in range(8 if size < len(names) else 1)
                    ]
                    name = f"{verb}{'+required' if verb == 'filter' else ''}@{size}"
                    res = await case(base, verb, bodies, ns.clients, ns.seconds, pid, pool)
                    results[name] = res
                    srv = res["server"]
                    print(
                        f"{name:22s} client p50 {res['p50_ms']:6.2f}  p90 {res['p90_ms']:6.2f}  "
                        f"p99 {res['p99_ms']:6.2f}  max {res['max_ms']:7.2f} ms (p99 of first "
                        f"calls {res['first_p99_ms']:.2f}, of later ones "
                        f"{res['later_p99_ms']:.2f}; from sent: p99 "
                        f"{res['sent_p99_ms']:.2f} max {res['sent_max_ms']:.2f} ms; "
                        f"{res['connects']} connects, slowest {res['connect_max_ms']:.0f} ms) | "
                        f"{res['calls_per_s']:5.0f} calls/s, {res['calls']} calls, dropped "
                        f"{res['dropped']} {res['errors'] or ''}| server handler mean "
                        f"{srv.get('mean_ms', 0):.2f} ms (p50 <= {srv.get('p50_le')}, p99 <= "
                        f"{srv.get('p99_le')}), outcomes {srv.get('outcomes')}, listen overflows "
                        f"{res['listen_overflows']}, server CPU {res['server_cores']:.2f} cores, "
                        f"RSS {res['server_rss_mib']:.0f} MiB, load {res['load']:.1f}",
                        flush=True,
                    )
    finally:
        if pool is not None:
            pool.shutdown()
    if ns.json:
        out = {"nodes": ns.nodes, "clients": ns.clients, "seconds": ns.seconds, "results": results}
        await asyncio.to_thread(Path(ns.json).write_text, json.dumps(out, indent=2))
    dropped = sum(r["dropped"] for r in results.values())
    print(f"dropped in all cases: {dropped}")
    return 0 if dropped == 0 else 1


if __name__ == "__main__":
    sys.exit(runtime.run(main()))
