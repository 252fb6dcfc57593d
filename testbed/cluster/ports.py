"""Loopback ports reserved per cluster, machine-wide, so that a component that is down keeps
its port.

kwokctl only checks that a port is free at the moment it creates a cluster. While one
cluster's component is stopped (killed, crashed, after a reboot) another cluster's kwokctl
may take its port; the component then cannot start again, and an API server whose etcd port
went to another cluster's etcd serves (and its controllers act on) that cluster's data.
So `testbed up` chooses every component port itself, under the start-up lock: free now, and
reserved by no cluster whose directory still exists. It records them in a registry beside
the lock; `down` releases them.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from testbed.cluster import locks

# KwokctlConfiguration option names of the ports kwokctl would otherwise pick itself.
OPTIONS = (
    "etcdPort",
    "etcdPeerPort",
    "kubeApiserverPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
    "kwokControllerPort",
)
# Downwards from here, like kwokctl: below Linux's ephemeral range (32768-60999), where
# outgoing connections and port-0 listeners (shard controllers, second schedulers) live.
_FIRST, _LOWEST = 32766, 10000


def free_port(host: str = "127.0.0.1") -> int:
    """A port the system calls free on `host` now (for a listener started right after; the
    cluster's own components get reserved ones, see `reserve`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Something listens on (or holds) `host:port` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def registry_path() -> Path:
    return locks.machine_lock_path().with_name("dra-testbed-ports.json")


def choose(count: int, taken: set[int], busy: Callable[[int], bool]) -> list[int]:
    """`count` ports, highest first, neither reserved (`taken`) nor `busy` now (pure given
    `busy`)."""
    out: list[int] = []
    port = _FIRST
    while len(out) < count:
        if port < _LOWEST:
            raise RuntimeError(f"no {count} free loopback ports between {_LOWEST} and {_FIRST}")
        if port not in taken and not busy(port):
            out.append(port)
        port -= 1
    return out


def live(entries: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """The reservations whose cluster directory still exists (the others were deleted
    without `down`, e.g. with a test's temporary directory)."""
    return {d: list(p) for d, p in entries.items() if Path(d).is_dir()}


@contextlib.contextmanager
def _registry() -> Iterator[dict[str, list[int]]]:
    path = registry_path()
    with locks.held(path.with_suffix(".lock"), holder="the port registry", timeout=60):
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError):
            entries = {}
        yield entries
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
        tmp.replace(path)


def reserve(
    cluster_dir: Path, fixed: Mapping[str, int], busy: Callable[[int], bool]
) -> dict[str, int]:
    """A port for every option in OPTIONS (`fixed` ones as given), recorded for
    `cluster_dir`; the caller holds the start-up lock until the components listen."""
    with _registry() as entries:
        current = live(entries)
        current.pop(str(cluster_dir), None)
        taken = {p for ps in current.values() for p in ps} | set(fixed.values())
        wanted = [o for o in OPTIONS if o not in fixed]
        ports = {**fixed, **dict(zip(wanted, choose(len(wanted), taken, busy), strict=True))}
        current[str(cluster_dir)] = sorted(ports.values())
        entries.clear()
        entries.update(current)
    return ports


def add(cluster_dir: Path, port: int) -> None:
    """Record one more port for `cluster_dir` (a component added later, e.g. Prometheus)."""
    with _registry() as entries:
        kept = entries.setdefault(str(cluster_dir), [])
        entries[str(cluster_dir)] = sorted({*kept, port})


def reserved_elsewhere(cluster_dir: Path) -> set[int]:
    """Ports live clusters other than `cluster_dir` reserved."""
    with _registry() as entries:
        current = live(entries)
    current.pop(str(cluster_dir), None)
    return {p for ps in current.values() for p in ps}


def release(cluster_dir: Path) -> None:
    with _registry() as entries:
        entries.pop(str(cluster_dir), None)
