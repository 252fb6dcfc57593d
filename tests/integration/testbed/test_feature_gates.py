"""Every feature gate the DRA paths need is on in every component of the real local cluster,
as each component itself reports it (`kubernetes_feature_enabled` on its /metrics), and
`testbed up --feature-gates` adds more to all of them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testbed.cluster import feature_gates as fg
from testbed.cluster import local
from tests.support.children import testbed as run
from tests.support.reported_gates import GATED, reported_gates

pytestmark = pytest.mark.cluster


def test_every_needed_dra_gate_is_on_in_every_component(
    kubeconfig: str, cluster_config: local.ClusterConfig
) -> None:
    name = cluster_config.name
    cluster = local.LocalCluster(local.ClusterConfig(name=name))
    assert str(cluster.config.kubeconfig) == kubeconfig, "this test needs the local cluster"
    reported = reported_gates(cluster)
    assert set(reported) == set(GATED)
    off = {
        component: sorted(g for g in fg.NEEDED if not gates.get(g))
        for component, gates in reported.items()
    }
    assert off == {c: [] for c in GATED}, f"needed gates off (or unknown): {off}"


def test_feature_gates_on_up_reach_every_component_and_are_fixed_at_creation(
    tmp_path: Path,
) -> None:
    home = tmp_path / "state"
    up = run("--name", "gates", "up", "--feature-gates", "DRADeviceTaintRules=true", home=home)
    assert up.returncode == 0, up.stderr
    try:
        cluster = local.LocalCluster(local.ClusterConfig(name="gates", home=home))
        reported = reported_gates(cluster)
        for component in GATED:
            assert reported[component]["DRADeviceTaintRules"] is True, component
            assert all(reported[component][g] for g in fg.NEEDED), component
        # The gate's API is served too (an off-by-default beta API in 1.36).
        kubectl = cluster.binaries()["kubectl"]
        resources = subprocess.run(
            [
                str(kubectl),
                "--kubeconfig",
                str(cluster.config.kubeconfig),
                "api-resources",
                "--api-group=resource.k8s.io",
                "-o",
                "name",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "devicetaintrules.resource.k8s.io" in resources.stdout.split()
        # Asking an existing cluster for other gates is an error that says what to do.
        other = run(
            "--name", "gates", "up", "--feature-gates", "DRAListTypeAttributes=true", home=home
        )
        assert other.returncode == 1
        assert "runs without DRAListTypeAttributes=true" in other.stderr
        assert "testbed --name gates down" in other.stderr
        # The same gates again: nothing to do.
        same = run(
            "--name", "gates", "up", "--feature-gates", "DRADeviceTaintRules=true", home=home
        )
        assert same.returncode == 0 and "already running" in same.stdout
    finally:
        run("--name", "gates", "down", home=home)


def test_a_release_without_a_pinned_module_is_a_one_line_usage_error(tmp_path: Path) -> None:
    proc = run("up", "--kubernetes", "1.20", home=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no pinned module for Kubernetes '1.20'" in lines[0], proc.stderr
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
