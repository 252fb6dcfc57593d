"""Session fixtures: one real local control plane for the whole test session.

The cluster is brought up once (or reused if `testbed up` already runs one, or taken from
$DRA_TESTBED_KUBECONFIG for an existing cluster) and torn down at the end only if this session
created it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from testbed.cluster import local
from testbed.kube.client import ClientSettings, Kube


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[str]:
    if explicit := os.environ.get("DRA_TESTBED_KUBECONFIG"):
        yield explicit
        return
    name = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    cluster = local.LocalCluster(local.ClusterConfig(name=name))
    status, created = cluster.up()
    try:
        yield str(status.kubeconfig)
    finally:
        if created and not os.environ.get("DRA_TESTBED_KEEP_CLUSTER"):
            cluster.down()


@pytest.fixture(scope="session")
async def kube(kubeconfig: str) -> AsyncIterator[Kube]:
    client = await Kube.connect(kubeconfig=kubeconfig, settings=ClientSettings(qps=500, burst=1000))
    try:
        yield client
    finally:
        await client.close()
