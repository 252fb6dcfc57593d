"""The API client's proxy, read once per client: the kubeconfig's, else the environment's."""

from __future__ import annotations

import pytest

from testbed.kube.client import proxy_for

HOST = "https://10.0.0.1:6443"


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_no_proxy_anywhere_means_direct() -> None:
    assert proxy_for(HOST, None, None) == {}


def test_the_environments_https_proxy_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    got = proxy_for(HOST, None, None)
    assert str(got["proxy"]) == "http://proxy.example:3128"


def test_no_proxy_covering_the_host_means_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    assert proxy_for(HOST, None, None) == {}


def test_the_kubeconfigs_proxy_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    got = proxy_for(HOST, "http://kubeconfig.example:8080", {"X-A": "1"})
    assert got == {"proxy": "http://kubeconfig.example:8080", "proxy_headers": {"X-A": "1"}}
