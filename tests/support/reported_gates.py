"""Each gated component's feature gates as the component itself reports them
(`kubernetes_feature_enabled` on its /metrics), for the tests that check what a local cluster
really runs with."""

from __future__ import annotations

import ssl
import subprocess
import urllib.request

from testbed.cluster import feature_gates as fg
from testbed.cluster import local

GATED = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def reported_gates(cluster: local.LocalCluster) -> dict[str, dict[str, bool]]:
    """Each gated component's gates, from its own /metrics (the API server's through the
    admin kubeconfig; the others allow /metrics on their loopback secure port)."""
    out = {}
    kubectl = cluster.binaries()["kubectl"]
    api = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster.config.kubeconfig), "get", "--raw", "/metrics"],
        capture_output=True,
        text=True,
        check=True,
    )
    out["kube-apiserver"] = fg.enabled_in(api.stdout)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    for name in GATED[1:]:
        port = cluster.component_flag(name, "secure-port")
        assert port, f"{name} is not running"
        url = f"https://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
            out[name] = fg.enabled_in(r.read().decode())
    return out
