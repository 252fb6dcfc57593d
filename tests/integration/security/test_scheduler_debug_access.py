"""The local cluster's kube-scheduler serves /debug/pprof to the cluster's admin certificate
only; /metrics stays readable without credentials (loadgen and Prometheus scrape it)."""

from __future__ import annotations

import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from testbed.cluster import local

pytestmark = pytest.mark.cluster


def status(url: str, ctx: ssl.SSLContext) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30, context=ctx) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_scheduler_pprof_needs_the_admin_certificate(
    kubeconfig: str, cluster_config: local.ClusterConfig
) -> None:
    if os.environ.get("DRA_TESTBED_KUBECONFIG"):
        pytest.skip("an existing cluster's scheduler is not ours to configure")
    port = local.LocalCluster(cluster_config).component_flag("kube-scheduler", "secure-port")
    assert port, "the local kube-scheduler's --secure-port"
    base = f"https://127.0.0.1:{port}"

    anonymous = ssl.create_default_context()
    anonymous.check_hostname = False
    anonymous.verify_mode = ssl.CERT_NONE
    admin = ssl.create_default_context()
    admin.check_hostname = False
    admin.verify_mode = ssl.CERT_NONE
    pki = Path(cluster_config.cluster_dir) / "pki"
    admin.load_cert_chain(pki / "admin.crt", pki / "admin.key")

    assert status(f"{base}/debug/pprof/", anonymous) == 403
    assert status(f"{base}/debug/pprof/", admin) == 200
    assert status(f"{base}/metrics", anonymous) == 200
