"""A private scratch directory (a flattened kubeconfig's) does not outlive a SIGKILL of its
writer: the next writer removes it, and leaves those of writers still running."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.cluster import scratch

WRITER = """
import sys, time
from testbed.cluster import scratch
d = scratch.private_dir("site-kubeconfigs")
(d / "kubeconfig").write_text("client-key-data: secret")
print(d, flush=True)
time.sleep(60)
"""


def test_a_killed_writers_directory_is_removed_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRA_TESTBED_HOME", str(tmp_path))
    env = {**os.environ, "DRA_TESTBED_HOME": str(tmp_path)}
    running = subprocess.Popen(
        [sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True, env=env
    )
    killed = subprocess.Popen(
        [sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert running.stdout is not None and killed.stdout is not None
        theirs = Path(running.stdout.readline().strip())
        dead = Path(killed.stdout.readline().strip())
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        assert (dead / "kubeconfig").exists()  # SIGKILL: no clean-up of its own

        mine = scratch.private_dir("site-kubeconfigs")
        assert not dead.exists()
        assert (theirs / "kubeconfig").exists()  # its writer still runs
        assert mine.parent == tmp_path / "site-kubeconfigs"
        assert stat.S_IMODE(mine.stat().st_mode) == 0o700
        assert stat.S_IMODE(mine.parent.stat().st_mode) == 0o700
    finally:
        running.kill()
        killed.kill()
        running.wait(10)


def test_a_directory_whose_pid_was_reused_is_removed_and_others_are_left(
    tmp_path: Path,
) -> None:
    """The start time tells a later process given the same pid from the writer."""
    stale = tmp_path / f"{os.getpid()}-1-abcd"  # this pid, another start time
    other = tmp_path / "not-a-scratch-dir"
    stale.mkdir()
    other.mkdir()
    assert scratch.sweep(tmp_path) == [stale]
    assert other.exists()
