"""`testbed down` asks who still uses the cluster: a live loadgen run recorded on the cluster
itself (a fresh heartbeat on its namespace) counts, a stale or kept one does not."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator

import pytest

from loadgen import runs
from testbed import vocab
from testbed.cluster import local
from testbed.kube import resources as r
from testbed.kube.client import Kube

pytestmark = pytest.mark.cluster


@pytest.fixture
async def run_namespaces(kube: Kube) -> AsyncIterator[dict[str, str]]:
    """Three loadgen-labelled namespaces: live (fresh heartbeat), stale, kept."""
    suffix = secrets.token_hex(3)
    now = time.time()
    states = {
        "live": runs.ownership("t", now, 10),
        "stale": runs.ownership("t", now - 3600, 10),
        "kept": {**runs.ownership("t", now, 10), vocab.ANNOTATION_LOADGEN_STATE: "kept"},
    }
    names = {state: f"loadgen-inuse-{state}-{suffix}" for state in states}
    labels = {vocab.LABEL_MANAGED_BY: vocab.LOADGEN_MANAGED_BY}
    for state, notes in states.items():
        meta = {"name": names[state], "labels": labels, "annotations": notes}
        await kube.create(r.NAMESPACES, {"metadata": meta})
    try:
        yield names
    finally:
        for name in names.values():
            await kube.delete(r.NAMESPACES, name)


async def test_a_live_loadgen_run_holds_the_cluster_and_a_stale_or_kept_one_does_not(
    kubeconfig: str, cluster_config: local.ClusterConfig, run_namespaces: dict[str, str]
) -> None:
    cluster = local.LocalCluster(cluster_config)
    assert str(cluster.config.kubeconfig) == kubeconfig, "this test needs the local cluster"
    users = cluster.users()
    assert f"loadgen run in namespace {run_namespaces['live']}" in users, users
    assert not [u for u in users if run_namespaces["stale"] in u or run_namespaces["kept"] in u]
