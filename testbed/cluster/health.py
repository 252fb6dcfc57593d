"""Is a control-plane component up: its own process, listening where it should, healthy?

A live pid is not enough. A component whose port another cluster took either exits or, if
it binds late, a probe of "its" port answers for the other cluster. So a component counts as
healthy only when its process is this cluster's, that process itself listens on the port its
command line names, and the health endpoint on that port answers 200.

Pure: where each component serves (from its argv) and which ports a process listens on (from
/proc's socket tables). Thin I/O: reading /proc and the HTTP probe.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

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


def parse_listening(table: str, inodes: Iterable[str]) -> set[int]:
    """Ports in LISTEN state among the sockets `inodes`, from a /proc/net/tcp{,6} table (pure)."""
    wanted = set(inodes)
    ports = set()
    for row in table.splitlines()[1:]:
        cols = row.split()
        if len(cols) < 10:
            continue
        local, state, inode = cols[1], cols[3], cols[9]
        if state == "0A" and inode in wanted:  # 0A = TCP_LISTEN
            ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (empty if it is gone)."""
    inodes = []
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = fd.readlink()
            except OSError:  # closed while we read the directory
                continue
            if str(target).startswith("socket:["):
                inodes.append(str(target)[8:-1])
    except OSError:
        return set()
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            ports |= parse_listening(Path(f"/proc/{pid}/net/{table}").read_text(), inodes)
        except OSError:
            continue
    return ports


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
