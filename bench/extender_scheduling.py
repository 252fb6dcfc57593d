"""Scheduling throughput of the real kube-scheduler with and without the extender.

On the running local cluster (`testbed up`), provisions a small dgx-h100 fleet of its own with
`fleet apply` (unique name, its own nodes; `fleet delete` at the end), then alternates rounds
with `extender serve` listening on 127.0.0.1:8888 (its own process, as deployed, synced before
the round) and with nothing listening there (kube-scheduler's call fails at once and, the
extender being `ignorable`, is skipped: same scheduler, same cluster, no extender work). Each
round creates P pods asking one GPU + one RDMA NIC (loadgen's public templates: its
ResourceClaimTemplate and pod spec), pinned to the bench's nodes, and measures pods/s up to the
last pod seen scheduled (watch receive time). Everything it creates is deleted.

Two ways to start the clock:
- `--hold` (scheduler_perf's view: the scheduler's own rate): the cluster's kube-scheduler is
  paused (SIGSTOP) while the round's pods and their claims are created, and resumed
  (SIGCONT) when all exist; the clock runs from the resume. Creation CPU (the bench, the API
  server, the claim controller) is then outside the measurement in both modes.
- default (end-to-end): from the first create, with creation and scheduling overlapping.

    .venv/bin/python bench/extender_scheduling.py [--nodes 50] [--pods 200] [--rounds 3] [--hold]

Target: throughput with the extender >= 90 % of without. Other workloads on the
shared cluster add noise; rounds alternate the order (on/off, off/on) to spread it evenly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import aiohttp

from experiment import intervals
from loadgen import templates
from loadgen.scenarios.model import Claim, Phase
from testbed import vocab
from testbed.cluster import local, ports, processes, supervision
from testbed.kube import errors, watching
from testbed.kube import resources as r
from testbed.kube.client import ClientSettings, Kube


def fleet_cli(kubeconfig: str | None, *args: str) -> None:
    """`fleet ARGS` as its own process, as a user runs it (apply waits until nodes are Ready)."""
    cmd = [sys.executable, "-c", "from fleet.cli import main; main()", *args]
    if kubeconfig:
        cmd += ["--kubeconfig", kubeconfig]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def pod_phase(pods: int) -> Phase:
    """Each pod asks one GPU and one RDMA NIC (no alignment constraint: any pair will do)."""
    return Phase(name="pods", kind="pods", count=pods, claim=Claim(gpus=1, nics=1, align=False))


@contextlib.contextmanager
def held(pid: int | None) -> Iterator[None]:
    """kube-scheduler paused (SIGSTOP) while inside, resumed on the way out (also on errors).
    Safe here: the local scheduler runs without leader election, so no lease can expire."""
    if pid is None:
        yield
        return
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def all_claims_exist(kube: Kube, namespace: str, count: int) -> None:
    """Wait until the claim controller made one claim per pod (from the template)."""
    seen: set[str] = set()
    async with asyncio.timeout(300):
        async for ev in watching.informer(kube, r.RESOURCE_CLAIMS, namespace=namespace):
            objs = ev.items if isinstance(ev, watching.Snapshot) else [ev.object]
            seen.update(r.name_of(c) for c in objs)
            if len(seen) >= count:
                return


async def one_round(
    kube: Kube, fleet: str, run_id: str, pods: int, scheduler_pid: int | None
) -> float:
    """pods/s up to the last pod seen with a node: from the first create, or, with the
    scheduler held (`scheduler_pid`), from its resume once every pod and claim exists.
    The objects are loadgen's (its public templates), in loadgen's namespace for `run_id`."""
    phase = pod_phase(pods)
    namespace = templates.namespace_name(run_id)
    await kube.create(r.NAMESPACES, templates.namespace(run_id))
    await kube.create(r.RESOURCE_CLAIM_TEMPLATES, templates.claim_template(phase.claim, run_id))
    spec = templates.pod_spec(phase, {vocab.LABEL_FLEET: fleet})
    sem = asyncio.Semaphore(50)

    async def create(i: int) -> None:
        async with sem:
            await kube.create(r.PODS, templates.pod(phase, i, run_id, spec))

    done = asyncio.Event()
    last = 0.0
    bound: set[str] = set()

    async def watch() -> None:
        nonlocal last
        async for ev in watching.informer(kube, r.PODS, namespace=namespace):
            objs = ev.items if isinstance(ev, watching.Snapshot) else [ev.object]
            for p in objs:
                if p.get("spec", {}).get("nodeName") and r.name_of(p) not in bound:
                    bound.add(r.name_of(p))
                    last = time.perf_counter()
            if len(bound) >= pods:
                done.set()
                return

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0.5)  # let the watch start before the first pod exists
    with held(scheduler_pid):
        started = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(pods)))
        if scheduler_pid is not None:
            await all_claims_exist(kube, namespace, pods)
            started = time.perf_counter()
    async with asyncio.timeout(600):
        await done.wait()
    await watcher
    return pods / (last - started)


async def delete_namespace(kube: Kube, namespace: str) -> None:
    await kube.delete(r.NAMESPACES, namespace)
    async with asyncio.timeout(300):
        while True:
            try:
                await kube.get(r.NAMESPACES, namespace)
            except errors.NotFound:
                return
            await asyncio.sleep(0.5)


@contextlib.asynccontextmanager
async def extender(
    kubeconfig: str | None, port: int, *, on: bool
) -> AsyncIterator[Callable[[], Awaitable[dict[str, float]]]]:
    """`extender serve` on 127.0.0.1:`port` while inside (when `on`), ready before yielding;
    yields a function returning its mean handler time per verb (ms) so far."""
    base = f"http://127.0.0.1:{port}"

    async def scrape() -> dict[str, float]:
        if not on:
            return {}
        cpu = (supervision.cpu_seconds(proc.pid) or 0.0) - cpu_before
        async with aiohttp.ClientSession() as s, s.get(f"{base}/metrics") as resp:
            text = await resp.text()
        values: dict[str, float] = {}
        for line in text.splitlines():
            for kind in ("sum", "count"):
                for verb in ("filter", "prioritize"):
                    prefix = f'extender_request_duration_seconds_{kind}{{verb="{verb}"}} '
                    if line.startswith(prefix):
                        values[f"{verb}_{kind}"] = float(line[len(prefix) :])
        out = {
            verb: 1000 * values[f"{verb}_sum"] / values[f"{verb}_count"]
            for verb in ("filter", "prioritize")
            if values.get(f"{verb}_count")
        }
        out["cpu_s"] = cpu
        return out

    if not on:
        yield scrape
        return
    cpu_before = 0.0
    args = ["serve", "--port", str(port), "--log-level", "warning"]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    argv = [sys.executable, "-c", "from extender.cli import main; main()", *args]
    with (
        tempfile.TemporaryDirectory() as tmp,
        processes.service("the extender", argv, port, log=Path(tmp) / "extender.log") as proc,
    ):
        cpu_before = supervision.cpu_seconds(proc.pid) or 0.0
        yield scrape


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kubeconfig")
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--pods", type=int, default=200, help="pods per round (<= 8 x nodes)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each mode")
    ap.add_argument("--json", help="write results here too")
    ap.add_argument(
        "--extender-port",
        type=int,
        default=vocab.EXTENDER_DEFAULT_PORT,
        help="where the cluster's kube-scheduler calls the extender (testbed --extender-port)",
    )
    ap.add_argument(
        "--hold",
        action="store_true",
        help="pause the scheduler while each round's pods are created (scheduler-only rate)",
    )
    ap.add_argument(
        "--cluster",
        default=local.DEFAULT_NAME,
        help="local cluster whose kube-scheduler --hold pauses [%(default)s]",
    )
    ns = ap.parse_args()
    port = ns.extender_port
    scheduler_pid = None
    if ns.hold:
        pid_file = local.ClusterConfig(name=ns.cluster).cluster_dir / "pids" / "kube-scheduler.pid"
        try:
            scheduler_pid = int(pid_file.read_text())
        except (OSError, ValueError):
            ap.error(f"--hold: no kube-scheduler pid for local cluster {ns.cluster!r}")
    if ns.pods > 8 * ns.nodes:
        ap.error("--pods must be at most 8 x --nodes (one GPU each)")
    if ports.in_use(port):
        print(f"error: 127.0.0.1:{port} is busy", file=sys.stderr)
        return 1

    run = secrets.token_hex(3)
    fleet = f"extbench-{run}"
    kube = await Kube.connect(
        kubeconfig=ns.kubeconfig, settings=ClientSettings(qps=1000, burst=2000)
    )
    results: dict[str, list[float]] = {"with": [], "without": []}
    handler_ms: dict[str, list[float]] = {"filter": [], "prioritize": [], "cpu_s": []}
    try:
        print(f"creating {ns.nodes} dgx-h100 nodes (fleet {fleet}) ...", flush=True)
        await asyncio.to_thread(
            fleet_cli, ns.kubeconfig, "apply", "--profile", "dgx-h100", "--nodes", str(ns.nodes),
            "--name", fleet, "--seed", "7",
        )  # fmt: skip
        for i in range(ns.rounds):
            order = ("with", "without") if i % 2 == 0 else ("without", "with")
            for mode in order:
                run_id = f"{run}-{mode}-{i}"
                async with extender(ns.kubeconfig, port, on=mode == "with") as scrape:
                    try:
                        rate = await one_round(kube, fleet, run_id, ns.pods, scheduler_pid)
                    finally:
                        await delete_namespace(kube, templates.namespace_name(run_id))
                    seen = await scrape()
                    for verb, ms in seen.items():
                        handler_ms[verb].append(ms)
                results[mode].append(rate)
                cpu = f"  (extender CPU {seen['cpu_s']:.2f} s)" if "cpu_s" in seen else ""
                print(f"round {i} {mode:8s} extender: {rate:7.1f} pods/s{cpu}", flush=True)
    finally:
        await asyncio.to_thread(fleet_cli, ns.kubeconfig, "delete", "--name", fleet)
        await kube.close()
    for verb in ("filter", "prioritize"):
        if values := handler_ms[verb]:
            mean = statistics.mean(values)
            print(f"extender {verb} handler mean over 'with' rounds: {mean:.3f} ms")
    if cpu_s := handler_ms["cpu_s"]:
        print(f"extender process CPU per 'with' round: {statistics.mean(cpu_s):.2f} s")
    # A round's two modes ran back to back: a round is a pair (the engine's paired method).
    ratio = intervals.ratio_interval(results["with"], results["without"])
    point = f"{ratio.point:.1%} " if ratio is not None else ""
    print(
        f"median: with {intervals.median(results['with']):.1f} pods/s, without "
        f"{intervals.median(results['without']):.1f} pods/s; with / without, paired by round: "
        f"{point}{intervals.describe(ratio, '{:.1%}'.format)}; target >= 90 %: "
        f"{intervals.verdict(ratio, 0.9, at_least=True)}"
    )
    if ns.json:
        out = json.dumps(
            {
                "nodes": ns.nodes,
                "pods": ns.pods,
                "hold": ns.hold,
                "rounds": results,
                "handler_ms": handler_ms,
            },
            indent=2,
        )
        await asyncio.to_thread(Path(ns.json).write_text, out)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
