"""`testbed up|down|status` as a user runs it: real processes, real kwokctl."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from testbed.cluster import local, ports
from tests.support.children import TESTBED
from tests.support.children import testbed as run

COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
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
    prom = ports.free_port()
    first = run("--name", "lifecycle", "up", "--prometheus-port", str(prom), home=home)
    assert first.returncode == 0, first.stderr
    assert "is up at https://127.0.0.1:" in first.stdout
    assert f"prometheus: http://127.0.0.1:{prom}" in first.stdout
    try:
        again = run("--name", "lifecycle", "up", "--prometheus-port", str(prom), home=home)
        assert again.returncode == 0, again.stderr
        assert "is already running" in again.stdout
        other = run("--name", "lifecycle", "up", "--prometheus-port", str(prom + 1), home=home)
        assert other.returncode == 1 and f"runs Prometheus on port {prom}" in other.stderr
        # Prometheus is a component like the others: `up` starts it again if it stopped.
        pids = prometheus_pid(run("--name", "lifecycle", "status", home=home).stdout)
        os.kill(pids, signal.SIGKILL)
        repaired = run("--name", "lifecycle", "up", home=home)
        assert repaired.returncode == 0 and "starting prometheus again" in repaired.stderr
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
        assert cluster.wait_ready(60)
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
        (["demo", "--pods", "0"], 2, "--pods: must be at least 1"),
        (["demo", "--nodes", "100", "--scale-nodes", "50"], 2, "must be larger than --nodes"),
        (["--extender-port", "0", "up"], 2, "--extender-port: 0 is not a TCP port"),
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


def spawn(*args: str, home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "DRA_TESTBED_HOME": str(home)}
    return subprocess.Popen(
        [*TESTBED, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def prometheus_pid(status_stdout: str) -> int:
    (line,) = [ln for ln in status_stdout.splitlines() if ln.split()[:1] == ["prometheus"]]
    assert "healthy" in line, status_stdout
    return int(line.split()[2])


def component_pids(status_stdout: str) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for line in status_stdout.splitlines():
        cols = line.split()
        if cols and cols[0] in COMPONENTS:
            out[cols[0]] = int(cols[2]) if cols[2].isdigit() else None
    return out


@pytest.mark.cluster
def test_two_concurrent_ups_make_two_healthy_clusters_on_disjoint_ports(tmp_path: Path) -> None:
    # Different state homes too: the start-up lock is machine-wide, as ports are.
    homes = {"race-a": tmp_path / "a", "race-b": tmp_path / "b"}
    procs = {name: spawn("--name", name, "up", home=home) for name, home in homes.items()}
    try:
        outs = {name: p.communicate(timeout=600) for name, p in procs.items()}
        for name, p in procs.items():
            assert p.returncode == 0, (name, outs[name])
            assert "every component healthy" in outs[name][0]
        ports: dict[str, set[int]] = {}
        for name, home in homes.items():
            status = run("--name", name, "status", home=home)
            assert status.returncode == 0, status.stdout
            pids = component_pids(status.stdout)
            assert set(pids) == set(COMPONENTS) and all(pids.values()), status.stdout
            assert status.stdout.count(" healthy") == len(COMPONENTS), status.stdout
            ports[name] = {p for pid in pids.values() if pid for _, p in listen_addresses(pid)}
        assert not ports["race-a"] & ports["race-b"], ports
        # Each API server on its own etcd: the etcd port it names is its cluster's.
        for name, home in homes.items():
            cluster = local.LocalCluster(local.ClusterConfig(name=name, home=home))
            etcd_url = cluster.component_flag("etcd", "listen-client-urls") or ""
            etcd_port = etcd_url.rsplit(":", 1)[-1]
            assert f":{etcd_port}" in (
                cluster.component_flag("kube-apiserver", "etcd-servers") or ""
            )
            assert int(etcd_port) in ports[name]
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for name, home in homes.items():
            run("--name", name, "down", home=home)
    for home in homes.values():
        assert processes_mentioning(str(home)) == []


@pytest.mark.cluster
def test_up_restarts_a_dead_component_and_says_what_it_cannot_repair(tmp_path: Path) -> None:
    home = tmp_path / "state"
    try:
        first = run("--name", "mend", "up", home=home)
        assert first.returncode == 0, first.stderr
        cluster = local.LocalCluster(local.ClusterConfig(name="mend", home=home))
        pid = component_pids(run("--name", "mend", "status", home=home).stdout)["kube-scheduler"]
        assert pid
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)

        status = run("--name", "mend", "status", home=home)
        assert status.returncode == 1
        assert component_pids(status.stdout)["kube-scheduler"] is None
        assert "testbed --name mend up" in status.stdout  # how to repair

        mended = run("--name", "mend", "up", home=home)
        assert mended.returncode == 0, mended.stderr
        assert "starting kube-scheduler again" in mended.stderr
        assert "waiting for the API server's /healthz first" in mended.stderr
        assert run("--name", "mend", "status", home=home).returncode == 0

        # etcd killed: the API server's /healthz cannot pass until etcd runs again, so the
        # repair starts it without waiting for that.
        pid = component_pids(run("--name", "mend", "status", home=home).stdout)["etcd"]
        assert pid
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)
        mended = run("--name", "mend", "up", home=home)
        assert mended.returncode == 0, mended.stderr
        assert "starting etcd again" in mended.stderr
        assert "/healthz" not in mended.stderr
        assert run("--name", "mend", "status", home=home).returncode == 0

        # Its port taken while it is down: `up` cannot repair that, and says so in one line.
        port = int(cluster.component_flag("kube-scheduler", "secure-port") or 0)
        pid = component_pids(run("--name", "mend", "status", home=home).stdout)["kube-scheduler"]
        assert pid and port
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)
        with socket.socket() as squatter:
            # The killed scheduler's closed connections may hold the port in TIME_WAIT;
            # a listening squatter still keeps the scheduler off it.
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            bind_when_free(squatter, port)
            squatter.listen()
            failed = run("--name", "mend", "up", home=home)
        assert failed.returncode == 1
        error = [ln for ln in failed.stderr.splitlines() if ln.startswith("testbed: error:")]
        assert len(error) == 1, failed.stderr
        assert "kube-scheduler is not running" in error[0]
        assert "address already in use" in error[0]
        assert "testbed --name mend down" in error[0]
        # ... and stops the rest: half a cluster keeps nothing running that could reach
        # another cluster's ports.
        after = run("--name", "mend", "status", home=home)
        assert after.returncode == 1
        assert set(component_pids(after.stdout).values()) == {None}, after.stdout
        # Once the port is free again, `up` repairs it.
        assert run("--name", "mend", "up", home=home).returncode == 0
        assert run("--name", "mend", "status", home=home).returncode == 0
    finally:
        run("--name", "mend", "down", home=home)


def bind_when_free(sock: socket.socket, port: int, timeout: float = 10.0) -> None:
    """Bind `sock` to `port` once a killed process's listener is closed (a Go program's
    other threads exit, and close its sockets, after its main thread)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.bind(("127.0.0.1", port))
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    """Until `pid` has released its ports (its sockets close after its memory)."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        stat = Path(f"/proc/{pid}/stat")
        with contextlib.suppress(OSError):
            if stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                return
        time.sleep(0.05)
