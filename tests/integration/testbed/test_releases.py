"""`testbed up --kubernetes 1.35`: the previous release's binaries, built from its own pinned
wrapper module (cached like the default's), run a healthy cluster with every DRA gate on, and
the real scheduler allocates a claim on it.

The first run builds the 1.35 control plane (about 15 minutes on 2 cores); CI builds it
once ahead of the tests (.ci/run) and keeps it in the binary cache like the default release's.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from testbed.cluster import binaries, local
from testbed.cluster import feature_gates as fg
from testbed.kube.client import Kube
from tests.support import small_world as w
from tests.support.children import testbed as run
from tests.support.reported_gates import reported_gates

RELEASE = "1.35"
# A cold build of the release's binaries happens inside this test when nothing built it first.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(2700)]


def test_the_release_has_its_own_pinned_module() -> None:
    assert RELEASE in binaries.releases() and binaries.DEFAULT_RELEASE in binaries.releases()
    go_mod = Path(__file__).parents[3] / "tools" / "k8s" / f"kubernetes-{RELEASE}" / "go.mod"
    assert f"k8s.io/kubernetes v{RELEASE}." in go_mod.read_text()


def test_up_with_the_previous_release_runs_it_healthy_with_dra_on(tmp_path: Path) -> None:
    home = tmp_path / "state"
    up = run("--name", "prev", "up", "--kubernetes", RELEASE, home=home, timeout=2400)
    assert up.returncode == 0, up.stderr
    try:
        cluster = local.LocalCluster(local.ClusterConfig(name="prev", home=home))
        assert cluster.release() == RELEASE
        assert run("--name", "prev", "status", home=home).returncode == 0
        kubectl = cluster.binaries()["kubectl"]
        version = subprocess.run(
            [
                str(kubectl),
                "--kubeconfig",
                str(cluster.config.kubeconfig),
                "get",
                "--raw",
                "/version",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(version.stdout)["gitVersion"].startswith(f"v{RELEASE}.")
        # Alpha in 1.35 (DRAPartitionableDevices, DRAConsumableCapacity, ...), on all the same.
        for component, gates in reported_gates(cluster).items():
            assert all(gates.get(g) for g in fg.NEEDED), (component, gates)

        # The release is fixed: asking for another is an error that says how.
        other = run("--name", "prev", "up", "--kubernetes", binaries.DEFAULT_RELEASE, home=home)
        assert other.returncode == 1
        assert f"runs Kubernetes {RELEASE}" in other.stderr
        again = run("--name", "prev", "up", home=home)
        assert again.returncode == 0 and "already running" in again.stdout

        # DRA end to end on 1.35: a claim allocated by the real scheduler, the pod Running.
        node = asyncio.run(one_gpu_pod_runs(cluster.config.kubeconfig))
        assert node.startswith("it-node-")
    finally:
        run("--name", "prev", "down", home=home)


async def one_gpu_pod_runs(kubeconfig: Path) -> str:
    """A pod with a one-GPU claim on a fresh kwok node reaches Running; returns its node."""
    kube = await Kube.connect(kubeconfig=str(kubeconfig))
    try:
        async with w.world(kube) as env:
            running = await w.one_gpu_pod_running(kube, env, node_gpus=1)
            return str(running["spec"]["nodeName"])
    finally:
        await kube.close()
