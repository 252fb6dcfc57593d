"""The loadgen runs the extender exports for Grafana's run annotations."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from extender import runs
from testbed import vocab
from testbed.kube.watching import Change

NOW = 1_800_000_000.0


def stamp(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def namespace(run: str, *, beat: float = NOW - 1, created: float = NOW - 60, **extra: Any) -> Any:
    annotations = {
        vocab.ANNOTATION_LOADGEN_HEARTBEAT: stamp(beat),
        vocab.ANNOTATION_LOADGEN_INTERVAL: "10",
        **extra.pop("annotations", {}),
    }
    meta = {
        "name": f"loadgen-{run}",
        "labels": {vocab.LABEL_RUN: run, vocab.LABEL_MANAGED_BY: vocab.LOADGEN_MANAGED_BY},
        "annotations": annotations,
        "creationTimestamp": stamp(created),
        **extra,
    }
    return {"metadata": meta}


def test_a_run_ends_at_its_deletion_or_its_last_heartbeat() -> None:
    found = [
        namespace("alive"),
        namespace("killed", beat=NOW - 31),  # three heartbeats missed: abandoned
        namespace("kept", beat=NOW - 4, annotations={vocab.ANNOTATION_LOADGEN_STATE: "kept"}),
        namespace("ending", deletionTimestamp=stamp(NOW - 2)),
        {"metadata": {"name": "loadgen-unlabelled", "labels": {}}},
    ]
    assert runs.runs(found, [], NOW) == [
        runs.Run("alive", NOW - 60, None),
        runs.Run("ending", NOW - 60, NOW - 2),
        runs.Run("kept", NOW - 60, NOW - 4),
        runs.Run("killed", NOW - 60, NOW - 31),
    ]


def test_ended_runs_linger_then_go_and_at_most_the_newest_are_exported() -> None:
    ended = [runs.Run("old", NOW - 900, NOW - 301), runs.Run("recent", NOW - 400, NOW - 299)]
    assert [r.run for r in runs.runs([], ended, NOW, linger=300)] == ["recent"]
    found = [namespace(f"r{i}", created=NOW - 100 + i) for i in range(5)]
    assert [r.run for r in runs.runs(found, [], NOW, limit=2)] == ["r3", "r4"]


def test_the_gauges_follow_the_watch_and_the_clock() -> None:
    clock = [NOW]
    seen = runs.Runs(clock=lambda: clock[0], linger=60)
    registry = CollectorRegistry()
    registry.register(seen)

    def value(metric: str, run: str) -> float | None:
        return registry.get_sample_value(metric, {"run": run})

    # Both families are exported before any run, so a query naming them is checkable.
    text = generate_latest(registry).decode()
    assert f"# TYPE {runs.START} gauge" in text and f"# TYPE {runs.END} gauge" in text
    seen.replace([namespace("a"), namespace("b")])
    seen.apply(Change("ADDED", namespace("c", created=NOW - 1)))
    assert value(runs.START, "c") == NOW - 1 and value(runs.END, "c") is None
    # a is deleted; b's namespace vanishes from a relist (its deletion happened unseen).
    deleted = namespace("a", deletionTimestamp=stamp(NOW - 3))
    seen.apply(Change("DELETED", deleted))
    seen.replace([namespace("c", created=NOW - 1)])
    assert value(runs.START, "a") == NOW - 60 and value(runs.END, "a") == NOW - 3
    assert value(runs.END, "b") == NOW
    clock[0] = NOW + 56  # c stopped heartbeating; a and b still linger
    assert value(runs.END, "c") == NOW - 1 and value(runs.END, "a") == NOW - 3
    clock[0] = NOW + 61
    assert value(runs.START, "a") is None and value(runs.START, "b") is None
    assert seen.gone == {}
