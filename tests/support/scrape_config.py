"""A local cluster's Prometheus scrape configuration, made from the command lines its
components would run with (no cluster): for the configuration's unit tests, and for
promtool's check of it (tests/tools)."""

from __future__ import annotations

from pathlib import Path

from testbed.cluster import prometheus

ARGVS = {
    "etcd": ["/b/etcd", "--listen-client-urls=http://127.0.0.1:32766"],
    "kube-apiserver": ["/b/a", "--bind-address=127.0.0.1", "--secure-port=32764"],
    "kube-controller-manager": ["/b/c", "--bind-address=127.0.0.1", "--secure-port=32763"],
    "kube-scheduler": ["/b/s", "--bind-address=127.0.0.1", "--secure-port=32762"],
    "kwok-controller": ["/b/k", "--server-address=127.0.0.1:32761"],
    "kwok-controller-shard-1": ["/b/k", "--server-address=127.0.0.1:40001"],
    "kube-proxy": ["/b/p", "--secure-port=1"],  # not ours: no job
}
EXTENDER_PORT = 18902
FLEET_PORT = 18903


def config(pki: Path = Path("/c/pki")) -> dict[str, object]:
    """The scrape configuration of `ARGVS`' components, the extender and the fleet service."""
    targets = Path("/c/targets")
    return prometheus.scrape_config(
        ARGVS, pki=pki, extender_port=EXTENDER_PORT, fleet_port=FLEET_PORT, targets=targets
    )
