"""What the bench scripts share, so that no bench imports another: this environment's
console scripts, a fleet applied with `fleet apply`, a loadgen run through a second scheduler
and waiting until loadgen's namespaces are gone; the local cluster or exit; a rendered fleet
served offline by `extender serve --from-files`, with the scheduler's pod and the figures
over its calls.

Imported by the bench scripts beside it (`python bench/NAME.py` puts this folder on
sys.path). Benches use the services' public APIs and `experiment`, never `tests`
(import-linter checks it)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml

from experiment.sites.children import tool
from fleet.render import render_profile
from testbed import vocab
from testbed.cluster import local, ports, processes, second_scheduler
from testbed.kube import resources
from testbed.kube.client import Kube

__all__ = [
    "add_cluster_flags",
    "apply_fleet",
    "bound_holding",
    "build_objects",
    "loadgen_pods",
    "pod",
    "request_histogram",
    "running_cluster",
    "serving_files",
    "settle",
    "tool",
]

# -- a fleet and loadgen runs on the local cluster ---------------------------------------------


def apply_fleet(spec: dict[str, Any], work: Path, env: dict[str, str]) -> None:
    """`fleet apply` of the Fleet `spec` (written to `work`/fleet.yaml); idempotent."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / "fleet.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    subprocess.run(
        [tool("fleet"), "apply", "-f", str(path)], env=env, check=True, stdout=subprocess.DEVNULL
    )


def add_cluster_flags(ap: argparse.ArgumentParser, *, extender_port: bool = True) -> None:
    """`--cluster` (the local cluster's name) and, with `extender_port`, `--extender-port`
    (where its scheduler calls the extender): the flags `running_cluster` takes."""
    ap.add_argument("--cluster", default=local.DEFAULT_NAME, help="local cluster name")
    if extender_port:
        ap.add_argument(
            "--extender-port",
            type=int,
            default=vocab.EXTENDER_DEFAULT_PORT,
            help="the cluster's extender port",
        )


def running_cluster(
    name: str, extender_port: int = vocab.EXTENDER_DEFAULT_PORT
) -> tuple[local.LocalCluster, dict[str, str]]:
    """The running local cluster `name` and an environment whose KUBECONFIG is its own; exits
    the bench with how to start it if it is not running."""
    cluster = local.LocalCluster(local.ClusterConfig(name=name, extender_port=extender_port))
    if not cluster.status().ready:
        sys.exit(f"cluster {name!r} is not running (testbed --name {name} up)")
    return cluster, {**os.environ, "KUBECONFIG": str(cluster.config.kubeconfig)}


def loadgen_pods(
    scheduler: second_scheduler.SecondScheduler,
    fleet: str,
    out: Path,
    *params: str,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    what: str = "loadgen",
    require_success: bool = False,
) -> dict[str, Any]:
    """`loadgen run pods PARAMS` on `fleet`'s nodes through `scheduler` (its /metrics scraped
    as `scheduler`), with loadgen's `extra` flags; its result.json. Exits the bench if loadgen
    wrote no result (or, with `require_success`, exited non-zero: without it a run that left
    pods unplaced still counts, as its result says how many)."""
    cmd = [tool("loadgen"), "run", "pods", *params, "--node-selector"]
    cmd += [f"{vocab.LABEL_FLEET}={fleet}", "--scheduler-name", scheduler.name]
    cmd += ["--scrape", f"scheduler={scheduler.metrics_url}", *extra]
    cmd += ["--output-dir", str(out), "-q"]
    result = out / "result.json"
    result.unlink(missing_ok=True)  # a result left by an earlier run is never this run's
    code = subprocess.run(cmd, check=False, env=env).returncode
    if not result.is_file() or (require_success and code != 0):
        sys.exit(f"{what}: loadgen run failed (exit {code}); see {out}")
    doc: dict[str, Any] = json.loads(result.read_text())
    return doc


def request_histogram(text: str, verb: str) -> dict[str, float]:
    """The extender's `verb` calls in its /metrics `text`: `sum` and `count` of
    extender_request_duration_seconds, each cumulative bucket under its bound in seconds (as
    a string, `+Inf` last) and `outcome <name>` per outcome of extender_requests_total."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if f'verb="{verb}"' not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("extender_requests_total{"):
            out["outcome " + name.split('outcome="', 1)[1].split('"', 1)[0]] = float(value)
        elif name.startswith("extender_request_duration_seconds_bucket"):
            out[name.split('le="', 1)[1].split('"', 1)[0]] = float(value)
        elif name.startswith("extender_request_duration_seconds_sum"):
            out["sum"] = float(value)
        elif name.startswith("extender_request_duration_seconds_count"):
            out["count"] = float(value)
    return out


def bound_holding(before: dict[str, float], after: dict[str, float], share: float) -> float:
    """The smallest bucket bound (seconds) holding `share` of the calls between two
    `request_histogram`s: the server's own p(100 x share) is at most this (inf: none)."""
    count = after.get("count", 0.0) - before.get("count", 0.0)
    for le, key in sorted((float(k), k) for k in after if k == "+Inf" or k[0].isdigit()):
        if count and after[key] - before.get(key, 0.0) >= share * count:
            return le
    return math.inf


async def _runs_left(kubeconfig: Path) -> int:
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        listed = await kube.list(resources.NAMESPACES, label_selector=vocab.LABEL_RUN)
        return len(listed.items)


