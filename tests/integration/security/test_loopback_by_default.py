"""Without an address flag, `extender serve` and `fleet serve` listen on 127.0.0.1 only.

Checked on the kernel's socket table, not on the CLI defaults: whatever a default or an
environment variable says, the listening socket must be bound to loopback, on IPv4 and not
on any IPv6 or wildcard address.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from testbed.cluster import ports, processes

pytestmark = pytest.mark.cluster

BIN = Path(sys.executable).parent
LISTEN = "0A"


def listening_on(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) listening on `port`."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                out.add(address)
    return out


def clean_env(kubeconfig: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXTENDER_ADDRESS", "EXTENDER_PORT")}
    return {**env, "KUBECONFIG": kubeconfig}


def test_extender_serve_listens_on_loopback_only(kubeconfig: str, tmp_path: Path) -> None:
    port = ports.free_port()
    with processes.running(
        "the extender",
        [str(BIN / "extender"), "serve", "--from-files", str(tmp_path), "--port", str(port)],
        log=tmp_path / "extender.log",
        health_url=f"http://127.0.0.1:{port}/healthz",
        timeout=60,
        env=clean_env(kubeconfig),
    ):
        assert listening_on(port) == {"0100007F"}  # 127.0.0.1, little-endian hex


def test_fleet_serve_listens_on_loopback_only(kubeconfig: str, tmp_path: Path) -> None:
    port = ports.free_port()
    with processes.running(
        "fleet serve",
        [str(BIN / "fleet"), "serve", "--install-crd", "--port", str(port)],
        log=tmp_path / "fleet.log",
        health_url=f"http://127.0.0.1:{port}/healthz",
        timeout=60,
        env=clean_env(kubeconfig),
    ):
        assert listening_on(port) == {"0100007F"}
