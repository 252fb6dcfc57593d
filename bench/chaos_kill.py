"""Chaos benchmark: SIGKILL `loadgen`, `fleet apply` and the extender mid-run, converge, and
count what was left behind and which runs were harmed.

Each repetition, on one local cluster:

- a *witness* `loadgen` run (never killed, `--keep`) measures its pods on a stable fleet W;
- three actors run beside it, each from its own seeded plan (`--seed`, repetition, target):
  - loadgen: 1..`--max-kills` runs on the chaos fleet C, each SIGKILLed a random moment
    after its first pod exists; then `loadgen cleanup --abandoned` once they look dead, and
    a restarted run on W that must finish;
  - fleet: 1..`--max-kills` `fleet apply` of C to a random other size (3, 5 or 7 nodes,
    slowed by `--qps` so the writes take a while), each SIGKILLed a random moment after its
    first change is seen; then `fleet apply` of C's size for this repetition (alternately
    3 and 5) to convergence;
  - extender: `extender serve` on the cluster's extender port, SIGKILLed 1..`--max-kills`
    times at random moments while the witness schedules, each time restarted until /readyz
    answers 200;
  - control plane (with `--control-plane`): 1..`--max-kills` times a random one of
    kube-scheduler, etcd and kube-apiserver SIGKILLed while the witness runs, then
    `testbed up` (LocalCluster.up) repairs the cluster.

Then it checks, through the public client: no loadgen namespace, pod, ResourceClaim or
ResourceClaimTemplate left; the fleets' Nodes and ResourceSlices exactly what `fleet render`
gives for W and C (no stray node, no missing or duplicate slice), and `fleet status` says
both are complete; and no run harmed: the witness and the restarted run exit 0 with every
pod measured, and the witness's namespace was never deleted or replaced under it.

    .venv/bin/python bench/chaos_kill.py --cluster NAME --extender-port PORT --repetitions 20

Needs the local cluster (`testbed --name NAME up`) with no extender serving on its port
(this script runs the extender); it makes its own fleets and deletes them at the end (also
on Ctrl-C). Every wait is bounded; only loopback traffic. Exit 0 when every repetition was
clean and harmless, 1 otherwise; the summary goes to stdout and, with `--json`, to a file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import sys
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import add_cluster_flags, running_cluster, tool  # bench/ is on sys.path

from testbed import runtime, vocab
from testbed.cluster import local, ports, supervision
from testbed.kube import errors, resources
from testbed.kube.client import ClientSettings, Kube

TARGETS = ("loadgen", "fleet", "extender")
CONTROL_PLANE = ("kube-scheduler", "etcd", "kube-apiserver")
"""What the control-plane actor kills (with `--control-plane`)."""
LOADGEN_MANAGED = f"{vocab.LABEL_MANAGED_BY}=dra-testbed-loadgen"
FLEET_MANAGED = f"{vocab.LABEL_MANAGED_BY}=dra-testbed-fleet"
CHAOS_SIZES = (3, 5, 7)
"""Sizes a killed `fleet apply` of C aims at; 7 leaves nodes the converged C must remove."""
HEARTBEAT = 1.0
"""Heartbeat of the runs that get killed, so they look abandoned after ~3 s."""


@dataclass
class Settings:
    kubeconfig: str
    extender_port: int
    out: Path
    seed: int
    max_kills: int
    witness_pods: int
    witness_qps: float
    chaos_pods: int
    restart_pods: int
    fleet_qps: float
    witness_nodes: int
    cluster: str | None = None
    """The local cluster whose control plane is killed too (`--control-plane`)."""
    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    children: list[asyncio.subprocess.Process] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": self.kubeconfig}

    @property
    def targets(self) -> tuple[str, ...]:
        return (*TARGETS, "control-plane") if self.cluster else TARGETS

    @property
    def witness_fleet(self) -> str:
        return f"chaos-{self.tag}-w"

    @property
    def chaos_fleet(self) -> str:
        return f"chaos-{self.tag}-c"


def final_size(rep: int) -> int:
    """C's converged size after repetition `rep`: alternates, so every repetition writes."""
    return 5 if rep % 2 == 0 else 3


