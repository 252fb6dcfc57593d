"""runs (ownership, heartbeat, what a run holds) and preflight (demand against free GPUs),
on plain data."""

from __future__ import annotations

from typing import Any

from loadgen import preflight, runs, scenarios
from testbed import vocab

NOW = 1_700_000_000.0


def _namespace(name: str, annotations: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"loadgen-{name}",
            "labels": {vocab.LABEL_RUN: name},
            "annotations": annotations,
            "creationTimestamp": runs.stamp(NOW - 300),
            **meta,
        }
    }


def test_only_the_token_the_namespace_was_made_with_owns_it() -> None:
    ns = _namespace("a", runs.ownership("t0k3n", NOW, 10))
    assert runs.owned_by(ns, "t0k3n")
    assert not runs.owned_by(ns, "other")
    assert not runs.owned_by(_namespace("b", {}), "t0k3n")


def test_a_run_is_abandoned_after_three_missed_heartbeats() -> None:
    ns = _namespace("a", runs.ownership("t", NOW, 10))
    assert runs.state(ns, NOW + 29) == "running"
    assert runs.state(ns, NOW + 31) == "abandoned"
    beat = runs.heartbeat(NOW + 30)["metadata"]["annotations"]
    ns["metadata"]["annotations"].update(beat)
    assert runs.state(ns, NOW + 55) == "running"
    ns["metadata"]["annotations"].update(runs.kept()["metadata"]["annotations"])
    assert runs.state(ns, NOW + 10_000) == "kept"
    assert runs.state(_namespace("old", {}), NOW) == "abandoned"  # nothing refreshes it


def _claim(ns: str, gpus: int) -> dict[str, Any]:
    results = [{"driver": vocab.GPU_DRIVER, "pool": "n", "device": f"g{i}"} for i in range(gpus)]
    status = {"allocation": {"devices": {"results": results}}} if gpus else {}
    return {"metadata": {"namespace": ns, "name": "c"}, "status": status}


def test_summaries_count_pods_claims_and_gpus_per_run() -> None:
    namespaces = [
        _namespace("live", runs.ownership("t", NOW - 5, 10)),
        _namespace("dead", runs.ownership("t", NOW - 600, 10), deletionTimestamp="x"),
    ]
    pods = [{"metadata": {"namespace": "loadgen-live"}}] * 3 + [
        {"metadata": {"namespace": "elsewhere"}}
    ]
    claims = [_claim("loadgen-live", 2), _claim("loadgen-live", 0), _claim("loadgen-dead", 8)]
    live, dead = sorted(runs.summarize(namespaces, pods, claims, NOW), key=lambda r: r.run_id)[::-1]
    assert (live.run_id, live.state, live.pods, live.claims, live.allocated_claims, live.gpus) == (
        "live",
        "running",
        3,
        2,
        1,
        2,
    )
    assert (dead.state, dead.terminating, dead.gpus, dead.pods) == ("abandoned", True, 8, 0)
    assert live.heartbeat_age_seconds == 5 and live.age_seconds == 300


def _scenario(*phases: dict[str, Any]) -> scenarios.Scenario:
    return scenarios.Scenario.model_validate({"name": "s", "phases": list(phases)})


CAP = preflight.Capacity(gpus=800, held_by_others=0, largest_node=8)


def test_a_demand_within_the_free_gpus_passes() -> None:
    sc = _scenario({"name": "p", "kind": "pods", "count": 800})
    assert preflight.problems(sc, CAP) == []


def test_more_pods_than_free_gpus_is_refused_with_the_figures() -> None:
    sc = _scenario({"name": "p", "kind": "pods", "count": 1000})
    assert preflight.problems(sc, CAP) == [
        "phase p: needs 1000 GPUs at once; the fleet has 800 free; "
        "at least 125 nodes of 8 GPUs would hold it"
    ]
    # The README's figure: 10,000 one-GPU pods need 1,250 eight-GPU nodes.
    ten_k = _scenario({"name": "p", "kind": "pods", "count": 10000})
    (line,) = preflight.problems(ten_k, CAP)
    assert line.endswith("; at least 1,250 nodes of 8 GPUs would hold it"), line
    held = preflight.Capacity(gpus=800, held_by_others=133, largest_node=8)
    small = _scenario({"name": "p", "kind": "pods", "count": 700})
    assert preflight.problems(small, held) == [
        "phase p: needs 700 GPUs at once; the fleet has 667 free "
        "(133 of its 800 held by other runs); at least 105 nodes of 8 GPUs would hold it"
    ]


