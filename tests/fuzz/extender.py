"""The extender under a fuzzer: N hypothesis-generated HTTP calls against `extender serve`.

Serves a rendered dgx-h100 fleet (plus a claim holding devices, a GPU+NIC pair template and
job siblings: tests/support/extender_fuzz.py) with `extender serve --from-files` as
its own process, then sends `--bodies` generated calls over one keep-alive HTTP connection:
mostly POST /filter and /prioritize with malformed JSON, wrong types at every level of
ExtenderArgs, huge name lists, unknown node names, odd Unicode (lone surrogates, NUL, RTL,
very long strings), nesting past any recursion limit, bodies over the size limit and odd
content types; the rest GET /debug/..., /metrics, /healthz, /readyz and wrong methods/paths.

Every reply is checked (fuzz_strategies.check_reply): never a 5xx, a 400 with a one-line
error for bad input, a well-formed reply that only names the candidates otherwise, unknown
nodes never scored above 0. At the end the server must still be up and serving, and what it
knows (objects per kind, every node's free devices) must equal what it knew at the start.
Prints the status histogram, 5xx and crash counts, the server's RSS at the start, every
10,000 calls and at the end.

    .venv/bin/python -m tests.fuzz.extender --bodies 100000 [--nodes 50] [--workers 3]

Generation (hypothesis) is the costly side, so `--workers` processes generate and send in
parallel, each in fresh hypothesis runs of 2,000 examples with their own seeds.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import multiprocessing
import os
import queue
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from testbed.cluster import ports, supervision
from tests.support import extender_fuzz as fz

LIMIT = 256 * 1024


def rss_mib(pid: int) -> float:
    rss = supervision.rss_bytes(pid)
    return rss / 2**20 if rss is not None else float("nan")


class Client:
    """One keep-alive connection; reconnects when the server closes it (e.g. after a body
    over the limit, which it answers before reading the rest)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.reconnects = 0

    def send(self, call: fz.Call) -> tuple[int, bytes]:
        headers = {} if call.content_type is None else {"Content-Type": call.content_type}
        for attempt in (1, 2):
            try:
                self.conn.request(call.method, call.path, body=call.body or None, headers=headers)
                r = self.conn.getresponse()
                body = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                return r.status, body
            except (ConnectionError, http.client.HTTPException, OSError):
                self.conn.close()
                self.reconnects += 1
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> tuple[int, bytes]:
        return self.send(fz.Call("GET", path, b"", None, None))


def state(client: Client, names: list[str]) -> dict[str, Any]:
    """What the server knows: cached objects per kind and each node's free devices."""
    _, metrics = client.get("/metrics")
    objects = sorted(
        line for line in metrics.decode().splitlines() if line.startswith("extender_cache_objects{")
    )
    free = {n: json.loads(client.get(f"/debug/nodes/{n}/free")[1]) for n in names}
    return {"objects": objects, "free": free}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bodies", type=int, default=100_000, help="generated calls to send")
    ap.add_argument("--nodes", type=int, default=50, help="dgx-h100 nodes the extender serves")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=3, help="generating client processes")
    ns = ap.parse_args()

    objects, names = fz.fleet_objects(ns.nodes)
    known = set(names)
    port = ports.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Path(tmp) / "fleet.json"
        fleet.write_text(json.dumps({"kind": "List", "items": objects}))
        config = Path(tmp) / "config.yaml"
        config.write_text(f"max_body_bytes: {LIMIT}\n")
        log = Path(tmp) / "extender.log"
        argv = [sys.executable, "-c", "from extender.cli import main; main()", "serve"]
        argv += ["--from-files", str(fleet), "--config", str(config), "--port", str(port)]
        argv += ["--debug"]  # its /debug/* paths are fuzzed too
        with log.open("wb") as log_file:
            proc = subprocess.Popen([*argv, "--log-level", "warning"], stderr=log_file)
        try:
            return run(ns, proc, port, names, known, log)
        finally:
            proc.terminate()
            proc.wait()


CHUNK = 2_000
"""Examples per hypothesis run: a fresh engine per chunk keeps generation fast (one engine
slows down as it remembers 100,000 examples)."""


@dataclass
class Tally:
    sent: int = 0
    bytes_sent: int = 0
    transport_errors: int = 0
    reconnects: int = 0
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    problems: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.sent += other.sent
        self.bytes_sent += other.bytes_sent
        self.transport_errors += other.transport_errors
        self.reconnects += other.reconnects
        self.statuses.update(other.statuses)
        self.kinds.update(other.kinds)
        self.problems.update(other.problems)
        for k, v in other.examples.items():
            self.examples.setdefault(k, v)