async def spawn(s: Settings, log: Path, name: str, *args: str) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            tool(name), *args, env=s.env, stdout=out, stderr=out
        )
    s.children.append(proc)
    return proc


async def finish(proc: asyncio.subprocess.Process, within: float) -> int:
    """The child's exit code; SIGKILLed (code -9) if it overruns."""
    try:
        return await asyncio.wait_for(proc.wait(), within)
    except TimeoutError:
        await kill(proc)
        return await proc.wait()


async def run(s: Settings, log: Path, name: str, *args: str, within: float = 300) -> int:
    return await finish(await spawn(s, log, name, *args), within)


async def kill(proc: asyncio.subprocess.Process) -> bool:
    """SIGKILL; True when it landed (the child was still running)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
    return await proc.wait() == -signal.SIGKILL


async def until(check: Any, proc: asyncio.subprocess.Process | None, within: float) -> bool:
    """Poll the async `check` until true, `proc` exits or `within` passes."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(errors.KubeError):
            if await check():
                return True
        if proc is not None and proc.returncode is not None:
            return False
        await asyncio.sleep(0.2)
    return False


def rng(s: Settings, rep: int, target: str) -> random.Random:
    """Each actor's own stream, so concurrency cannot change anyone's plan."""
    return random.Random(f"{s.seed}/{rep}/{target}")


# --- the extender, a child across repetitions -------------------------------------------


class Extender:
    def __init__(self, s: Settings) -> None:
        self.s = s
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        log = self.s.out / f"extender-{self.starts}.log"
        port = str(self.s.extender_port)
        self.proc = await spawn(self.s, log, "extender", "serve", "--port", port)
        url = f"http://127.0.0.1:{self.s.extender_port}/readyz"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.returncode is not None:
                raise SystemExit(f"the extender exited {self.proc.returncode} (log: {log})")
            if await asyncio.to_thread(supervision.answers, url):
                return
            await asyncio.sleep(0.3)
        raise SystemExit(f"the extender was not ready within 120s (log: {log})")

    async def kill(self) -> bool:
        assert self.proc is not None
        return await kill(self.proc)

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await finish(self.proc, 15)


# --- what the cluster should hold ---------------------------------------------------------


RENDERED: dict[tuple[str, int], tuple[set[str], Counter[str]]] = {}


async def rendered(s: Settings, fleet: str, nodes: int) -> tuple[set[str], Counter[str]]:
    """`fleet render`'s Node names and slices (as node/driver) for a dgx-h100 fleet."""
    if (fleet, nodes) not in RENDERED:
        RENDERED[fleet, nodes] = await _render(fleet, nodes)
    return RENDERED[fleet, nodes]


