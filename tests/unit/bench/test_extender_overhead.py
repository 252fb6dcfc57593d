"""bench/extender_overhead.py's summary: each arm against `off` round by round (a round is a
pair, the engine's method), never a ratio of unpaired medians."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # as `python bench/extender_overhead.py` has it
    try:
        spec = importlib.util.spec_from_file_location(
            "extender_overhead", BENCH / "extender_overhead.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["extender_overhead"] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_the_ratio_to_off_is_of_paired_rounds(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    m = bench.Measured
    # Round 1: on/off 9/10 = 0.9; round 2: 15/30 = 0.5. Paired: geometric mean sqrt(0.45) =
    # 0.67; the retired method (median over median) would say 12/20 = 0.60.
    rows = [
        m("off", 10.0, 1, 1, 1),
        m("on", 9.0, 1, 1, 1),
        m("on", 15.0, 1, 1, 1),
        m("off", 30.0, 1, 1, 1),
    ]
    bench.report(rows, ("off", "on"))
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.split()[:2] == ["on", "throughput:"]]
    assert "/off 0.67 [" in line
    assert "0.60" not in line


def test_one_round_is_an_observation(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    m = bench.Measured
    bench.report([m("off", 10.0, 2, 3, 4), m("on", 8.0, 2, 3, 4)], ("off", "on"))
    (line,) = [
        ln for ln in capsys.readouterr().out.splitlines() if ln.split()[:2] == ["on", "throughput:"]
    ]
    assert "/off 0.80 0.80 (1 repeat)" in line