def worker(
    port: int,
    quota: int,
    seed_base: int,
    names: list[str],
    progress: Any,
    results: Any,
) -> None:
    """Send `quota` generated calls, in hypothesis runs of CHUNK examples each."""
    known = set(names)
    client = Client(port)
    tally = Tally()

    def one(call: fz.Call) -> None:
        if tally.sent >= quota:
            return
        tally.sent += 1
        tally.bytes_sent += len(call.body)
        tally.kinds["POST with a body" if call.method == "POST" and call.body else "other"] += 1
        try:
            status, body = client.send(call)
        except OSError as e:
            tally.transport_errors += 1
            tally.problems["transport error"] += 1
            tally.examples.setdefault("transport error", f"{type(e).__name__}: {e}")
            return
        finally:
            with progress.get_lock():
                progress.value += 1
        tally.statuses[status] += 1
        problem = fz.check_reply(call, status, body, known)
        if problem is not None:
            key = problem.split(":")[0][:60]
            tally.problems[key] += 1
            tally.examples.setdefault(
                key, f"{problem[:200]} <- {call.method} {call.path} {call.body[:120]!r}"
            )

    chunk = 0
    while tally.sent < quota:
        run_chunk = seed(seed_base + chunk)(
            settings(
                max_examples=min(CHUNK, quota - tally.sent),
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(given(call=fz.calls(names, LIMIT))(one))
        )
        before = tally.sent
        run_chunk()
        chunk += 1
        if tally.sent == before:  # hypothesis found nothing new to try: stop, do not spin
            break
    tally.reconnects = client.reconnects
    results.put(tally)


def run(
    ns: argparse.Namespace,
    proc: subprocess.Popen[bytes],
    port: int,
    names: list[str],
    known: set[str],
    log: Path,
) -> int:
    client = Client(port)
    deadline = time.monotonic() + 120
    while True:
        try:
            if client.get("/readyz")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            print("extender did not become ready", file=sys.stderr)
            return 1
        time.sleep(0.1)

    before = state(client, names)
    rss = [(0, rss_mib(proc.pid))]
    print(
        f"serving {len(names)} nodes on :{port}; {ns.workers} generating clients; "
        f"RSS at start {rss[0][1]:.1f} MiB",
        flush=True,
    )
    ctx = multiprocessing.get_context("fork")
    progress = ctx.Value("q", 0)
    results = ctx.Queue()
    quotas = [ns.bodies // ns.workers + (i < ns.bodies % ns.workers) for i in range(ns.workers)]
    workers = [
        ctx.Process(
            target=worker,
            args=(port, q, ns.seed * 1_000_000 + i * 10_000, names, progress, results),
        )
        for i, q in enumerate(quotas)
    ]
    started = time.perf_counter()
    for w in workers:
        w.start()
    tally = Tally()
    pending = len(workers)
    next_mark = 10_000
    while pending:
        try:
            tally.add(results.get(timeout=1))
            pending -= 1
        except queue.Empty:
            pass
        while progress.value >= next_mark:
            rss.append((next_mark, rss_mib(proc.pid)))
            rate = progress.value / (time.perf_counter() - started)
            print(f"  {next_mark:>7} calls  {rate:6.0f}/s  RSS {rss[-1][1]:.1f} MiB", flush=True)
            next_mark += 10_000
        if pending and not any(w.is_alive() for w in workers) and results.empty():
            print("a generating client died", file=sys.stderr)
            break
    for w in workers:
        w.join()
    wall = time.perf_counter() - started
    alive = proc.poll() is None
    healthy = alive and client.get("/healthz")[0] == 200
    after = state(client, names) if alive else None
    rss.append((tally.sent, rss_mib(proc.pid) if alive else float("nan")))
    unexpected = log.read_text(errors="replace").count("unexpected error answering")
    statuses = tally.statuses

    print(
        f"\nbodies sent: {tally.sent} ({tally.bytes_sent / 2**20:.0f} MiB) in {wall:.0f}s "
        f"({tally.sent / wall:.0f} calls/s), load {os.getloadavg()[0]:.2f}"
    )
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.kinds.items())))
    print("status histogram: " + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())))
    print(
        f"5xx: {sum(n for s, n in statuses.items() if s >= 500)}; unexpected errors logged "
        f"by the server: {unexpected}"
    )
    print(
        f"crashes: {0 if alive else 1} (server {'alive' if alive else 'DEAD'}, /healthz "
        f"{'200' if healthy else 'failing'}); transport errors: {tally.transport_errors}; "
        f"reconnects after the server closed: {tally.reconnects}"
    )
    print(
        f"state unchanged (objects per kind, free devices of {len(names)} nodes): {after == before}"
    )
    print("server RSS MiB: " + ", ".join(f"{n}: {m:.1f}" for n, m in rss))
    if tally.problems:
        print("problems:")
        for key, n in tally.problems.most_common():
            print(f"  {n:6d}  {tally.examples[key]}")
    ok = alive and healthy and after == before and not tally.problems and tally.sent == ns.bodies
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
