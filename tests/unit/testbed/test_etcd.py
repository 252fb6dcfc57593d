"""etcd helpers: only our own plain-http loopback etcd is ever compacted (no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.cluster import etcd, local


def test_the_first_loopback_http_url_is_used() -> None:
    assert etcd.loopback_url("http://127.0.0.1:32753/,http://10.0.0.1:2379") == (
        "http://127.0.0.1:32753"
    )
    assert etcd.loopback_url("http://[::1]:2379") == "http://[::1]:2379"


@pytest.mark.parametrize("url", ["https://127.0.0.1:2379", "http://10.1.2.3:2379", "unix:///x"])
def test_anything_else_is_refused(url: str) -> None:
    with pytest.raises(local.ClusterError, match="not plain http on loopback"):
        etcd.loopback_url(url)


def test_a_cluster_without_a_running_etcd_is_named(tmp_path: Path) -> None:
    cluster = local.LocalCluster(local.ClusterConfig(name="nope", home=tmp_path))
    with pytest.raises(local.ClusterError, match="etcd of cluster nope is not running"):
        etcd.client_url(cluster)