async def _render(fleet: str, nodes: int) -> tuple[set[str], Counter[str]]:
    proc = await asyncio.create_subprocess_exec(
        *(tool("fleet"), "render", "--profile", "dgx-h100", "--nodes", str(nodes)),
        *("--name", fleet, "--format", "json"),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    names, slices = set(), Counter[str]()
    for line in out.decode().splitlines():
        obj = json.loads(line)
        if obj["kind"] == "Node":
            names.add(obj["metadata"]["name"])
        elif obj["kind"] == "ResourceSlice":
            slices[f"{obj['spec']['nodeName']}/{obj['spec']['driver']}"] += 1
    return names, slices


async def leftovers(kube: Kube, s: Settings, sizes: dict[str, int]) -> list[str]:
    """Everything in the cluster that should not be there (empty when clean)."""
    problems = []
    namespaces = (await kube.list(resources.NAMESPACES)).items
    runs = [
        n["metadata"]["name"]
        for n in namespaces
        if n["metadata"]["name"].startswith("loadgen-")
        or (n["metadata"].get("labels") or {}).get(vocab.LABEL_MANAGED_BY) == "dra-testbed-loadgen"
    ]
    if runs:
        problems.append(f"loadgen namespaces left: {', '.join(sorted(runs))}")
    pods = (await kube.list(resources.PODS, label_selector=LOADGEN_MANAGED)).items
    if pods:
        problems.append(f"{len(pods)} loadgen pods left")
    for kind, what in (
        (resources.RESOURCE_CLAIMS, "ResourceClaims"),
        (resources.RESOURCE_CLAIM_TEMPLATES, "ResourceClaimTemplates"),
    ):
        items = (await kube.list(kind)).items
        if items:
            where = sorted({i["metadata"]["namespace"] for i in items})
            problems.append(f"{len(items)} {what} left in {', '.join(where)}")
    nodes = (await kube.list(resources.NODES, label_selector=FLEET_MANAGED)).items
    slices = (await kube.list(resources.RESOURCE_SLICES, label_selector=FLEET_MANAGED)).items
    ours = {(o["metadata"].get("labels") or {}).get(vocab.LABEL_FLEET, "") for o in nodes + slices}
    for fleet in sorted({f for f in ours if f.startswith(f"chaos-{s.tag}-")} - set(sizes)):
        problems.append(f"objects of an unexpected fleet {fleet!r}")
    statuses = await asyncio.gather(*(fleet_status(s, fleet) for fleet in sizes))
    for (fleet, size), status in zip(sizes.items(), statuses, strict=True):
        want_nodes, want_slices = await rendered(s, fleet, size)

        def of(objs: list[dict[str, Any]], fleet: str = fleet) -> list[dict[str, Any]]:
            return [
                o
                for o in objs
                if (o["metadata"].get("labels") or {}).get(vocab.LABEL_FLEET) == fleet
            ]

        have_nodes = {n["metadata"]["name"] for n in of(nodes)}
        have_slices = Counter(f"{x['spec']['nodeName']}/{x['spec']['driver']}" for x in of(slices))
        if stray := have_nodes - want_nodes:
            problems.append(f"fleet {fleet}: stray nodes {sorted(stray)}")
        if missing := want_nodes - have_nodes:
            problems.append(f"fleet {fleet}: missing nodes {sorted(missing)}")
        if have_slices != want_slices:
            extra = sorted((have_slices - want_slices).elements())
            lost = sorted((want_slices - have_slices).elements())
            problems.append(f"fleet {fleet}: slices extra {extra}, missing {lost}")
        if not (status.get("recorded") and status.get("complete")):
            problems.append(f"fleet {fleet}: status not complete: {status}")
    return problems


async def fleet_status(s: Settings, fleet: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        *(tool("fleet"), "status", "--name", fleet, "-o", "json"),
        env=s.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    try:
        status: dict[str, Any] = json.loads(out)
    except ValueError:
        return {"error": f"fleet status exited {proc.returncode}"}
    return status


async def namespace_pods(kube: Kube, run_id: str) -> list[dict[str, Any]]:
    return (await kube.list(resources.PODS, namespace=f"loadgen-{run_id}")).items


def measured(result_file: Path, pods: int) -> str | None:
    """Why a finished run's result is not whole (None when every pod was measured)."""
    try:
        result = json.loads(result_file.read_text())
    except (OSError, ValueError) as e:
        return f"no result: {e}"
    counts = result["counts"]
    startup = (result.get("latency_ms") or {}).get("pod_startup") or {}
    if result.get("interrupted") or result.get("error"):
        return f"interrupted={result.get('interrupted')} error={result.get('error')}"
    if not counts["pods_seen"] == counts["pods_running"] == pods == startup.get("count"):
        return f"counts {counts}, pod_startup measured {startup.get('count')}"
    return None


# --- one repetition -----------------------------------------------------------------------


@dataclass
class Rep:
    rep: int
    planned: dict[str, int] = field(default_factory=dict)
    landed: dict[str, int] = field(default_factory=dict)
    harmed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    incomplete_seen: int = 0
    """Killed applies after which `fleet status` said C was incomplete."""
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds each actor took, the witness from the start, and the final check."""
    components_killed: list[str] = field(default_factory=list)
    """The control-plane components SIGKILLed, in order."""
    repaired: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the control-plane actor is done (or there is none): an operator converges
    after an outage, not into one, so the actors' converging steps wait for it."""


async def timed(r: Rep, name: str, work: Coroutine[Any, Any, None]) -> None:
    started = time.monotonic()
    await work
    r.phases[name] = round(time.monotonic() - started, 1)


def loadgen_args(s: Settings, run_id: str, fleet: str, pods: int, qps: float) -> list[str]:
    return [
        *("run", "pods", f"pods={pods}", "gpus=1", "--run-id", run_id, "-q"),
        *("--node-selector", f"{vocab.LABEL_FLEET}={fleet}", "--qps", f"{qps:g}"),
        *("--timeout", "120s", "--output-dir", str(s.out / run_id)),
    ]


async def loadgen_actor(kube: Kube, s: Settings, rep: int, r: Rep, kills: int) -> None:
    plan = rng(s, rep, "loadgen")
    delays = [plan.uniform(0, 2.0) for _ in range(kills)]
    log = s.out / f"r{rep}-loadgen.log"
    for i, delay in enumerate(delays):
        run_id = f"chaos-{s.tag}-r{rep}-k{i}"
        args = loadgen_args(s, run_id, s.chaos_fleet, s.chaos_pods, 8)
        proc = await spawn(
            s, log, "loadgen", *args, "--allow-unschedulable", "--heartbeat-interval", "1s"
        )

        async def has_pods(run_id: str = run_id) -> bool:
            return bool(await namespace_pods(kube, run_id))

        await until(has_pods, proc, 90)
        await asyncio.sleep(delay)
        r.landed["loadgen"] += await kill(proc)
    # Killed runs stop beating: abandoned after 3 missed beats. Then converge, once the
    # control plane is whole again.
    await asyncio.sleep(3 * HEARTBEAT + 1.5)
    await r.repaired.wait()
    for _ in range(3):
        if await run(s, log, "loadgen", "cleanup", "--abandoned", "--wait", "2m") != 0:
            r.left.append("loadgen cleanup --abandoned failed")
        namespaces = (await kube.list(resources.NAMESPACES)).items
        if not any(
            n["metadata"]["name"].startswith(f"loadgen-chaos-{s.tag}-r{rep}-k") for n in namespaces
        ):
            break
        await asyncio.sleep(2)
    # The restarted run must be whole.
    run_id = f"chaos-{s.tag}-r{rep}-restart"
    args = loadgen_args(s, run_id, s.witness_fleet, s.restart_pods, 8)
    code = await run(s, log, "loadgen", *args, within=300)
    if code != 0:
        r.harmed.append(f"restarted loadgen run exited {code}")
    elif why := measured(s.out / run_id / "result.json", s.restart_pods):
        r.harmed.append(f"restarted loadgen run: {why}")


async def fleet_actor(kube: Kube, s: Settings, rep: int, r: Rep, kills: int) -> None:
    plan = rng(s, rep, "fleet")
    size = final_size(rep - 1)  # where the previous repetition left C
    steps = []
    for _ in range(kills):
        size = plan.choice([n for n in CHAOS_SIZES if n != size])
        steps.append((size, plan.uniform(0, 1.5)))
    log = s.out / f"r{rep}-fleet.log"
    selector = f"{vocab.LABEL_FLEET}={s.chaos_fleet}"

    async def count() -> int:
        return len((await kube.list(resources.NODES, label_selector=selector)).items)

    for target, delay in steps:
        before = await count()
        proc = await spawn(
            s,
            log,
            "fleet",
            *("apply", "--profile", "dgx-h100", "--nodes", str(target)),
            *("--name", s.chaos_fleet, "--qps", f"{s.fleet_qps:g}", "--concurrency", "1"),
        )

        async def changed(before: int = before) -> bool:
            return await count() != before

        await until(changed, proc, 60)
        await asyncio.sleep(delay)
        landed = await kill(proc)
        r.landed["fleet"] += landed
        if landed and not (await fleet_status(s, s.chaos_fleet)).get("complete"):
            r.incomplete_seen += 1
    await r.repaired.wait()
    code = await run(
        s,
        log,
        "fleet",
        *("apply", "--profile", "dgx-h100", "--nodes", str(final_size(rep))),
        *("--name", s.chaos_fleet, "--timeout", "180"),
    )
    if code != 0:
        r.left.append(f"converging fleet apply exited {code}")


async def extender_actor(ext: Extender, s: Settings, rep: int, r: Rep, kills: int) -> None:
    plan = rng(s, rep, "extender")
    for _ in range(kills):
        await asyncio.sleep(plan.uniform(0.5, 8.0))
        r.landed["extender"] += await ext.kill()
        await asyncio.sleep(plan.uniform(0, 2.0))
        await ext.start()


async def control_plane_actor(s: Settings, rep: int, r: Rep, kills: int) -> None:
    """SIGKILL a random control-plane component while the witness runs, then repair the
    cluster as `testbed up` does."""
    assert s.cluster is not None
    cluster = local.LocalCluster(local.ClusterConfig(name=s.cluster, extender_port=s.extender_port))
    plan = rng(s, rep, "control-plane")
    try:
        await _kill_and_repair(cluster, plan, r, kills)
    finally:
        r.repaired.set()


async def _kill_and_repair(
    cluster: local.LocalCluster, plan: random.Random, r: Rep, kills: int
) -> None:
    for _ in range(kills):
        await asyncio.sleep(plan.uniform(1.0, 8.0))
        name = plan.choice(CONTROL_PLANE)
        status = await asyncio.to_thread(cluster.status)
        pid = next((c.pid for c in status.components if c.name == name), None)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                r.landed["control-plane"] += 1
                r.components_killed.append(name)
        await asyncio.sleep(plan.uniform(0, 2.0))
        try:
            await asyncio.to_thread(cluster.up, build=False)
        except local.ClusterError as e:
            r.harmed.append(f"testbed up did not repair the cluster after killing {name}: {e}")
            return


async def guard(kube: Kube, name: str, uid: str, seen: list[str], stop: asyncio.Event) -> None:
    """Note any moment the witness's namespace is deleted, terminating or replaced."""
    while not stop.is_set():
        try:
            ns = await kube.get(resources.NAMESPACES, name)
            if ns["metadata"]["uid"] != uid:
                seen.append("replaced")
            elif ns["metadata"].get("deletionTimestamp"):
                seen.append("terminating")
        except errors.NotFound:
            seen.append("deleted")
        except errors.KubeError:
            pass
        await runtime.wait_set(stop, 0.5)


async def repetition(kube: Kube, s: Settings, ext: Extender, rep: int) -> Rep:
    started = time.monotonic()
    r = Rep(rep)
    counts = rng(s, rep, "kills")
    r.planned = {t: counts.randint(1, s.max_kills) for t in s.targets}
    r.landed = dict.fromkeys(s.targets, 0)
    witness_id = f"chaos-{s.tag}-r{rep}-witness"
    namespace = f"loadgen-{witness_id}"
    args = loadgen_args(s, witness_id, s.witness_fleet, s.witness_pods, s.witness_qps)
    witness = await spawn(s, s.out / f"r{rep}-witness.log", "loadgen", *args, "--keep")

    async def exists() -> bool:
        with contextlib.suppress(errors.NotFound):
            return bool(await kube.get(resources.NAMESPACES, namespace))
        return False

    if not await until(exists, witness, 120):
        r.harmed.append(f"witness never made its namespace (exit {await finish(witness, 10)})")
        return r
    uid = (await kube.get(resources.NAMESPACES, namespace))["metadata"]["uid"]
    seen: list[str] = []
    stop = asyncio.Event()
    watching = asyncio.create_task(guard(kube, namespace, uid, seen, stop))
    if not s.cluster:
        r.repaired.set()
    await asyncio.gather(
        timed(r, "loadgen", loadgen_actor(kube, s, rep, r, r.planned["loadgen"])),
        timed(r, "fleet", fleet_actor(kube, s, rep, r, r.planned["fleet"])),
        timed(r, "extender", extender_actor(ext, s, rep, r, r.planned["extender"])),
        *(
            [timed(r, "control-plane", control_plane_actor(s, rep, r, r.planned["control-plane"]))]
            if s.cluster
            else []
        ),
    )
    code = await finish(witness, 300)
    r.phases["witness"] = round(time.monotonic() - started, 1)
    stop.set()
    await watching
    if code != 0:
        r.harmed.append(f"witness exited {code}")
    elif why := measured(s.out / witness_id / "result.json", s.witness_pods):
        r.harmed.append(f"witness: {why}")
    if seen:
        r.harmed.append(f"witness namespace {sorted(set(seen))} while it ran")
    running = [
        p
        for p in await namespace_pods(kube, witness_id)
        if p.get("status", {}).get("phase") == "Running"
    ]
    if len(running) != s.witness_pods:
        r.harmed.append(f"witness kept {len(running)}/{s.witness_pods} pods Running")
    log = s.out / f"r{rep}-witness.log"
    if await run(s, log, "loadgen", "cleanup", witness_id, "--wait", "2m") != 0:
        r.left.append("loadgen cleanup of the witness failed")
    sizes = {s.witness_fleet: s.witness_nodes, s.chaos_fleet: final_size(rep)}
    checked = time.monotonic()
    r.left.extend(await leftovers(kube, s, sizes))
    r.phases["check"] = round(time.monotonic() - checked, 1)
    r.seconds = round(time.monotonic() - started, 1)
    return r


async def wait_until_clean(kube: Kube, s: Settings, within: float) -> list[str]:
    """What is left in the cluster once it is clean, or once something left is not on its
    way out: runs deleted just before (their namespaces terminating) are waited for, for at
    most `within` seconds, rather than refused."""
    deadline = time.monotonic() + within
    while True:
        problems = await leftovers(kube, s, {})
        if not problems or time.monotonic() > deadline:
            return problems
        namespaces = (await kube.list(resources.NAMESPACES)).items
        runs = [n for n in namespaces if n["metadata"]["name"].startswith("loadgen-")]
        if not runs or not all(n["metadata"].get("deletionTimestamp") for n in runs):
            return problems
        await asyncio.sleep(2)


# --- the whole run ------------------------------------------------------------------------


async def main_async(s: Settings, repetitions: int) -> dict[str, Any]:
    started = time.monotonic()
    reps: list[Rep] = []
    ext = Extender(s)
    async with await Kube.connect(
        kubeconfig=s.kubeconfig, settings=ClientSettings(qps=100, burst=200)
    ) as kube:
        before = await wait_until_clean(kube, s, within=300)
        if before:
            raise SystemExit(f"the cluster is not clean to begin with: {'; '.join(before)}")
        log = s.out / "setup.log"
        try:
            for fleet, nodes in ((s.witness_fleet, s.witness_nodes), (s.chaos_fleet, 3)):
                apply = ("apply", "--profile", "dgx-h100", "--nodes", str(nodes), "--name", fleet)
                if await run(s, log, "fleet", *apply) != 0:
                    raise SystemExit(f"fleet apply of {fleet} failed (log: {log})")
            await ext.start()
            # The first SIGINT/SIGTERM ends the run after the current repetition, which is
            # still converged and checked; the summary then counts the repetitions done.
            stopping = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stopping.set)
            for rep in range(repetitions):
                if stopping.is_set():
                    print(f"stopped after {rep} of {repetitions} repetitions", flush=True)
                    break
                r = await repetition(kube, s, ext, rep)
                reps.append(r)
                print(
                    f"repetition {rep + 1}/{repetitions}: kills {r.landed} of {r.planned}, "
                    f"left {len(r.left)}, harmed {len(r.harmed)}, {r.seconds}s {r.phases}",
                    flush=True,
                )
                for line in r.left + r.harmed:
                    print(f"  {line}", flush=True)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                asyncio.get_running_loop().remove_signal_handler(sig)
            await ext.stop()
            for proc in s.children:  # an interrupted repetition's children
                if proc.returncode is None:
                    await kill(proc)
            # Every run is the bench's own: --force removes one still live after an interrupt.
            await run(s, log, "loadgen", "cleanup", "--all", "--force", "--wait", "2m")
            for fleet in (s.witness_fleet, s.chaos_fleet):
                await run(s, log, "fleet", "delete", "--name", fleet, "--timeout", "300")
        after = await leftovers(kube, s, {})
    landed = {t: sum(r.landed[t] for r in reps) for t in s.targets}
    planned = {t: sum(r.planned[t] for r in reps) for t in s.targets}
    return {
        "repetitions": len(reps),
        "repetitions_asked": repetitions,
        "seed": s.seed,
        "kills_planned": planned,
        "kills_landed_mid_run": landed,
        "components_killed": [c for r in reps for c in r.components_killed],
        "objects_left": sum(len(r.left) for r in reps),
        "runs_harmed": sum(bool(r.harmed) for r in reps),
        "fleet_status_incomplete_after_kill": sum(r.incomplete_seen for r in reps),
        "left_after_teardown": after,
        "wall_seconds": round(time.monotonic() - started, 1),
        "repetition_seconds": [r.seconds for r in reps],
        "phase_seconds_median": {
            k: median([r.phases[k] for r in reps if k in r.phases])
            for k in ("loadgen", "fleet", "extender", "control-plane", "witness", "check")
        },
        "details": [r.__dict__ for r in reps if r.left or r.harmed],
        "settings": {
            "max_kills": s.max_kills,
            "witness_pods": s.witness_pods,
            "witness_qps": s.witness_qps,
            "chaos_pods": s.chaos_pods,
            "restart_pods": s.restart_pods,
            "witness_nodes": s.witness_nodes,
            "chaos_sizes": list(CHAOS_SIZES),
            "fleet_qps": s.fleet_qps,
        },
    }


def median(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_cluster_flags(p)
    p.add_argument("--kubeconfig", help="default: the local cluster's")
    p.add_argument("--repetitions", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-kills", type=int, default=2, help="kills per target and repetition")
    p.add_argument("--witness-pods", type=int, default=20)
    p.add_argument("--witness-qps", type=float, default=2.0, help="slow: it must outlive kills")
    p.add_argument("--chaos-pods", type=int, default=16)
    p.add_argument("--restart-pods", type=int, default=8)
    p.add_argument("--witness-nodes", type=int, default=4)
    p.add_argument("--fleet-qps", type=float, default=4.0, help="of the applies that get killed")
    p.add_argument("--out", type=Path, help="logs and run results (default: a new ./results/ dir)")
    p.add_argument("--json", type=Path, help="also write the summary here")
    p.add_argument(
        "--control-plane",
        action="store_true",
        help="also SIGKILL kube-scheduler, etcd or kube-apiserver of --cluster mid-run, and "
        "repair the cluster as `testbed up` does",
    )
    a = p.parse_args()
    if not (1 <= a.repetitions <= 1000 and 1 <= a.max_kills <= 5):
        p.error("--repetitions 1..1000, --max-kills 1..5")
    if a.witness_pods + a.restart_pods > a.witness_nodes * 8:
        p.error("the witness fleet must hold the witness and the restarted run (8 GPUs a node)")
    kubeconfig = a.kubeconfig
    if kubeconfig is None:
        kubeconfig = str(running_cluster(a.cluster)[0].config.kubeconfig)
    if ports.in_use(a.extender_port):
        raise SystemExit(f"something already listens on 127.0.0.1:{a.extender_port}: stop it")
    out = a.out or Path("results") / f"chaos-kill-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
    out.mkdir(parents=True, exist_ok=True)
    s = Settings(
        kubeconfig=kubeconfig,
        extender_port=a.extender_port,
        out=out.resolve(),
        seed=a.seed,
        max_kills=a.max_kills,
        witness_pods=a.witness_pods,
        witness_qps=a.witness_qps,
        chaos_pods=a.chaos_pods,
        restart_pods=a.restart_pods,
        fleet_qps=a.fleet_qps,
        witness_nodes=a.witness_nodes,
        cluster=a.cluster if a.control_plane else None,
    )
    summary = asyncio.run(main_async(s, a.repetitions))
    summary["command"] = " ".join(["bench/chaos_kill.py", *sys.argv[1:]])
    text = json.dumps(summary, indent=2)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    clean = not summary["objects_left"] and not summary["runs_harmed"]
    sys.exit(0 if clean and not summary["left_after_teardown"] else 1)


if __name__ == "__main__":
    main()
