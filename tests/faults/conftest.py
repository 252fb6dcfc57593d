"""Fault-test fixtures: the local cluster itself, for the tests that restart its parts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from testbed.cluster import local
from testbed.kube import errors
from testbed.kube.client import Kube
from tests.support.faults import RestartApiServer


@pytest.fixture(scope="session")
def local_cluster(kubeconfig: str, cluster_config: local.ClusterConfig) -> local.LocalCluster:
    """The test session's local cluster (named as tests/conftest.py names it), up."""
    if os.environ.get("DRA_TESTBED_KUBECONFIG"):
        pytest.skip("restarts control-plane processes: needs the local cluster, not a kubeconfig")
    name = cluster_config.name
    cluster = local.LocalCluster(cluster_config)
    if not cluster.status().ready:
        raise AssertionError(f"cluster {name} is not ready (kubeconfig {kubeconfig})")
    return cluster


@pytest.fixture
def restart_apiserver(local_cluster: local.LocalCluster, kube: Kube) -> RestartApiServer:
    """Stop and start kube-apiserver; returns the outage in seconds (from the stop until it
    answers a read from storage again), once the rest of the control plane is seen alive.

    A restart that does not come back fails its own test only: the cluster is repaired
    first, so the session's later tests do not all fail on a cluster left down."""

    async def restart() -> float:
        started = time.monotonic()
        await asyncio.to_thread(local_cluster.restart_component, "kube-apiserver")
        while True:
            # Each probe bounded: a server that accepts but never answers would otherwise hold
            # one for the client's whole request timeout (60 s).
            with contextlib.suppress(errors.KubeError, TimeoutError):
                probe = kube.request("GET", "/api/v1/namespaces/default", retry=False)
                await asyncio.wait_for(probe, 5)
                break
            if time.monotonic() - started > 120:
                # The log goes with the cluster at the session's end: keep its tail here.
                tail = _tail(local_cluster.config.cluster_dir / "logs" / "kube-apiserver.log")
                alive = [c.name for c in local_cluster.status().components if c.pid is not None]
                await asyncio.to_thread(_kill_and_repair, local_cluster)
                raise AssertionError(
                    "kube-apiserver did not come back in 120s; the cluster was repaired for "
                    f"the tests after this one. Running then: {', '.join(alive) or 'nothing'}. "
                    f"The end of its log:\n{tail}"
                )
            await asyncio.sleep(0.1)
        outage = time.monotonic() - started
        dead = [c.name for c in local_cluster.status().components if c.pid is None]
        if dead:
            await asyncio.to_thread(local_cluster.up, build=False)
        assert not dead, f"{', '.join(dead)} did not survive the API server restart"
        return outage

    return restart


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"(unreadable: {e})"


def _kill_and_repair(cluster: local.LocalCluster) -> None:
    """Kill a kube-apiserver that runs but does not answer, then start what is not running
    (`testbed up` on an existing cluster)."""
    pid_file = cluster.config.cluster_dir / "pids" / "kube-apiserver.pid"
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
    cluster.up(build=False)
