"""Every bench script starts: `--help` answers with a usage line.

The benches import the services' modules (fleet.render, loadgen.series, experiment.demo.plan, ...)
and each other's helpers; a module moved or renamed there breaks them only when run, so this
imports each one the way a user runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if "def main" in p.read_text())


def test_there_are_bench_scripts() -> None:
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_answers_help(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_benches_that_measure_another_tree_start_python_with_dash_p() -> None:
    """A child started as `python -c` with a tree on PYTHONPATH imports the current directory
    first (a checkout, when the bench runs from one), so every arm would run the same code;
    `-P` leaves the current directory out."""
    for script in SCRIPTS:
        text = script.read_text()
        if '"PYTHONPATH"' in text and '"-c"' in text:
            assert '"-P", "-c"' in text, f"{script.name} starts a tree's child without -P"
