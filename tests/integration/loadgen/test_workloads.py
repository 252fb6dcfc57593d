"""Small runs of each workload on the real cluster, pinned to a private fleet."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadgen import records, runner, scenarios, stats
from loadgen.report import document, perfdata
from testbed import vocab
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support.private_fleet import Fleet, namespace_gone

pytestmark = pytest.mark.cluster


def _ordered(rec: records.PodRecord) -> bool:
    assert rec.scheduled is not None and rec.running is not None
    return rec.created <= rec.scheduled <= rec.running


async def test_pods_each_get_a_claim_run_and_are_cleaned_up(
    kube: Kube, fleet: Fleet, tmp_path: Path
) -> None:
    sc = scenarios.load("pods", {"pods": "12", **fleet.params()})
    res = await runner.run(kube, sc, fleet.settings(qps=30))
    assert res.error is None and not res.interrupted and res.cleaned_up
    tr = res.records
    assert len(tr.pods) == 12
    assert tr.total.running == 12 and tr.total.scheduled == 12
    assert all(_ordered(p) for p in tr.pods.values())
    assert {p.node for p in tr.pods.values()} <= set(fleet.nodes)
    assert len(tr.claims) == 12 and all(c.allocated is not None for c in tr.claims.values())
    assert {c.pod for c in tr.claims.values()} == set(tr.pods)

    doc = document.build(res)
    assert doc.counts.pods_running == 12 and doc.counts.objects_created == 12
    assert {k: v.count for k, v in doc.latency_ms.items()} == dict.fromkeys(stats.PHASES, 12)
    assert doc.fleet.nodes == 4 and doc.fleet.gpus == 32
    assert doc.fleet.peak_gpus_allocated == 12
    # CL2's create is the first event's receive time, so a watch that lags can make a pod
    # look faster than the server's timestamps allow: counted and shown, not hidden.
    assert doc.server_check.checked == 12 and doc.server_check.violations <= 12
    # The outputs validate against their schemas after a round trip through files.
    assert document.load(document.write(doc, tmp_path)) == doc
    files = perfdata.write(doc, tmp_path)
    assert {f.name.split("_")[0] for f in files} == {
        *perfdata.STARTUP_SUMMARIES,
        "BenchmarkPerfScheduling",
    }
    # 12 pods may all be scheduled within scheduler_perf's first sampled second: then there is
    # no throughput sample, and its file, like scheduler_perf's, has no data item.
    sampled = any(doc.throughput.model_dump().values())
    for f in files:
        pd = perfdata.PerfData.model_validate_json(f.read_text())
        if f.name.startswith("BenchmarkPerfScheduling"):
            assert len(pd.dataItems) == (1 if sampled else 0), f.name
        else:
            assert pd.dataItems or f.name.startswith("Stateful"), f.name
    await namespace_gone(kube, res.run_id)


async def test_jobs_run_one_pod_each(kube: Kube, fleet: Fleet) -> None:
    sc = scenarios.load("jobs", {"jobs": "6", "gpus": "2", **fleet.params()})
    res = await runner.run(kube, sc, fleet.settings(qps=20))
    assert res.error is None
    pods = res.records.pods.values()
    assert len(pods) == 6 and all(p.running is not None for p in pods)
    assert {p.job for p in pods} == {f"jobs-{i:06d}" for i in range(6)}
    assert document.build(res).fleet.peak_gpus_allocated == 12


async def test_churn_jobs_complete_every_completion(kube: Kube, fleet: Fleet) -> None:
    params = {"jobs": "3", "completions": "2", "run_time": "1s", **fleet.params()}
    res = await runner.run(kube, scenarios.load("churn", params), fleet.settings(qps=10))
    assert res.error is None
    counts = records.phase_counts(res.records, "churn")
    assert counts.succeeded == 6 and counts.failed == 0
    assert all(p.finished is not None and p.running is not None for p in res.records.pods.values())
    assert all(p.running <= p.finished for p in res.records.pods.values())  # type: ignore[operator]


async def test_waves_start_only_after_the_previous_wave_runs(kube: Kube, fleet: Fleet) -> None:
    params = {"waves": "3", "size": "4", **fleet.params()}
    res = await runner.run(kube, scenarios.load("waves", params), fleet.settings(qps=50))
    assert res.error is None and res.phases[0].waves == 3
    recs = res.records.pods
    assert len(recs) == 12
    for wave in (1, 2):
        previous = [recs[f"waves-{i:06d}"] for i in range((wave - 1) * 4, wave * 4)]
        current = [recs[f"waves-{i:06d}"] for i in range(wave * 4, wave * 4 + 4)]
        last_running = max(p.running for p in previous)  # type: ignore[type-var]
        assert min(p.created for p in current) >= last_running


async def test_gangs_get_aligned_gpu_nic_pairs_and_report_their_span(
    kube: Kube, fleet: Fleet
) -> None:
    params = {"gangs": "2", "size": "2", **fleet.params()}
    res = await runner.run(kube, scenarios.load("gang", params), fleet.settings(qps=10))
    assert res.error is None
    doc = document.build(res)
    assert doc.counts.pods_running == 4
    assert doc.claims.allocated == 4
    # matchAttribute pcieRoot per pair: every pair shares a root, and here a NUMA node too.
    assert doc.claims.gpu_nic_pairs == 32
    assert doc.claims.pcie_aligned_pairs == 32 and doc.claims.numa_aligned_pairs == 32
    assert [(g.pods, g.nodes) for g in doc.gangs] == [(2, 2), (2, 2)]
    # Spans agree with the labels of the nodes each gang's pods landed on.
    for g in doc.gangs:
        nodes = {p.node for p in res.records.pods.values() if p.gang == g.name}
        labels = [(await kube.get(r.NODES, n))["metadata"]["labels"] for n in nodes]
        assert g.racks == len({lb[vocab.LABEL_RACK] for lb in labels})
        assert g.blocks == len({lb[vocab.LABEL_BLOCK] for lb in labels})


async def test_cl2_dra_is_sized_from_the_fleet(kube: Kube, fleet: Fleet) -> None:
    params = {"completions": "2", "run_time": "1s", "fill_qps": "50", "churn_qps": "20"}
    sc = scenarios.load("cl2-dra", params | fleet.params())
    res = await runner.run(kube, sc, fleet.settings())
    assert res.error is None
    fill, churn = res.scenario.phases
    assert (fill.count, churn.count) == (28, 4)  # 90 % of 32 GPUs, then the 4 left free
    assert records.phase_counts(res.records, "fill").running == 28
    assert records.phase_counts(res.records, "churn").succeeded == 8
    doc = document.build(res)
    assert [p.name for p in doc.phases] == ["fill", "churn"]
    assert doc.fleet.peak_allocation_ratio == 1.0


async def test_closed_loop_keeps_at_most_max_in_flight_pods_pending(
    kube: Kube, fleet: Fleet
) -> None:
    sc = scenarios.load("pods", {"pods": "8", **fleet.params()})
    res = await runner.run(kube, sc, fleet.settings(arrival="closed", max_in_flight=2))
    assert res.error is None
    recs = [res.records.pods[f"pods-{i:06d}"] for i in range(8)]
    running = sorted(r.running for r in recs if r.running is not None)
    assert len(running) == 8
    # Pod k is only created once k - 1 of the earlier pods run (at most 2 pending).
    for k in range(2, 8):
        assert recs[k].created >= running[k - 2]


async def test_poisson_arrivals_create_exactly_the_requested_objects(
    kube: Kube, fleet: Fleet
) -> None:
    sc = scenarios.load("pods", {"pods": "15", **fleet.params()})
    res = await runner.run(kube, sc, fleet.settings(arrival="poisson", qps=40, seed=3))
    assert res.error is None
    st = res.phases[0].stats
    assert (st.requested, st.created, st.failed) == (15, 15, 0)
    assert sorted(res.records.pods) == [f"pods-{i:06d}" for i in range(15)]


async def test_pods_no_scheduler_can_place_fail_the_phase_as_a_stall(
    kube: Kube, fleet: Fleet
) -> None:
    # No timeout: the phase ends because nothing moves, and says why the pods wait.
    params = {"pods": "2", "min_memory": "1000Gi", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(stall_timeout=3.0))
    assert res.error is not None and res.error.startswith(
        "phase pods: stalled: 0 of 2 pods Running; for 3s no pod was scheduled"
    ), res.error
    assert "2 pending, 2 of them: " in res.error and "--stall-timeout" in res.error
    assert res.phases[0].timed_out and res.cleaned_up
    await namespace_gone(kube, res.run_id)


async def test_unschedulable_pods_time_out_as_a_run_error_and_are_cleaned_up(
    kube: Kube, fleet: Fleet
) -> None:
    # No GPU of the fleet has 1000Gi: the CEL selector matches nothing, pods stay Pending.
    params = {"pods": "2", "min_memory": "1000Gi", **fleet.params()}
    res = await runner.run(kube, scenarios.load("pods", params), fleet.settings(timeout=3.0))
    assert res.error == "phase pods: 0 of 2 pods Running after 3s"
    assert res.phases[0].timed_out and not res.interrupted and res.cleaned_up
    assert res.records.total.seen == 2 and res.records.total.scheduled == 0
    doc = document.build(res)
    assert doc.latency_ms["pod_startup"].count == 0
    await namespace_gone(kube, res.run_id)
