"""The local cluster's etcd over its v3 HTTP/JSON gateway: its revision, and compaction.

Fault tests use compaction to force what a long outage does on a real cluster: every
resourceVersion a client holds becomes too old, so a watch resumed from it gets 410 Gone.
kwokctl runs etcd with plain http on loopback, so the gateway needs neither TLS nor etcdctl.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from testbed.cluster.local import ClusterError, LocalCluster

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def client_url(cluster: LocalCluster) -> str:
    """The first client URL etcd listens on, read from its command line."""
    urls = cluster.component_flag("etcd", "listen-client-urls")
    if not urls:
        raise ClusterError(f"etcd of cluster {cluster.config.name} is not running")
    return loopback_url(urls)


def loopback_url(urls: str) -> str:
    """The first of etcd's comma-separated client URLs, if it is plain http on loopback."""
    url = urls.split(",")[0].strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in _LOOPBACK:
        # Compaction is destructive: only ever on our own plain-http loopback etcd.
        raise ClusterError(f"etcd client URL {url} is not plain http on loopback")
    return url


def _post(url: str, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    req = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out: dict[str, Any] = json.loads(resp.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ClusterError(f"etcd at {url}{path}: {e}") from e
    return out


def revision(url: str, *, timeout: float = 10.0) -> int:
    """etcd's current revision (a Kubernetes resourceVersion is one of these)."""
    # A keys-only range of one key: the smallest request whose header carries the revision.
    out = _post(url, "/v3/kv/range", {"key": "AA==", "limit": 1, "keys_only": True}, timeout)
    return int(out["header"]["revision"])


def compact(url: str, *, timeout: float = 30.0) -> int:
    """Compact etcd to its current revision and return it: afterwards, watching from any
    older revision fails (the API server answers 410 Gone once its watch cache is gone)."""
    rev = revision(url, timeout=timeout)
    out = _post(url, "/v3/kv/compaction", {"revision": str(rev), "physical": True}, timeout)
    if "header" not in out:
        raise ClusterError(f"etcd at {url} did not compact to {rev}: {out}")
    return rev
