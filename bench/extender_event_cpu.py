"""The extender's CPU per watch event spent processing it, apart from reading it off the wire.

On a running local cluster (`testbed --name C up`) with the demo's mixed fleet (applied here,
idempotently): lists every kind the extender watches into a fresh store, captures the
ResourceClaim watch from that list on while loadgen runs the demo's extender workload
(`--pods N`, one GPU per pod, through the plain second scheduler, so no extender runs), then
feeds the captured events, re-encoded as the compact JSON lines the API server sends, through
the extender's own event decoding and cache (`Store.feed`), and prints the CPU per event
(`time.process_time`): once decoding only, once decoding and the cache.

Set against the watching cost in a running extender, the `off` arm of the experiment
`examples/experiments/extender-cpu.yaml` (its extender CPU per pod, the same workload), the
difference is what reading the events costs in the running process: the socket, TLS, HTTP
chunking and the event loop's wake-ups, on a machine the control plane keeps busy.

    .venv/bin/python bench/extender_event_cpu.py --cluster C [--nodes 1000] [--pods 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import (  # bench/ is on sys.path
    add_cluster_flags,
    apply_demo_fleet,
    run_arm,
    running_cluster,
    settle,
)

from extender.cache.index import Index
from extender.cache.store import Store
from extender.config import Settings
from testbed.cluster import second_scheduler
from testbed.kube import errors, resources
from testbed.kube.client import Kube, decode_event
from testbed.kube.watching import Change, Snapshot

CLAIMS = "ResourceClaim"


async def listed_store(kube: Kube) -> tuple[Store, str]:
    """A store holding what every extender watch lists now, every node summarised (as the
    extender does once synced); and the claims list's resourceVersion."""
    store = Store(Index(Settings()))
    claims_rv = ""
    for name, watch in store.watches.items():
        got = await kube.list(
            watch.resource, label_selector=watch.label_selector, field_selector=watch.field_selector
        )
        store.feed(name, Snapshot(got.items, got.resource_version))
        if name == CLAIMS:
            claims_rv = got.resource_version
    for view in store.index.nodes.values():
        if view.known:
            store.index.summary(view)
    return store, claims_rv


async def capture(
    kubeconfig: Path, pods: int, work: Path, env: dict[str, str]
) -> tuple[Store, list[bytes]]:
    """The listed store, and the claim events (as JSON lines) of one loadgen run."""
    lines: list[bytes] = []
    closers: set[Callable[[], None]] = set()
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        store, rv = await listed_store(kube)

        async def watch() -> None:
            try:
                async for ev in kube.stream(
                    resources.RESOURCE_CLAIMS, resource_version=rv, closers=closers
                ):
                    if ev.type != "BOOKMARK":
                        doc = {"type": ev.type, "object": ev.object}
                        lines.append(json.dumps(doc, separators=(",", ":")).encode())
            except errors.Unreachable:
                pass  # cut below, once loadgen is done

        task = asyncio.create_task(watch())
        with second_scheduler.running(kubeconfig, work / "plain") as plain:
            await asyncio.to_thread(run_arm, "capture", pods, work / "run", env, plain.name)
        await asyncio.sleep(2)  # the run's last events
        for close in list(closers):
            close()
        await task
    return store, lines


def replay(store: Store, lines: list[bytes]) -> tuple[float, float]:
    """CPU seconds to decode the events, and to decode and apply them to the store."""
    res = resources.RESOURCE_CLAIMS
    started = time.process_time()
    for line in lines:
        decode_event(line, res)
    decode = time.process_time() - started
    started = time.process_time()
    for line in lines:
        ev = decode_event(line, res)
        store.feed(CLAIMS, Change(ev.type, ev.object))  # type: ignore[arg-type]
    return decode, time.process_time() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_cluster_flags(ap, extender_port=False)
    ap.add_argument("--nodes", type=int, default=1000, help="demo fleet size (default 1000)")
    ap.add_argument("--pods", type=int, default=300, help="pods in the run (default 300)")
    args = ap.parse_args()
    if args.nodes < 1 or args.pods < 1:
        ap.error("--nodes and --pods must be at least 1")
    cluster, env = running_cluster(args.cluster)
    config = cluster.config
    work = Path(tempfile.mkdtemp(prefix="extender-event-cpu-"))
    apply_demo_fleet(args.nodes, work, env)
    settle(config.kubeconfig)
    store, lines = asyncio.run(capture(config.kubeconfig, args.pods, work, env))
    settle(config.kubeconfig)
    if not lines:
        sys.exit("no claim events captured")
    decode, total = replay(store, lines)
    n = len(lines)
    print(f"{n} claim events of {args.pods} pods ({n / args.pods:.1f} per pod), {args.nodes} nodes")
    print(f"decode only:           {decode / n * 1e6:6.1f} us CPU per event")
    print(f"decode and the cache:  {total / n * 1e6:6.1f} us CPU per event")
    print(f"per pod:               {total / args.pods * 1e3:6.3f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
