"""Is a control-plane component up: its own process, listening where it should, healthy?

A live pid is not enough. A component whose port another cluster took either exits or, if
it binds late, a probe of "its" port answers for the other cluster. So a component counts as
healthy only when its process is this cluster's, that process itself listens on the port its
command line names, and the health endpoint on that port answers 200.

Pure: where each component serves (from its argv). Thin I/O: which ports a process listens
on (psutil) and the HTTP probe.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import psutil

_WILDCARD = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class Endpoint:
    port: int
    """The loopback port the component must itself listen on."""
    url: str
    """Its health endpoint on that port."""


def flags(argv: Sequence[str]) -> dict[str, str]:
    """`--key=value` arguments as a dict (the last one wins, as for Go's flag package)."""
    out = {}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            out[key] = value
    return out


def _host(address: str) -> str:
    return "127.0.0.1" if address in _WILDCARD else address


def endpoint(component: str, argv: Sequence[str]) -> Endpoint | None:
    """Where `component` (a kwokctl component, a kwok shard controller or the cluster's
    Prometheus) serves health, from its command line (pure); None if it does not say."""
    f = flags(argv)
    try:
        if component == "etcd":
            url = urlsplit(f["listen-client-urls"].split(",")[0].strip())
            return Endpoint(int(url.port or 2379), f"{url.scheme}://{url.netloc}/health")
        if component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            port = int(f["secure-port"])
            path = "/readyz" if component == "kube-apiserver" else "/healthz"
            return Endpoint(port, f"https://{_host(f.get('bind-address', ''))}:{port}{path}")
        if component == "prometheus":
            host, _, prom_port = f["web.listen-address"].rpartition(":")
            return Endpoint(int(prom_port), f"http://{_host(host)}:{prom_port}/-/ready")
        if component.startswith("kwok-controller"):
            host, _, kwok_port = f["server-address"].rpartition(":")
            return Endpoint(int(kwok_port), f"http://{_host(host)}:{kwok_port}/healthz")
    except (KeyError, ValueError):
        return None
    return None


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (empty if it is gone)."""
    try:
        sockets = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return set()
    return {c.laddr.port for c in sockets if c.status == psutil.CONN_LISTEN}


def probe(url: str, *, timeout: float = 2.0) -> str | None:
    """None if `url` answers 200, else why not (TLS unverified: our own components'
    self-signed certificates on loopback)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as r:
            return None if r.status == 200 else f"{url} answered {r.status}"
    except urllib.error.HTTPError as e:
        return f"{url} answered {e.code}"
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return f"{url} did not answer ({reason})"
