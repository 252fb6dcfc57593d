"""Local clusters tests bring up besides the session's (the gated one, older releases, one
module's own), the tests' clients of a cluster and a namespace of a test's own: made, yielded
and removed, written once."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Iterator

from testbed.cluster import local
from testbed.kube import resources as r
from testbed.kube.client import ClientSettings, Kube

CLIENT_SETTINGS = ClientSettings(qps=500, burst=1000)
"""The tests' client limits: high enough that a test is never throttled by its own client."""


@contextlib.contextmanager
def running(config: local.ClusterConfig, *, build: bool = False) -> Iterator[str]:
    """The local cluster `config`, up (or repaired) for the block; its kubeconfig. Brought down
    afterwards only if the block created it, and not with $DRA_TESTBED_KEEP_CLUSTER set."""
    cluster = local.LocalCluster(config)
    status, created = cluster.up(build=build)
    try:
        yield str(status.kubeconfig)
    finally:
        if created and not os.environ.get("DRA_TESTBED_KEEP_CLUSTER"):
            cluster.down()


@contextlib.asynccontextmanager
async def client(kubeconfig: str) -> AsyncIterator[Kube]:
    """A client of `kubeconfig` with the tests' limits, closed after the block."""
    kube = await Kube.connect(kubeconfig=kubeconfig, settings=CLIENT_SETTINGS)
    try:
        yield kube
    finally:
        await kube.close()


@contextlib.asynccontextmanager
async def namespace(kube: Kube, prefix: str) -> AsyncIterator[str]:
    """A new namespace `<prefix>-<random>` for the block; deleted after it."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    await kube.create(
        r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        yield name
    finally:
        await kube.delete(r.NAMESPACES, name)
