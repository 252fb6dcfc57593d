"""Runs sharing a cluster: a taken run id harms nothing, a killed run is found and removed
while a run only cut off (as by a control-plane outage) is not, a demand that cannot fit is
refused before anything is created, other runs' GPUs are reported apart, and pods left
Pending come with the scheduler's reason."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest

from loadgen import templates
from loadgen.report import document
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import children
from tests.support.private_fleet import (
    LOADGEN,
    Fleet,
    loadgen_args,
    namespace_gone,
    run_loadgen,
)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster


async def _running(kube: Kube, run_id: str, pod: str) -> None:
    await wait_for(
        kube,
        r.PODS,
        lambda p: p["metadata"]["name"] == pod and p.get("status", {}).get("phase") == "Running",
        namespace=templates.namespace_name(run_id),
        timeout=60,
    )


async def test_a_taken_run_id_is_refused_and_the_live_run_is_untouched_and_complete(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"live-{fleet.suffix}"
    live = await asyncio.create_subprocess_exec(
        # 30 pods at 1/s: still creating long after its second pod runs, however slowly the
        # second loadgen starts on a loaded machine.
        LOADGEN, "--pods", "30", "--qps", "1",
        *loadgen_args(fleet, kubeconfig, tmp_path / "live", run_id),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await _running(kube, run_id, "pods-000001")
        code, _, err = await run_loadgen(
            "--pods", "2", *loadgen_args(fleet, kubeconfig, tmp_path / "second", run_id)
        )
        assert code == 1, err
        assert f"run id {run_id} is taken" in err and "Traceback" not in err
        # Nor does `cleanup --all` remove a live run (maybe someone else's) without --force.
        code, _, err = await run_loadgen("cleanup", "--all", "--kubeconfig", kubeconfig)
        assert code == 1 and run_id in err and "--all --force" in err, err
        assert not (tmp_path / "second").exists()  # no report measuring the other run's pods
        ns = await kube.get(r.NAMESPACES, templates.namespace_name(run_id))
        assert not ns["metadata"].get("deletionTimestamp")  # the live run's namespace stands
        _, live_err = await asyncio.wait_for(live.communicate(), 120)
    finally:
        await children.reap(live)
    assert live.returncode == 0, live_err.decode()
    doc = document.load(tmp_path / "live" / "result.json")
    assert doc.error is None and doc.counts.pods_running == 30 and doc.cleaned_up
    assert doc.counts.pods_failed == 0
    await namespace_gone(kube, run_id)


async def test_a_killed_run_is_listed_abandoned_and_cleanup_releases_every_claim(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"kill-{fleet.suffix}"
    proc = await asyncio.create_subprocess_exec(
        LOADGEN, "--pods", "30", "--qps", "2", "--heartbeat-interval", "1s",
        *loadgen_args(fleet, kubeconfig, tmp_path / "killed", run_id),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        # The run id comes as soon as its namespace exists, though the output is no terminal
        # (a notice about the fleet may come before it).
        for _ in range(5):
            line = await asyncio.wait_for(proc.stderr.readline(), 30)
            if line.decode().startswith("loadgen: run "):
                break
        assert line.decode() == f"loadgen: run {run_id} (namespace loadgen-{run_id})\n"
        await _running(kube, run_id, "pods-000002")
        code, out, err = await run_loadgen("runs", "--kubeconfig", kubeconfig)
        assert code == 0, err
        assert any(run_id in line and "running" in line for line in out.splitlines()), out
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        await children.reap(proc)
    ns = templates.namespace_name(run_id)
    held = [c for c in (await kube.list(r.RESOURCE_CLAIMS, namespace=ns)).items]
    assert held  # the killed run's claims still hold GPUs

    # Another run on the same fleet is told, and leaves those GPUs out of its figures.
    other = f"after-{fleet.suffix}"
    code, _, err = await run_loadgen(
        "--pods", "2", *loadgen_args(fleet, kubeconfig, tmp_path / "o", other)
    )
    assert code == 0, err
    assert f"held by other namespaces ({ns} " in err
    doc = document.load(tmp_path / "o" / "result.json")
    assert doc.fleet.held_by_others_at_start.get(ns, 0) >= 3
    assert doc.fleet.peak_gpus_allocated == 2

    # Three missed 1 s heartbeats later, the killed run is abandoned.
    for _ in range(30):
        code, out, err = await run_loadgen("runs", "--kubeconfig", kubeconfig)
        line = next(ln for ln in out.splitlines() if run_id in ln)
        if "abandoned" in line:
            break
        await asyncio.sleep(1)
    assert "abandoned" in line, out
    code, _, err = await run_loadgen("cleanup", "--abandoned", "--kubeconfig", kubeconfig)
    assert code == 0, err
    assert f"removed run {run_id}:" in err and "GPUs released" in err
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, ns)
    left = await kube.list(r.RESOURCE_CLAIMS, namespace=ns)
    assert left.items == []
    code, _, err = await run_loadgen("cleanup", run_id, "--kubeconfig", kubeconfig)
    assert code == 0 and "nothing to remove" in err  # idempotent


async def test_a_run_cut_off_for_longer_than_the_stale_limit_is_not_cleaned_up(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    # A control-plane outage longer than three heartbeats makes every live run look
    # abandoned. Here the run is cut off by SIGSTOP until `runs` calls it abandoned; it comes
    # back while `cleanup --abandoned` watches, and must be left alone and finish whole.
    run_id = f"cut-{fleet.suffix}"
    live = await asyncio.create_subprocess_exec(
        LOADGEN, "--pods", "20", "--qps", "1", "--heartbeat-interval", "2s",
        *loadgen_args(fleet, kubeconfig, tmp_path / "cut", run_id),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await _running(kube, run_id, "pods-000001")
        live.send_signal(signal.SIGSTOP)
        for _ in range(30):
            _, out, _ = await run_loadgen("runs", "--kubeconfig", kubeconfig)
            line = next(ln for ln in out.splitlines() if run_id in ln)
            if "abandoned" in line:
                break
            await asyncio.sleep(1)
        assert "abandoned" in line, out
        cleanup = await asyncio.create_subprocess_exec(
            LOADGEN, "cleanup", "--abandoned", "--kubeconfig", kubeconfig,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert cleanup.stderr is not None
        watching = await asyncio.wait_for(cleanup.stderr.readline(), 60)
        assert b"look abandoned: watching their heartbeats" in watching, watching
        live.send_signal(signal.SIGCONT)  # the outage ends
        _, rest = await asyncio.wait_for(cleanup.communicate(), 60)
        assert cleanup.returncode == 0, rest.decode()
        assert f"run {run_id}: its heartbeat came back" in rest.decode()
        ns = await kube.get(r.NAMESPACES, templates.namespace_name(run_id))
        assert not ns["metadata"].get("deletionTimestamp")
        _, live_err = await asyncio.wait_for(live.communicate(), 180)
    finally:
        if live.returncode is None:
            live.send_signal(signal.SIGCONT)
            live.kill()
            await live.wait()
    assert live.returncode == 0, live_err.decode()
    doc = document.load(tmp_path / "cut" / "result.json")
    assert doc.error is None and doc.counts.pods_running == 20 and doc.cleaned_up


async def test_a_demand_beyond_the_free_gpus_exits_two_with_nothing_created(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"over-{fleet.suffix}"
    out = tmp_path / "out"
    code, _, err = await run_loadgen("--pods", "40", *loadgen_args(fleet, kubeconfig, out, run_id))
    assert code == 2, err
    assert "phase pods: needs 40 GPUs at once; the fleet has 32 free" in err
    assert "Traceback" not in err and not out.exists()
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, templates.namespace_name(run_id))


async def test_pods_left_pending_are_reported_with_the_schedulers_reason(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"pend-{fleet.suffix}"
    out = tmp_path / "out"
    code, stdout, err = await run_loadgen(
        "--pods", "34", "--qps", "50", "--timeout", "15s", "--allow-unschedulable",
        *loadgen_args(fleet, kubeconfig, out, run_id),
    )  # fmt: skip
    assert code == 1, err  # 32 of 34 Running when the phase timed out
    result = json.loads((out / "result.json").read_text())
    (group,) = result["pending"]
    assert group["pods"] == 2 and "cannot allocate all claims" in group["reason"]
    assert "2 pods never scheduled:" in stdout and "cannot allocate all claims" in stdout
    await namespace_gone(kube, run_id)
