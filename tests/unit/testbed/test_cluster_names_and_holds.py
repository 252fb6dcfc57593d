"""Cluster names that cannot reach outside the state directory, and holds that keep `testbed
down` from deleting a cluster someone still uses."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import cli
from testbed.cluster import holds, local

HOLDER = """
import sys, time
from pathlib import Path
from testbed.cluster import holds
with holds.hold(Path(sys.argv[1]), "c1", "experiment writing to out/"):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("bad", ["../x", "", "A", "a/b", "-a", "a-", "x" * 64, ".", "a b"])
def test_a_name_that_is_not_a_dns_label_is_refused_before_anything_is_touched(
    bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRA_TESTBED_HOME", str(tmp_path))
    with pytest.raises(local.ClusterError):
        local.ClusterConfig(name=bad)
    with pytest.raises(SystemExit) as exit_:
        cli.main([f"--name={bad}", "down"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("testbed: error: --name") and "\n" not in err
    assert list(tmp_path.iterdir()) == []


def _holder(home: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_hold_counts_while_its_process_lives_and_not_after(tmp_path: Path) -> None:
    assert holds.holders(tmp_path, "c1") == []
    proc = _holder(tmp_path)
    try:
        assert holds.holders(tmp_path, "c1") == [
            holds.Holder(proc.pid, "experiment writing to out/")
        ]
        assert holds.holders(tmp_path, "c2") == []
    finally:
        proc.kill()  # SIGKILL: its file stays behind, and must not count
        proc.wait()
    assert holds.holders(tmp_path, "c1") == []
    assert list((tmp_path / "holds" / "c1").iterdir()) == []  # the stale file is removed


def test_a_process_does_not_count_its_own_hold(tmp_path: Path) -> None:
    with holds.hold(tmp_path, "c1", "me"):
        assert (tmp_path / "holds" / "c1").is_dir()
        assert holds.holders(tmp_path, "c1") == []
    assert list((tmp_path / "holds" / "c1").iterdir()) == []


def test_down_of_a_held_cluster_names_the_holder_and_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRA_TESTBED_HOME", str(tmp_path))
    config = local.ClusterConfig(name="c1")
    config.cluster_dir.mkdir(parents=True)
    (config.cluster_dir / "marker").write_text("x")
    proc = _holder(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(SystemExit) as exit_:
            cli.main(["--name", "c1", "down"])
        assert exit_.value.code == 1
        err = capsys.readouterr().err.strip()
        assert "in use by experiment writing to out/" in err and f"pid {proc.pid}" in err, err
        assert "down --force" in err and "\n" not in err
        assert (config.cluster_dir / "marker").is_file()
        assert time.monotonic() - started < 60
    finally:
        proc.kill()
        proc.wait()
