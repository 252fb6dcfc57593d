"""The one place that reads a process's and the machine's figures (CPU seconds, RSS, peak RSS,
busy cores, listen-queue overflows): checked against this test's own process and a child."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from testbed.cluster import supervision


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_seconds_grow_with_the_work_a_process_does() -> None:
    before = supervision.cpu_seconds(os.getpid())
    _spin(0.2)
    after = supervision.cpu_seconds(os.getpid())
    assert before is not None and after is not None
    assert after - before >= 0.15


def test_peak_rss_is_at_least_the_rss_and_grows_with_a_large_allocation() -> None:
    pid = os.getpid()
    rss, peak = supervision.rss_bytes(pid), supervision.peak_rss_bytes(pid)
    assert rss is not None and peak is not None and peak >= rss > 0
    block = bytearray(64 * 2**20)  # 64 MiB, touched
    after = supervision.peak_rss_bytes(pid)
    assert after is not None and after >= rss + 60 * 2**20
    del block


def test_a_gone_process_has_no_figures() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names nothing now
    assert supervision.cpu_seconds(child.pid) is None
    assert supervision.rss_bytes(child.pid) is None
    assert supervision.peak_rss_bytes(child.pid) is None


def test_the_machine_is_busy_for_part_of_its_total_and_both_only_grow() -> None:
    busy0, total0 = supervision.machine_cpu_seconds()
    _spin(0.2)
    busy1, total1 = supervision.machine_cpu_seconds()
    assert 0 < busy0 <= total0
    assert busy1 - busy0 >= 0.1  # this process's own spinning counts as busy
    # Both are sums of clock ticks in float seconds: equal growth may differ in the last bit.
    assert total1 - total0 >= busy1 - busy0 - 1e-6


def test_listen_overflows_is_a_count() -> None:
    assert supervision.listen_overflows() >= 0
