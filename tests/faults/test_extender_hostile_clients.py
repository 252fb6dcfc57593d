"""Fault: hostile clients on the extender's port while the real kube-scheduler calls it.

Bodies that trickle, connections that never finish their request head, connections left
idle and a flood of scrapes on the admin port, all on loopback, while the scheduler places
pods that require GPU alignment (so each /filter call judges their claims). Every pod runs,
kube-scheduler never skips the extender (a call unanswered within its 5 s `httpTimeout` or
refused would be logged as skipped), and once the attack ends the extender admits calls and
is ready. No figure is asserted against the clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from testbed import vocab
from testbed.cluster import local, ports, processes
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.faults.test_extender_slow_or_failing import SKIPPED, SchedulerLog, extender_calls
from tests.support import extender_objects as objects
from tests.support import small_world
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BIN = Path(sys.executable).parent
PODS = 4
RECOVERY = 10.0
"""The target: back to normal within this many seconds of the attack ending."""


def _readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return e.code


def _attack(port: int) -> list[socket.socket]:
    """300 connections that never finish their request head, 100 that trickle a body, 100
    left idle after one request: what the hostile-client pass found locking the port."""
    heads = [b"POST /filter HTTP/1.1\r\nHost: x\r\n"] * 300
    bodies = [b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"] * 100
    idle = [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"] * 100
    socks = []
    for first in (*heads, *bodies, *idle):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(first)
        socks.append(sock)
    return socks


async def _calls_once_scrapes_are_admitted(admin: int) -> dict[tuple[str, str], float]:
    """extender_calls, retried while the admin port still refuses scrapes with a 429 (its
    token bucket refills at ADMIN_RATE a second once the flood ends): within RECOVERY."""
    for _ in range(int(RECOVERY * 2)):
        try:
            return await asyncio.to_thread(extender_calls, admin)
        except urllib.error.HTTPError as e:
            if e.code != 429:
                raise
        await asyncio.sleep(0.5)
    return await asyncio.to_thread(extender_calls, admin)


async def _scrape_flood(admin: int, count: int) -> None:
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as s:

        async def scrape() -> None:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with s.get(f"http://127.0.0.1:{admin}/metrics") as resp:
                    await resp.read()

        await asyncio.gather(*(scrape() for _ in range(count)))


async def test_hostile_clients_leave_every_scheduler_call_answered(
    kube: Kube,
    kubeconfig: str,
    extender_port: int,
    local_cluster: local.LocalCluster,
    tmp_path: Path,
) -> None:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    admin = ports.free_port()
    argv = [str(BIN / "extender"), "serve", "--port", str(extender_port)]
    argv += ["--admin-port", str(admin)]
    scheduler_log = SchedulerLog(local_cluster)
    with processes.service("the extender", argv, admin, log=tmp_path / "extender.log", env=env):
        async with small_world.world(kube) as world:
            await small_world.ready_node_with_gpus(kube, world, gpus=8)
            await kube.create(
                r.RESOURCE_CLAIM_TEMPLATES, small_world.claim_template(world, "one-gpu", 1)
            )
            socks = await asyncio.to_thread(_attack, extender_port)
            flood = asyncio.create_task(_scrape_flood(admin, 1000))
            try:
                for i in range(PODS):
                    pod = small_world.pod(world, f"aligned-{i}", "one-gpu")
                    aligned = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"}
                    pod["metadata"]["annotations"] = aligned
                    main = pod["spec"]["containers"][0]
                    main["resources"] = objects.routed_to_filter(main["resources"], aligned)
                    await kube.create(r.PODS, pod)
                for i in range(PODS):
                    await wait_for(
                        kube,
                        r.PODS,
                        lambda p: p.get("status", {}).get("phase") == "Running",
                        name=f"aligned-{i}",
                        namespace=world.namespace,
                        timeout=120,
                    )
            finally:
                for sock in socks:
                    sock.close()
                await flood
            skipped = [ln for ln in scheduler_log.new_lines() if SKIPPED in ln]
            assert not skipped, f"the scheduler skipped the extender: {skipped[:3]}"
            calls = await _calls_once_scrapes_are_admitted(admin)
            assert calls.get(("filter", "ok"), 0) >= PODS, calls
            assert calls.get(("filter", "late"), 0) == 0, calls
            # Back to normal: ready within RECOVERY seconds of the attack ending.
            for _ in range(int(RECOVERY * 2)):
                if await asyncio.to_thread(_readyz, admin) == 200:
                    break
                await asyncio.sleep(0.5)
            assert await asyncio.to_thread(_readyz, admin) == 200
