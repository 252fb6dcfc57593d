"""Fault-test fixtures: the local cluster itself, for the tests that restart its parts."""

from __future__ import annotations

import os

import pytest

from testbed.cluster import local


@pytest.fixture(scope="session")
def local_cluster(kubeconfig: str, extender_port: int) -> local.LocalCluster:
    """The test session's local cluster (named as tests/conftest.py names it), up."""
    if os.environ.get("DRA_TESTBED_KUBECONFIG"):
        pytest.skip("restarts control-plane processes: needs the local cluster, not a kubeconfig")
    name = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    cluster = local.LocalCluster(local.ClusterConfig(name=name, extender_port=extender_port))
    if not cluster.status().ready:
        raise AssertionError(f"cluster {name} is not ready (kubeconfig {kubeconfig})")
    return cluster
