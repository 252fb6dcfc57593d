"""The API server liveness probe: its state machine, and a probe against a closed port."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from testbed.kube.client import ClientSettings, Kube
from testbed.kube.watching import Liveness, LivenessSettings


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens once the socket is closed: connections are refused


async def _kube(tmp_path: Path) -> Kube:
    config = tmp_path / "kubeconfig"
    config.write_text(
        f"""
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{_closed_port()}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
    )
    return await Kube.connect(kubeconfig=config, settings=ClientSettings(max_retries=0))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_one_failed_probe_is_not_an_outage(tmp_path: Path) -> None:
    async with await _kube(tmp_path) as kube:
        live = Liveness(kube, LivenessSettings(failures=2))
        live.record(False, "timeout")
        live.record(True)
        live.record(False, "timeout")
        assert live.up and live.outages == 0 and live.reason == ""


async def test_failures_in_a_row_mark_the_server_down_with_the_reason_and_cut_watches(
    tmp_path: Path,
) -> None:
    changes: list[tuple[bool, str]] = []
    cut: list[str] = []
    clock = Clock()
    async with await _kube(tmp_path) as kube:
        live = Liveness(
            kube, LivenessSettings(failures=2), on_change=lambda *c: changes.append(c), clock=clock
        )
        live.streams.add(lambda: cut.append("pods"))
        live.record(False, "timeout")
        assert live.up and not cut
        clock.now = 110.0
        live.record(False, "timeout")
        assert not live.up and live.outages == 1
        assert "not answering" in live.reason and "timeout" in live.reason
        assert live.since == 110.0
        assert cut == ["pods"]
        live.record(False, "timeout")  # still down: cut again (a watch may have reopened)
        assert live.outages == 1 and cut == ["pods", "pods"]
        live.record(True)
        assert live.up and live.reason == "" and live.outages == 1
        assert [up for up, _ in changes] == [False, True]


async def test_wait_up_returns_once_the_server_answers_again(tmp_path: Path) -> None:
    async with await _kube(tmp_path) as kube:
        live = Liveness(kube, LivenessSettings(failures=1))
        live.record(False, "x")
        waiter = asyncio.ensure_future(live.wait_up())
        await asyncio.sleep(0)
        assert not waiter.done()
        live.record(True)
        await asyncio.wait_for(waiter, 1)


async def test_a_refused_connection_counts_as_no_answer(tmp_path: Path) -> None:
    async with await _kube(tmp_path) as kube:
        live = Liveness(kube, LivenessSettings(failures=2, timeout=2))
        await live.probe()
        await live.probe()
        assert not live.up
        assert kube.host in live.reason
