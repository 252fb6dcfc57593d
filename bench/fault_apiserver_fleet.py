"""Fault benchmark: kube-apiserver restarted while `fleet apply` writes N dgx-h100 nodes.

`fleet apply --profile dgx-h100 --nodes N` runs as a child process; once `--at` of the nodes
exist, kube-apiserver is stopped (SIGTERM, SIGKILL after 5 s) and started again. Figures:
apply wall time and exit code, the outage (stop until the server answers a read again), and
whether the fleet converged to exactly the spec (every node, one slice per node and driver,
no duplicate or orphan slice). `--baseline` first times the same apply without the fault.

    .venv/bin/python bench/fault_apiserver_fleet.py --cluster NAME --nodes 5000

Needs the local cluster (`testbed --name NAME up`); restarting its API server disturbs
everything else using that cluster, so give it a cluster of its own. The fleet is deleted
afterwards (also on Ctrl-C) unless `--keep`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from common import add_cluster_flags, running_cluster, tool  # bench/ is on sys.path

from fleet import audit, layout
from fleet.spec import for_profile
from testbed.cluster import local
from testbed.kube import errors, resources
from testbed.kube.client import ClientSettings, Kube


async def _fleet(kubeconfig: str, *args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    return await asyncio.create_subprocess_exec(
        tool("fleet"),
        *args,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def _answering(kube: Kube, within: float = 300.0) -> float:
    """When the API server answers a read from storage (monotonic seconds)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(errors.KubeError):
            await kube.request("GET", "/api/v1/namespaces/default", retry=False)
            return time.monotonic()
        await asyncio.sleep(0.1)
    raise SystemExit(f"the API server did not come back within {within:.0f}s")


async def _node_count(kube: Kube, selector: str) -> int:
    with contextlib.suppress(errors.KubeError):
        return len((await kube.list(resources.NODES, label_selector=selector)).items)
    return 0


async def _delete(kubeconfig: str, name: str) -> None:
    proc = await _fleet(kubeconfig, "delete", "--name", name, "--timeout", "900")
    await proc.communicate()


async def _apply(
    kube: Kube, cluster: local.LocalCluster, nodes: int, at: float | None, name: str
) -> dict[str, Any]:
    """One `fleet apply`; with `at`, restart the API server once that share of nodes exist."""
    kubeconfig = str(cluster.config.kubeconfig)
    selector = layout.fleet_selector(name)
    args = ("apply", "--profile", "dgx-h100", "--nodes", str(nodes), "--name", name)
    started = time.monotonic()
    proc = await _fleet(kubeconfig, *args, "--timeout", "1800")
    assert proc.stderr is not None
    stderr = asyncio.create_task(proc.stderr.read())
    out: dict[str, Any] = {"nodes": nodes}
    if at is not None:
        while (before := await _node_count(kube, selector)) < nodes * at:
            if proc.returncode is not None:
                break
            await asyncio.sleep(0.5)
        out["restart_at_nodes"] = before
        out["restart_after_s"] = round(time.monotonic() - started, 1)
        stop = time.monotonic()
        await asyncio.to_thread(cluster.restart_component, "kube-apiserver")
        out["outage_s"] = round(await _answering(kube) - stop, 1)
        out["control_plane_alive"] = all(c.pid for c in cluster.status().components)
    out["exit_code"] = await proc.wait()
    out["apply_wall_s"] = round(time.monotonic() - started, 1)
    lines = (await stderr).decode(errors="replace").replace("\r", "\n").splitlines()
    out["resumed_passes"] = sum("resuming when it answers" in ln for ln in lines)
    out["last_stderr"] = next((ln for ln in reversed(lines) if ln.strip()), "")[:300]
    fleet = for_profile("dgx-h100", nodes, name=name)
    listed_nodes, listed_slices = await asyncio.gather(
        kube.list(resources.NODES, label_selector=selector),
        kube.list(resources.RESOURCE_SLICES, label_selector=selector),
    )
    result = audit.audit(layout.desired_nodes(fleet), listed_nodes.items, listed_slices.items)
    out["converged"] = result.converged
    out["audit"] = result.summary()
    return out


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    cluster, _ = running_cluster(args.cluster)
    kubeconfig = str(cluster.config.kubeconfig)
    results = []
    async with await Kube.connect(
        kubeconfig=kubeconfig, settings=ClientSettings(qps=200, burst=400)
    ) as kube:
        runs: list[tuple[str, float | None]] = [("restart", args.at)]
        if args.baseline:
            runs.insert(0, ("baseline", None))
        for label, at in runs:
            name = f"fault-{secrets.token_hex(3)}"
            load = os.getloadavg()
            try:
                r = await _apply(kube, cluster, args.nodes, at, name)
            finally:
                if not args.keep:
                    await _delete(kubeconfig, name)
            r["run"] = label
            r["loadavg_before"] = [round(x, 2) for x in load]
            r["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
            results.append(r)
            print(json.dumps(r), flush=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cluster_flags(p, extender_port=False)
    p.add_argument("--nodes", type=int, default=5000, help="fleet size (5000)")
    p.add_argument(
        "--at", type=float, default=0.2, help="restart once this share of nodes exist (0.2)"
    )
    p.add_argument("--baseline", action="store_true", help="first, the same apply unfaulted")
    p.add_argument("--keep", action="store_true", help="leave the fleets in place")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    results = asyncio.run(main_async(args))
    for r in results:
        extra = (
            f"; restart at {r['restart_at_nodes']}/{r['nodes']} nodes ({r['restart_after_s']} s "
            f"in), API down {r['outage_s']} s, control plane alive {r['control_plane_alive']}, "
            f"passes resumed {r['resumed_passes']}"
            if r["run"] == "restart"
            else ""
        )
        print(
            f"{r['run']}: {r['nodes']} nodes, apply exit {r['exit_code']} in "
            f"{r['apply_wall_s']} s{extra}; converged {'yes' if r['converged'] else 'NO'} "
            f"({r['audit']}); load {r['loadavg_before']} -> {r['loadavg_after']}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    sys.exit(0 if all(r["converged"] and r["exit_code"] == 0 for r in results) else 1)


if __name__ == "__main__":
    main()
