"""bench/schedperf_curves.py's pure parts: the sizes it takes and a curve continued with
`--append` (only one of the same way, release, workload and pods; repeats numbered on)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # as `python bench/schedperf_curves.py` has it
    try:
        spec = importlib.util.spec_from_file_location(
            "schedperf_curves", BENCH / "schedperf_curves.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["schedperf_curves"] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "SchedulerCostCurve",
        "way": "schedperf",
        "release": "1.35",
        "kubernetes": "v1.35.8",
        "workload": "SchedulingWithResourceClaimTemplate (upstream's), sized",
        "pods": 300,
        "devices_per_node": 8,
        "started": "2026-11-27T11:30:00Z",
        "command": "bench --sizes 100",
        "model": {"100": {"filtered": 100.0}},
        "points": [],
    }
    return {**doc, **changes}


def _point(nodes: int, repeat: int) -> dict[str, Any]:
    return {
        "nodes": nodes,
        "repeat": repeat,
        "throughput": 10.0,
        "cpu_ms_per_pod": 50.0,
        "filter_ms_per_pod": 20.0,
        "dra_filter_ms_per_node": 0.2,
        "load_1m": 3.0,
        "seconds": 60.0,
    }


def test_sizes_ascending_one_or_more(bench: ModuleType) -> None:
    assert bench._sizes("500, 100,500") == [100, 500]
    assert bench._sizes("5000") == [5000]
    for bad in ("", "0,100", "a,b"):
        with pytest.raises(ValueError, match="--sizes"):
            bench._sizes(bad)


def test_append_keeps_the_points_and_numbers_repeats_after_them(
    bench: ModuleType, tmp_path: Path
) -> None:
    old = _doc(points=[_point(100, 1), _point(100, 2)])
    path = tmp_path / "curve.json"
    path.write_text(json.dumps(old))
    new = _doc(
        started="2026-11-27T12:00:00Z",
        command="bench --sizes 5000",
        model={"5000": {"filtered": 500.0}},
    )
    doc = bench._appended(path, new)
    assert doc["points"] == old["points"]
    assert doc["started"] == "2026-11-27T11:30:00Z"
    assert doc["command"] == "bench --sizes 100; bench --sizes 5000"
    assert set(doc["model"]) == {"100", "5000"}
    assert bench._next_repeat(doc, 100) == 3
    assert bench._next_repeat(doc, 5000) == 1


@pytest.mark.parametrize(
    ("key", "value"),
    [("release", "1.36"), ("pods", 200), ("way", "loadgen"), ("kubernetes", "v1.35.9")],
)
def test_append_refuses_another_curve(
    bench: ModuleType, tmp_path: Path, key: str, value: Any
) -> None:
    path = tmp_path / "curve.json"
    path.write_text(json.dumps(_doc()))
    with pytest.raises(ValueError, match=f"^--append: .* has {key} "):
        bench._appended(path, _doc(**{key: value}))


def test_append_refuses_what_is_not_a_curve(bench: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "curve.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not a curve to continue"):
        bench._appended(path, _doc())
