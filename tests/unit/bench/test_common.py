"""bench/common.py's reading of the extender's request histogram, shared by the latency
benches: the server's own timing between two scrapes."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def common() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # as `python bench/NAME.py` has it
    try:
        spec = importlib.util.spec_from_file_location("common", BENCH / "common.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _text(counts: tuple[int, int, int], total: float, ok: int) -> str:
    lines = [
        f'extender_request_duration_seconds_bucket{{le="{le}",verb="filter"}} {n}'
        for le, n in zip(("0.001", "0.01", "+Inf"), counts, strict=True)
    ]
    lines += [
        f'extender_request_duration_seconds_sum{{verb="filter"}} {total}',
        f'extender_request_duration_seconds_count{{verb="filter"}} {counts[-1]}',
        'extender_request_duration_seconds_count{verb="prioritize"} 99',
        f'extender_requests_total{{outcome="ok",verb="filter"}} {ok}',
    ]
    return "\n".join(lines)


def test_the_histogram_of_one_verb_with_its_outcomes(common: ModuleType) -> None:
    h = common.request_histogram(_text((1, 2, 3), 0.5, 3), "filter")
    assert h == {"0.001": 1, "0.01": 2, "+Inf": 3, "sum": 0.5, "count": 3, "outcome ok": 3}


def test_the_bound_holding_a_share_counts_only_the_calls_between_scrapes(
    common: ModuleType,
) -> None:
    before = common.request_histogram(_text((10, 10, 10), 0.0, 10), "filter")
    # 100 calls since: 90 under 1 ms, 9 more under 10 ms, 1 beyond.
    after = common.request_histogram(_text((100, 109, 110), 1.0, 110), "filter")
    assert common.bound_holding(before, after, 0.5) == 0.001
    assert common.bound_holding(before, after, 0.99) == 0.01
    assert common.bound_holding(before, after, 1.0) == math.inf
    assert common.bound_holding(after, after, 0.5) == math.inf  # no call: no bound
