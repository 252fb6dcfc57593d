"""Fault: kube-apiserver hangs (SIGSTOP): a stopped process still accepts connections, so
watches go silent rather than fail.

The extender's liveness probe notices within 30 s: /readyz turns 503 and says why, and the
outage is counted. After SIGCONT it is ready again and every kind has been relisted. `fleet
serve` shares the watch layer and turns not ready within the same bound.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from testbed.cluster import local, ports
from tests.support import children

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

DETECT_WITHIN = 30.0
"""What the extender promises: a hung API server shows in /readyz within this many seconds."""


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def _poll_readyz(port: int, status: int, within: float) -> tuple[float, str]:
    """Seconds until /readyz answers `status`, and its body; AssertionError past `within`."""
    started = time.monotonic()
    last: tuple[int, str] = (0, "")
    while time.monotonic() - started < within:
        last = await asyncio.to_thread(_get, port, "/readyz")
        if last[0] == status:
            return time.monotonic() - started, last[1]
        await asyncio.sleep(0.5)
    raise AssertionError(f"/readyz still {last} after {within:.0f}s (wanted {status})")


def _metric(text: str, pattern: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if re.match(pattern, line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _apiserver_pid(cluster: local.LocalCluster) -> int:
    for c in cluster.status().components:
        if c.name == "kube-apiserver" and c.pid is not None:
            return c.pid
    raise AssertionError("kube-apiserver is not running")


async def test_a_hung_api_server_turns_readyz_503_within_30s_and_ready_again_after_sigcont(
    local_cluster: local.LocalCluster, kubeconfig: str, extender_port: int, tmp_path: Path
) -> None:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    log = tmp_path / "extender.log"
    fleet_port = ports.free_port()
    service = children.fleet_service(env, tmp_path / "fleet-serve.log", fleet_port)
    with children.extender(env, log, extender_port), service:
        status, _ = _get(extender_port, "/readyz")
        assert status == 200
        pid = _apiserver_pid(local_cluster)
        os.kill(pid, signal.SIGSTOP)
        try:
            detected, body = await _poll_readyz(extender_port, 503, DETECT_WITHIN + 5)
            fleet_status, fleet_body = _get(fleet_port, "/readyz")
            if fleet_status != 503:  # probes run on their own clocks: give it the same bound
                fleet_detected, fleet_body = await _poll_readyz(fleet_port, 503, DETECT_WITHIN + 5)
                assert fleet_detected <= DETECT_WITHIN
        finally:
            os.kill(pid, signal.SIGCONT)
        assert "not answering" in fleet_body
        await _poll_readyz(fleet_port, 200, 120)
        print(f"hung API server detected after {detected:.1f}s: {body}")
        assert detected <= DETECT_WITHIN
        assert "not answering" in body
        recovered, _ = await _poll_readyz(extender_port, 200, 120)
        print(f"ready again {recovered:.1f}s after SIGCONT")
        _, metrics = _get(extender_port, "/metrics")
        assert _metric(metrics, r"^extender_apiserver_outages_total ") == 1
        # Every watched kind relisted once the server answered again.
        for kind in ("Node", "ResourceSlice", "ResourceClaim", "DeviceClass", "Pod"):
            hung = rf'^extender_watch_restarts_total\{{kind="{kind}",reason="hung"\}}'
            assert _metric(metrics, hung) >= 1, f"{kind} was not relisted"
    dead = [c.name for c in local_cluster.status().components if c.pid is None]
    assert not dead, f"{', '.join(dead)} did not survive the API server's stop"
