"""Reading scheduler_perf's DataItems JSON into figures."""

from __future__ import annotations

import json

import pytest

from schedperf import dataitems

NAME = "BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/5000pods_500nodes"


def _item(metric: str | None, data: dict[str, float] | None, **labels: str) -> dict[str, object]:
    out_labels = {"Name": f"{NAME}/test", **labels}
    if metric is not None:
        out_labels["Metric"] = metric
    return {
        "data": data,
        "unit": "pods/s" if metric == "SchedulingThroughput" else "ms",
        "labels": out_labels,
    }


def _text(*items: dict[str, object]) -> str:
    return json.dumps({"version": "v1", "dataItems": list(items)})


THROUGHPUT = {"Average": 69.4, "Perc50": 81.1, "Perc90": 120.0, "Perc95": 125.0, "Perc99": 131.0}


def test_throughput_and_durations_of_the_named_workload() -> None:
    text = _text(
        _item("SchedulingThroughput", THROUGHPUT),
        _item(
            "scheduler_framework_extension_point_duration_seconds",
            {"Perc99": 12.5},
            extension_point="Filter",
            plugin="not applicable",
        ),
        _item(
            "scheduler_plugin_execution_duration_seconds",
            {"Average": 0.5},
            extension_point="Filter",
            plugin="DynamicResources",
        ),
    )
    got = dataitems.figures(dataitems.parse(text), NAME)
    assert got.throughput == THROUGHPUT
    assert got.durations == {
        "scheduler_framework_extension_point_duration_seconds{extension_point=Filter}/Perc99": 12.5,
        "scheduler_plugin_execution_duration_seconds"
        "{extension_point=Filter,plugin=DynamicResources}/Average": 0.5,
    }
    assert got.units["scheduler_plugin_execution_duration_seconds"] == "ms"


def test_a_workload_without_a_sample_has_no_throughput_not_zero() -> None:
    # What scheduler_perf writes when the pods were scheduled within one sampling interval:
    # an item with the Name label only and no data.
    text = _text(_item(None, None))
    assert dataitems.figures(dataitems.parse(text), NAME).throughput is None


def test_items_of_other_workloads_are_ignored() -> None:
    other = {
        "Name": f"{NAME}_QueueingHintsEnabled/test",
        "Metric": "SchedulingThroughput",
    }
    text = json.dumps(
        {"version": "v1", "dataItems": [{"data": THROUGHPUT, "unit": "pods/s", "labels": other}]}
    )
    assert dataitems.figures(dataitems.parse(text), NAME).throughput is None


def test_a_file_that_is_not_dataitems_is_refused() -> None:
    with pytest.raises(dataitems.DataItemsError):
        dataitems.parse('{"dataItems": []}')
