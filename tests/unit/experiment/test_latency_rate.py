"""The latency arms' arrival rate: half the sustained rate, never above a low ceiling, so
pod startup measures service time rather than a queue."""

from __future__ import annotations

import math

import pytest

from experiment.demo import report
from experiment.measure import arms


@pytest.mark.parametrize(
    ("sustained", "rate"),
    [
        (1.0, 0.5),  # a slow arm: half its rate
        (3.9, 1.95),
        (4.0, 2.0),  # from here on the ceiling
        (12.3, 2.0),  # DRA at 1,000 nodes: half (6.15/s) still queued
        (90.9, 2.0),  # the device plugin: both arms of the dra comparison get 2/s
        (0.0015, 0.001),  # rounded to 0.001 pods/s
    ],
)
def test_half_the_sustained_rate_at_most_the_ceiling(sustained: float, rate: float) -> None:
    assert arms.latency_rate(sustained) == rate


@pytest.mark.parametrize("sustained", [None, 0.0, -1.0, math.nan])
def test_no_sustained_rate_gives_no_latency_rate(sustained: float | None) -> None:
    assert arms.latency_rate(sustained) is None


def test_the_rule_never_exceeds_half_the_sustained_rate_nor_the_ceiling() -> None:
    for tenths in range(1, 2000):
        sustained = tenths / 10
        rate = arms.latency_rate(sustained)
        assert rate is not None and 0 < rate <= arms.LATENCY_MAX_QPS
        assert rate <= arms.LATENCY_LOAD * sustained + 0.0005


def test_the_definition_states_the_rule_with_its_numbers() -> None:
    text = arms.LATENCY_RATE_DEFINITION
    assert f"{arms.LATENCY_LOAD:g}" in text and f"{arms.LATENCY_MAX_QPS:g} pods/s" in text


def test_the_demo_report_states_its_definitions_latency_rule_included() -> None:
    doc = report.to_json([], {"nodes": 50}, [], [])
    definitions = doc["definitions"]
    assert definitions["latency arm"] == arms.LATENCY_RATE_DEFINITION
    assert {"pod startup", "scheduling throughput", "figures", "verdicts", "valid arm"} <= set(
        definitions
    )
    assert "Student's t" in definitions["verdicts"] and "pairs" in definitions["verdicts"]
    assert "ClusterLoader2" in definitions["pod startup"]
    assert "scheduler_perf" in definitions["scheduling throughput"]
