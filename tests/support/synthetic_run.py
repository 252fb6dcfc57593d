"""A synthetic run result, as plain data, for the report tests: `pods` pods created 0.1 s
apart from t=100, each scheduled half-way and Running `startup_ms` after its create, with
2 GPUs + 2 NICs of which half the claims pair both on one PCIe root."""

from __future__ import annotations

from loadgen import outcome, records, scenarios


def run_result(startup_ms: float = 1000.0, pods: int = 10) -> outcome.RunResult:
    sc = scenarios.load("pods", {"pods": str(pods), "gpus": "2", "nics": "2"})
    rec = records.new("loadgen-r1")
    for i in range(pods):
        t0 = 100.0 + i * 0.1
        name = f"pods-{i:06d}"
        rec.pods[name] = records.PodRecord(
            phase="pods",
            job=None,
            gang=None,
            created=t0,
            created_server=5000.0,
            scheduled=t0 + startup_ms / 2000,
            running=t0 + startup_ms / 1000,
            running_server=5001.0,
            node=f"n{i % 2}",
        )
        rec.claims[f"c{i}"] = records.ClaimRecord(
            pod=name,
            seen=t0,
            allocated=t0 + 0.05,
            gpu_pcie=["a", "b"],
            nic_pcie=["a", "c"] if i % 2 else ["b", "a"],
            gpu_numa=["0", "0"],
            nic_numa=["0", "0"],
        )
    c = records.phase_counts(rec, "pods")
    c.seen = c.scheduled = c.running = pods
    rec.total = c
    rec.timeline = [
        records.Sample(100.0, 0, 0, 0, 0, 0),
        records.Sample(101.0, pods, pods, pods, 0, 2 * pods),
    ]
    res = outcome.RunResult(
        run_id="r1",
        namespace="loadgen-r1",
        scenario=sc,
        settings=outcome.Settings(run_id="r1"),
        records=rec,
        started_wall=1_700_000_000.0,
        started_mono=100.0,
        finished_mono=102.0,
        fleet_nodes=2,
        fleet_gpus=40,
    )
    pr = outcome.PhaseResult(phase=sc.phases[0], started=100.0, created=101.0, finished=102.0)
    pr.stats.requested = pr.stats.created = pods
    res.phases.append(pr)
    return res