def settle(kubeconfig: Path, timeout: float = 600) -> None:
    """Wait until no loadgen namespace is left (a run's namespace is still being deleted
    when loadgen returns): the deletions' watch events would land in the next arm's window
    and make its CPU per pod depend on what ran before it."""
    deadline = time.monotonic() + timeout
    while asyncio.run(_runs_left(kubeconfig)):
        if time.monotonic() > deadline:
            sys.exit(f"loadgen namespaces still present after {timeout:.0f}s")
        time.sleep(2)


# -- a rendered fleet served offline -----------------------------------------------------------

NS = "bench"


def _claims(nodes: list[str], rng: random.Random) -> list[dict[str, Any]]:
    """One claim per node holding a random subset of its GPUs and NICs (0..8 of each)."""
    out = []
    for name in nodes:
        gpus = rng.sample(range(8), rng.randint(0, 8))
        nics = rng.sample(range(8), rng.randint(0, len(gpus)))
        if not gpus:
            continue
        results = [
            {"request": "g", "driver": vocab.GPU_DRIVER, "pool": name, "device": f"gpu-{i}"}
            for i in gpus
        ]
        out.append(
            {
                "apiVersion": vocab.RESOURCE_API_VERSION,
                "kind": "ResourceClaim",
                "metadata": {"name": f"busy-{name}", "namespace": NS},
                "spec": {"devices": {"requests": []}},
                "status": {"allocation": {"devices": {"results": results}}},
                "_nics": nics,
            }
        )
    return out


def _nic_names(slices: list[dict[str, Any]]) -> dict[str, list[str]]:
    by_node: dict[str, list[str]] = {}
    for s in slices:
        if s["spec"]["driver"] == vocab.NIC_DRIVER:
            by_node[s["spec"]["nodeName"]] = [d["name"] for d in s["spec"]["devices"]]
    return by_node


CEL_CLASSES = {
    vocab.CLASS_GPU: (
        f"device.driver == '{vocab.GPU_DRIVER}' && "
        f"device.capacity['{vocab.GPU_DRIVER}'].memory.compareTo(quantity('40Gi')) >= 0 && "
        f"device.attributes['{vocab.GPU_DRIVER}'].driverVersion.isGreaterThan(semver('535.0.0'))"
    ),
    vocab.CLASS_NIC: f"device.driver == '{vocab.NIC_DRIVER}'",
    vocab.CLASS_RDMA_NIC: (
        f"device.driver == '{vocab.NIC_DRIVER}' && device.attributes['{vocab.NIC_DRIVER}'].rdma "
        f"&& device.attributes['{vocab.NIC_DRIVER}'].mtu >= 4096"
    ),
}


def build_objects(
    nodes: int, seed: int, cel_classes: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    rendered = render_profile("dgx-h100", nodes, name="bench", seed=seed)
    if cel_classes:
        for cls in rendered.device_classes:
            expr = CEL_CLASSES.get(cls["metadata"]["name"])
            if expr is not None:
                cls["spec"]["selectors"] = [{"cel": {"expression": expr}}]
    names = [n["metadata"]["name"] for n in rendered.nodes]
    rng = random.Random(seed)
    nic_names = _nic_names(rendered.slices)
    claims = _claims(names, rng)
    for c in claims:
        node = c["metadata"]["name"].removeprefix("busy-")
        for i in c.pop("_nics"):
            c["status"]["allocation"]["devices"]["results"].append(
                {
                    "request": "n",
                    "driver": vocab.NIC_DRIVER,
                    "pool": node,
                    "device": nic_names[node][i],
                }
            )
    pairs = 8
    requests = [
        {"name": f"gpu-{i}", "exactly": {"deviceClassName": vocab.CLASS_GPU}} for i in range(pairs)
    ] + [
        {"name": f"nic-{i}", "exactly": {"deviceClassName": vocab.CLASS_RDMA_NIC}}
        for i in range(pairs)
    ]
    template = {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "pairs", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": requests}}},
    }
    siblings = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"sib-{i}",
                "namespace": NS,
                "labels": {vocab.LABEL_JOB_NAME: "train"},
            },
            "spec": {"nodeName": names[i * 97 % len(names)]},
            "status": {"phase": "Running"},
        }
        for i in range(8)
    ]
    objs = [*rendered.objects(), *claims, template, *siblings]
    return objs, names


def pod(require_alignment: bool) -> dict[str, Any]:
    annotations = {vocab.ANNOTATION_REQUIRE_ALIGNMENT: "pcie-root"} if require_alignment else {}
    return {
        "metadata": {
            "name": "p",
            "namespace": NS,
            "uid": "u",
            "labels": {vocab.LABEL_JOB_NAME: "train"},
            "annotations": annotations,
        },
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {}}],
            "resourceClaims": [{"name": "pairs", "resourceClaimTemplateName": "pairs"}],
        },
        "status": {},
    }


@contextlib.asynccontextmanager
async def serving_files(objs: list[dict[str, Any]]) -> AsyncIterator[tuple[str, int]]:
    """`extender serve --from-files` on a free loopback port with `objs`, ready (synced)
    before yielding its base URL and pid; stopped on the way out."""
    port = ports.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps({"kind": "List", "items": objs}))
        # -P: no current directory ahead of PYTHONPATH (a bench may measure another tree).
        argv = [sys.executable, "-P", "-c", "from extender.cli import main; main()"]
        argv += ["serve", "--from-files", str(path), "--port", str(port), "--log-level", "warning"]
        # Waits (blocking: nothing else runs yet) until the extender has synced the files.
        log = Path(tmp) / "extender.log"
        with processes.service("the extender", argv, port, log=log, timeout=300) as proc:
            yield f"http://127.0.0.1:{port}", proc.pid
