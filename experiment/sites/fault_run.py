"""A variant's fault made real (`fault_plan`): beside the arm's loadgen run, a thread watches
the arm's pods, SIGKILLs the component when the fault is due, and repairs the site as `testbed
up` does. What became of it is the arm's `fault_plan.Landed`, filled in as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from experiment.measure.fault_plan import Fault, Landed
from experiment.sites.site import Site
from testbed import vocab
from testbed.kube import resources
from testbed.kube.client import Kube
from testbed.kube.watching import Snapshot, informer

POLL_SECONDS = 0.1
"""How often a timed fault (and the end of the arm) is looked at between pod events."""
WATCH_READY_SECONDS = 60.0
"""How long the arm waits for the fault's watch to start before it runs anyway (a watch
that never starts is said in the fault's record)."""


@contextlib.contextmanager
def injected(fault: Fault, site: Site, run_id: str, expected: int) -> Iterator[Landed]:
    """Inject `fault` into loadgen's run `run_id` (`expected` pods) while the block runs
    (the arm's loadgen run); on leaving, a fault not yet due is given up and a repair under
    way is waited for, so the next arm starts on a whole site."""
    landed = Landed(fault, fault.planned(expected))
    stop, watching = threading.Event(), threading.Event()
    thread = threading.Thread(
        target=_inject,
        args=(fault, site, run_id, expected, landed, stop, watching),
        name=f"fault-{fault.kill}",
        daemon=True,
    )
    thread.start()
    # Only once the run's pods are watched: a watch still connecting when they come (on a
    # busy machine, seconds) would count them late and kill after the burst.
    watching.wait(WATCH_READY_SECONDS)
    try:
        yield landed
    finally:
        stop.set()
        thread.join()


def _inject(
    fault: Fault,
    site: Site,
    run_id: str,
    expected: int,
    landed: Landed,
    stop: threading.Event,
    watching: threading.Event,
) -> None:
    # Every failure is a fact of the arm, kept in its record (a thread's exception would
    # otherwise only reach stderr).
    try:
        due = asyncio.run(_wait_due(fault, site.kubeconfig, run_id, expected, stop, watching))
    except Exception as e:
        landed.error = f"watching the arm's pods failed: {e}"
        return
    finally:
        watching.set()
    if due is None:
        landed.error = "the arm ended before the fault came due"
        return
    landed.since_first_pod, landed.bound = due
    killed = time.time()
    try:
        used = site.kill(fault.kill)
    except Exception as e:
        landed.error = f"the kill failed: {e}"
        return
    landed.killed_wall = killed
    # The others' CPU only now: reading every process of the site takes seconds on a busy
    # machine, which the kill must not wait for.
    landed.cpu_at_kill = site.processes_cpu()
    if used is not None:
        landed.cpu_at_kill[fault.kill] = used
    started = time.monotonic()
    try:
        site.repair(fault.kill)
    except Exception as e:
        landed.error = f"the repair failed: {e}"
        return
    landed.repaired_seconds = time.monotonic() - started


async def _wait_due(
    fault: Fault,
    kubeconfig: Path,
    run_id: str,
    expected: int,
    stop: threading.Event,
    watching: threading.Event,
) -> tuple[float, int] | None:
    """(seconds since the run's first pod was seen, pods bound) once `fault` is due; None
    when `stop` is set first. `watching` is set once the pods are listed and watched."""
    selector = f"{vocab.LABEL_RUN}={run_id}"  # every pod loadgen makes carries it
    first: float | None = None
    bound: set[str] = set()

    async def watch(kube: Kube) -> None:
        nonlocal first
        async for ev in informer(kube, resources.PODS, label_selector=selector):
            watching.set()
            for pod in ev.items if isinstance(ev, Snapshot) else [ev.object]:
                if first is None:
                    first = time.monotonic()
                if (pod.get("spec") or {}).get("nodeName"):
                    bound.add(pod["metadata"]["name"])

    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        task = asyncio.create_task(watch(kube), name=f"fault-watch-{run_id}")
        try:
            while not stop.is_set():
                since = None if first is None else time.monotonic() - first
                if fault.due(since_first_pod=since, bound=len(bound), expected=expected):
                    assert since is not None
                    return since, len(bound)
                if task.done():
                    task.result()  # its error, if it failed
                    task = asyncio.create_task(watch(kube))
                await asyncio.sleep(POLL_SECONDS)
            return None
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
