"""`testbed up|down|status` as a user runs it: real processes, real kwokctl."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cluster import local

TESTBED = [sys.executable, "-m", "testbed"]
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
)


def run(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "DRA_TESTBED_HOME": str(home), **env}
    return subprocess.run(
        [*TESTBED, *args], capture_output=True, text=True, env=full_env, timeout=300, check=False
    )


def processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append(args)
    return found


def listen_addresses(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs process `pid` listens on, from /proc (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # closed while we read the directory: a busy process
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            hex_addr, hex_port = local.split(":")
            raw = bytes.fromhex(hex_addr)
            if width == 8:
                addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                addr = socket.inet_ntop(socket.AF_INET6, words)
                addr = addr.removeprefix("::ffff:")
            found.add((addr, int(hex_port, 16)))
    return found


def test_busy_apiserver_port_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run("--name", "busy", "up", "--apiserver-port", str(port), home=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"testbed: error: port {port} on 127.0.0.1 is already in use"
    assert not (tmp_path / "kwok" / "clusters" / "busy").exists()


def test_missing_binaries_are_one_line(tmp_path: Path) -> None:
    proc = run("up", home=tmp_path, DRA_TESTBED_BIN_DIR=str(tmp_path / "nowhere"))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "lacks kube-apiserver" in lines[0], proc.stderr


def test_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    proc = run("up", "--apiserver-port", "70000", home=tmp_path)
    assert proc.returncode == 2
    assert "not a TCP port" in proc.stderr


@pytest.mark.cluster
def test_up_is_idempotent_and_down_removes_everything(tmp_path: Path) -> None:
    home = tmp_path / "state"
    first = run("--name", "lifecycle", "up", home=home)
    assert first.returncode == 0, first.stderr
    assert "is up at https://127.0.0.1:" in first.stdout
    try:
        again = run("--name", "lifecycle", "up", home=home)
        assert again.returncode == 0, again.stderr
        assert "is already running" in again.stdout
        status = run("--name", "lifecycle", "status", home=home)
        assert status.returncode == 0
        assert "running at https://127.0.0.1:" in status.stdout
        for component in COMPONENTS:
            line = next(ln for ln in status.stdout.splitlines() if ln.split()[0] == component)
            assert "not running" not in line, status.stdout
            pid = int(line.split()[2])
            listening = listen_addresses(pid)
            assert listening, f"{component} listens on nothing"
            assert all(addr == "127.0.0.1" for addr, _ in listening), (component, listening)
        # Fault-test hook: the API server restarts with the same command line and serves again.
        cluster = local.LocalCluster(local.ClusterConfig(name="lifecycle", home=home))
        old_pid = int(
            next(
                ln for ln in status.stdout.splitlines() if ln.startswith("  kube-apiserver")
            ).split()[2]
        )
        new_pid = cluster.restart_component("kube-apiserver")
        assert new_pid != old_pid
        assert cluster._wait_ready(60)
        assert {addr for addr, _ in listen_addresses(new_pid)} == {"127.0.0.1"}
    finally:
        down = run("--name", "lifecycle", "down", home=home)
    assert down.returncode == 0, down.stderr
    assert not (home / "kwok" / "clusters" / "lifecycle").exists()
    assert processes_mentioning(str(home)) == []
    assert run("--name", "lifecycle", "status", home=home).returncode == 1
    assert "nothing to do" in run("--name", "lifecycle", "down", home=home).stdout


def test_demo_bad_input_is_one_line_and_starts_nothing(tmp_path: Path) -> None:
    home = tmp_path / "state"
    for args, code, says in [
        (["demo", "--nodes", "5"], 2, "at least 10 nodes"),
        (["demo", "--comparisons", "speed"], 2, "--comparisons takes a subset"),
        (["demo", "--pods", "0"], 2, "must be positive"),
        (["demo", "--nodes", "100", "--scale-nodes", "50"], 2, "must be larger than --nodes"),
        (["--extender-port", "0", "up"], 2, "--extender-port 0 is not a TCP port"),
    ]:
        proc = run(*args, home=home)
        assert proc.returncode == code, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], (args, proc.stderr)
    a_file = tmp_path / "taken"
    a_file.write_text("")
    proc = run("demo", "--output-dir", str(a_file), home=home)
    assert proc.returncode == 1 and "File exists" in proc.stderr
    assert not home.exists()  # no cluster state was created
