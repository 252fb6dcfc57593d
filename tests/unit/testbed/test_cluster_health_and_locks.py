"""Where each component serves health, which ports a process listens on, and the start-up
lock that keeps concurrent `testbed up`s from racing for ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from testbed.cluster import health, local, locks, ports


def test_endpoints_come_from_each_components_command_line() -> None:
    assert health.endpoint(
        "etcd", ["/b/etcd", "--listen-client-urls=http://127.0.0.1:32765", "--name=x"]
    ) == health.Endpoint(32765, "http://127.0.0.1:32765/health")
    assert health.endpoint(
        "kube-apiserver", ["/b/a", "--bind-address=127.0.0.1", "--secure-port=32150"]
    ) == health.Endpoint(32150, "https://127.0.0.1:32150/readyz")
    assert health.endpoint(
        "kube-scheduler",
        ["/b/s", "--secure-port=32761"],  # no bind address: all, so loopback
    ) == health.Endpoint(32761, "https://127.0.0.1:32761/healthz")
    assert health.endpoint(
        "kube-controller-manager", ["--bind-address=0.0.0.0", "--secure-port=1"]
    ) == health.Endpoint(1, "https://127.0.0.1:1/healthz")
    assert health.endpoint(
        "kwok-controller-shard-2", ["--server-address=127.0.0.1:40001"]
    ) == health.Endpoint(40001, "http://127.0.0.1:40001/healthz")
    assert health.endpoint(
        "prometheus", ["/usr/bin/prometheus", "--web.listen-address=127.0.0.1:9090"]
    ) == health.Endpoint(9090, "http://127.0.0.1:9090/-/ready")


def test_a_command_line_without_its_port_has_no_endpoint() -> None:
    assert health.endpoint("kube-scheduler", ["/b/s", "--config=x"]) is None
    assert health.endpoint("kube-scheduler", ["--secure-port=many"]) is None
    assert health.endpoint("something-else", ["--secure-port=1"]) is None


def test_the_last_of_a_repeated_flag_wins_as_in_go() -> None:
    assert health.flags(["--a=1", "-v", "--b", "--a=2", "--c=x=y"]) == {"a": "2", "c": "x=y"}


def test_listening_ports_of_this_process_are_its_listening_sockets_only() -> None:
    with socket.socket() as server, socket.socket() as client, socket.socket() as bound:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.connect(server.getsockname())
        accepted, _ = server.accept()
        bound.bind(("127.0.0.1", 0))  # bound, not listening
        with accepted:
            found = health.listening_ports(os.getpid())
        assert server.getsockname()[1] in found
        assert client.getsockname()[1] not in found and bound.getsockname()[1] not in found
    assert health.listening_ports(2**22 + 1) == set()  # no such pid


def test_probe_says_why_a_port_does_not_answer() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connection refused
        reason = health.probe(f"http://127.0.0.1:{port}/healthz", timeout=1)
    assert reason is not None and f"127.0.0.1:{port}/healthz did not answer" in reason


def test_a_second_holder_waits_and_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "start.lock"
    waits: list[str] = []
    order: list[str] = []
    with locks.held(path, holder="first", timeout=5):
        second = threading.Thread(
            target=lambda: _take(path, "second", waits.append, order), daemon=True
        )
        second.start()
        second.join(0.5)
        assert second.is_alive()  # still waiting
        order.append("first released")
    second.join(5)
    assert order == ["first released", "second got it"]
    assert len(waits) == 1 and waits[0].startswith("first (pid ")


def _take(path: Path, holder: str, on_wait: Callable[[str], None], order: list[str]) -> None:
    with locks.held(path, holder=holder, timeout=5, on_wait=on_wait, poll=0.02):
        order.append(f"{holder} got it")


def test_waiting_too_long_is_one_line_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "start.lock"
    with (
        locks.held(path, holder="slow up", timeout=1),
        pytest.raises(locks.LockTimeout, match=r"^slow up \(pid \d+\) still holds .* after 0s$"),
        locks.held(path, holder="impatient", timeout=0.1, poll=0.02),
    ):
        pass


def test_a_killed_holder_leaves_no_lock_behind_and_children_do_not_inherit_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "start.lock"
    # A child started under the lock (as kwokctl starts the components) outlives its parent.
    code = (
        "import subprocess, sys, time\n"
        "from pathlib import Path\n"
        "from testbed.cluster import locks\n"
        f"with locks.held(Path({str(path)!r}), holder='parent', timeout=5):\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "    print(child.pid, flush=True)\n"
        "    time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    try:
        with (
            pytest.raises(locks.LockTimeout),
            locks.held(path, holder="me", timeout=0.2, poll=0.02),
        ):
            pass
        parent.kill()
        parent.wait()
        with locks.held(path, holder="me", timeout=5, poll=0.02):
            assert Path(f"/proc/{child_pid}").exists()  # the child still runs, lock is free
    finally:
        os.kill(child_pid, 9)  # our grandchild: init reaps it


def test_a_lock_path_planted_as_a_symlink_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    target = tmp_path / "mine.txt"
    target.write_text("keep me")
    path = tmp_path / "start.lock"
    path.symlink_to(target)
    with pytest.raises(OSError), locks.held(path, holder="me", timeout=0.2, poll=0.02):
        pass
    assert target.read_text() == "keep me"


def test_ports_are_chosen_downwards_skipping_reserved_and_busy_ones() -> None:
    busy = {32765}
    assert ports.choose(3, {32766}, busy.__contains__) == [32764, 32763, 32762]
    with pytest.raises(RuntimeError, match="no 2 free loopback ports"):
        ports.choose(2, set(), lambda p: True)


def test_a_reservation_outlives_its_components_and_goes_with_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # a private registry
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    got_a = ports.reserve(a, {"kubeApiserverPort": 32150}, lambda p: False)
    assert set(got_a) == set(ports.OPTIONS) and got_a["kubeApiserverPort"] == 32150
    # Nothing listens anywhere (all of a's components are down): b still avoids a's ports.
    got_b = ports.reserve(b, {}, lambda p: False)
    assert not set(got_a.values()) & set(got_b.values())
    ports.release(a)
    again = ports.reserve(a, {}, lambda p: False)
    assert not set(again.values()) & set(got_b.values())
    # A cluster directory deleted without `down` frees its ports for the next reservation.
    b.rmdir()
    c = tmp_path / "c"
    c.mkdir()
    assert set(ports.reserve(c, {}, lambda p: False).values()) & set(got_b.values())


def test_the_kwokctl_config_carries_the_reserved_ports_and_stays_on_loopback() -> None:
    doc = yaml.safe_load(local.kwokctl_config_text({"etcdPort": 32000, "kubeSchedulerPort": 32001}))
    assert doc["kind"] == "KwokctlConfiguration"
    assert doc["options"] == {
        "bindAddress": "127.0.0.1",
        "etcdPort": 32000,
        "kubeSchedulerPort": 32001,
    }


def test_a_lock_path_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    planted = tmp_path / "dra-testbed-start.lock"
    planted.symlink_to(target)
    with pytest.raises(OSError), locks.held(planted, holder="test", timeout=1):
        pass
    assert target.read_text() == "keep me\n"