def test_earlier_phases_keep_their_gpus_unless_they_complete() -> None:
    fill = {"name": "fill", "kind": "jobs", "count": 700}
    churn = {"name": "churn", "kind": "jobs", "count": 200, "wait": "complete", "completions": 2}
    more = {"name": "more", "kind": "pods", "count": 100}
    found = preflight.problems(_scenario(fill, churn, more), CAP)
    assert found == [
        "phase churn: needs 900 GPUs at once, 700 of them held by earlier phases; "
        "the fleet has 800 free; at least 113 nodes of 8 GPUs would hold it"
    ]
    # churn completes, so `more` only adds to fill's 700
    assert preflight.problems(_scenario(fill, more), CAP) == []


def test_a_pod_larger_than_any_node_is_refused() -> None:
    sc = _scenario({"name": "big", "kind": "pods", "count": 1, "claim": {"gpus": 16}})
    assert preflight.problems(sc, CAP) == [
        "phase big: each pod asks 16 GPUs, no fleet node has more than 8"
    ]


def test_a_settled_probe_means_to_saturate() -> None:
    probe = {"name": "probe", "kind": "pods", "count": 2000, "wait": "settled"}
    assert preflight.probes_saturation(_scenario(probe))
    assert not preflight.probes_saturation(_scenario({"name": "p", "kind": "pods", "count": 1}))


def test_device_plugin_phases_ask_no_dra_gpus() -> None:
    dp = {"name": "dp", "kind": "pods", "count": 5000, "claim": {"device_plugin": True}}
    assert preflight.problems(_scenario(dp), CAP) == []


def test_one_gpu_is_said_in_the_singular() -> None:
    sc = _scenario({"name": "one", "kind": "pods", "count": 1, "claim": {"gpus": 1}})
    assert preflight.problems(sc, preflight.Capacity(gpus=0, held_by_others=0, largest_node=0)) == [
        "phase one: each pod asks 1 GPU, no fleet node has more than 0",
        "phase one: needs 1 GPU at once; the fleet has 0 free",
    ]


def test_a_gang_larger_than_the_free_fleet_is_refused_with_its_numbers() -> None:
    gang = {
        "name": "gang",
        "kind": "jobs",
        "count": 1,
        "parallelism": 64,
        "completions": 64,
        "gang": True,
        "claim": {"gpus": 8, "nics": 8},
    }
    small = preflight.Capacity(gpus=400, held_by_others=0, largest_node=8)
    assert preflight.problems(_scenario(gang), small) == [
        "phase gang: one gang needs 64 pods x 8 GPUs = 512 GPUs at once; the fleet has 400 free"
    ]
    assert preflight.problems(_scenario(gang), CAP) == []


def test_a_compute_share_no_fleet_gpu_admits_is_refused_with_the_numbers() -> None:
    sc = _scenario({"name": "p", "kind": "pods", "count": 2, "claim": {"compute": "1500m"}})
    fractional = preflight.Capacity(gpus=8, held_by_others=0, largest_node=8, compute_max=1000)
    assert preflight.problems(sc, fractional) == [
        "phase p: compute=1500m (1500m) is more than any fleet GPU's request policy lets one "
        "claim take (1000m at most)"
    ]
    (line,) = preflight.problems(sc, CAP)  # whole GPUs only: nothing publishes compute
    assert "no fleet GPU publishes compute capacity" in line
    # Within the max it passes (below min or off a step the allocator rounds up).
    ok = _scenario({"name": "p", "kind": "pods", "count": 2, "claim": {"compute": "0.25"}})
    assert preflight.problems(ok, fractional) == []
