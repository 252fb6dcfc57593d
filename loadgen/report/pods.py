"""`pods.csv`: one row per pod with every timestamp (epoch seconds: `created`, `scheduled`
and `running` are CL2's watch-receive times, the `_server` ones the API server's) and its
claim's allocation and GPU-NIC alignment, for offline analysis and for checking loadgen
against an independent watcher."""

from __future__ import annotations

import csv
from pathlib import Path

from loadgen import outcome, placement, records

COLUMNS = (
    "pod",
    "phase",
    "job",
    "node",
    "created_server",
    "created",
    "scheduled",
    "running",
    "running_server",
    "finished",
    "succeeded",
    "claim_allocated",
    "gpu_nic_pairs",
    "pcie_aligned_pairs",
    "numa_aligned_pairs",
)


def write(result: outcome.RunResult, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "pods.csv"
    claims: dict[str, records.ClaimRecord] = {
        c.pod: c for c in result.records.claims.values() if c.pod is not None
    }

    def wall(t: float | None) -> str:
        return f"{result.wall(t):.6f}" if t is not None else ""

    def server(t: float | None) -> str:
        return f"{t:.0f}" if t is not None else ""

    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for name, r in sorted(result.records.pods.items()):
            c = claims.get(name)
            pairs = min(len(c.gpu_pcie), len(c.nic_pcie)) if c else 0
            w.writerow(
                [
                    name,
                    r.phase,
                    r.job or "",
                    r.node,
                    server(r.created_server),
                    wall(r.created),
                    wall(r.scheduled),
                    wall(r.running),
                    server(r.running_server),
                    wall(r.finished),
                    int(r.succeeded),
                    wall(c.allocated) if c else "",
                    pairs,
                    placement.aligned_pairs(c.gpu_pcie, c.nic_pcie) if c else 0,
                    placement.aligned_pairs(c.gpu_numa, c.nic_numa) if c else 0,
                ]
            )
    return path
