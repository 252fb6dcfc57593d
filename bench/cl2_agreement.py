"""Benchmark: does loadgen measure pod startup as ClusterLoader2 does? Both watch the same pods.

Builds ClusterLoader2 from its pinned Go module (tools/k8s/clusterloader2.sh, cached beside
the control plane), then runs its DRA steady-state test (testing/dra: fill 90 % of the GPUs
with long-running one-pod Jobs, then churn the rest with Jobs of 10 completions) on a fresh
fleet of dgx-h100 nodes, while two `loadgen observe` processes watch the same pods (one per
CL2 measurement: `job-type=long-running` for FastFill, `job-type=short-lived` for Churn).
Then each phase's p50/p90/p99 (create_to_schedule, schedule_to_run, pod_startup) is held
against CL2's own PodStartupLatency PerfData: agreement is within max(20 ms, 5 %).

CL2's test config is read from the module and patched at run time, never kept here: its
`dependencies` (an image-based example driver) removed, its namespaces given a known prefix
for `loadgen observe --namespace-prefix`, and its two Job templates given the kwok
toleration, the fleet's node selector and kwok's completion delay (the template's own
sleep). A DeviceClass `gpu.example.com` (the class the test's claim template asks for)
selects the fleet's whole GPUs.

    .venv/bin/python bench/cl2_agreement.py --nodes 20
    .venv/bin/python bench/cl2_agreement.py --nodes 50 --cl2-source ../perf-tests

Exit 0 when every row agrees, 1 when one misses or a tool failed, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from loadgen import agreement, stats
from loadgen.report import document
from testbed import vocab

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
BUILD_CL2 = REPO / "tools" / "k8s" / "clusterloader2.sh"
BUILD_KUBE = REPO / "tools" / "k8s" / "build.sh"
CL2_TEST = "testing/dra"
DEVICE_CLASS = "gpu.example.com"  # what testing/dra's ResourceClaimTemplate asks for
GPUS_PER_NODE = 8  # dgx-h100, CL2's default CL2_GPUS_PER_NODE
FILL_PERCENTAGE = 90
COMPLETIONS = 10  # testing/dra's churn Jobs
# CL2 measurement identifier -> the label selector of the pods it measures.
MEASUREMENTS = {
    "FastFillPodStartupLatency": "job-type=long-running",
    "ChurnPodStartupLatency": "job-type=short-lived",
}


MARKER = ".cl2-agreement"
"""In an --out directory this bench made (it empties only such a directory)."""


def expected_pods(nodes: int, per_namespace: int) -> dict[str, int]:
    """The pods testing/dra creates per measurement (its sizing, integer division included)."""
    namespaces = nodes // min(nodes, per_namespace)
    gpus = GPUS_PER_NODE * nodes
    fill_per_namespace = gpus * FILL_PERCENTAGE // 100 // namespaces
    churn_jobs_per_namespace = (gpus - fill_per_namespace * namespaces) // namespaces
    return {
        "FastFillPodStartupLatency": fill_per_namespace * namespaces,
        "ChurnPodStartupLatency": churn_jobs_per_namespace * namespaces * COMPLETIONS,
    }


# -- patching CL2's test at run time ------------------------------------------------------


def patch_config(text: str, prefix: str) -> str:
    """testing/dra/config.yaml without its `dependencies:` block, its namespaces named
    `<prefix>-1..N`."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    for line in lines:
        if re.match(r"^dependencies:\s*$", line):
            skipping = True
            continue
        if skipping and re.match(r"^[A-Za-z_]\w*:", line):  # the next top-level key ends it
            skipping = False
        if skipping:
            continue
        out.append(line)
        if re.match(r"^namespace:\s*$", line):
            out.append(f"  prefix: {prefix}\n")
    patched = "".join(out)
    if "dependencies:" in patched or f"prefix: {prefix}" not in patched:
        raise SystemExit(f"error: {CL2_TEST}/config.yaml has an unexpected shape; not patched")
    return patched


def patch_job(text: str, fleet: str) -> str:
    """A testing/dra Job template with kwok's completion delay (its own `{{.Sleep}}`) on the
    pod, the kwok toleration and the fleet's node selector."""
    meta = re.search(r"^(\s+)template:\n(\s+)metadata:\n", text, re.M)
    policy = re.search(r"^(\s+)restartPolicy: Never\n", text, re.M)
    if meta is None or policy is None:
        raise SystemExit(f"error: a Job template of {CL2_TEST} has an unexpected shape")
    pad = policy.group(1)
    spec = (
        f"{pad}tolerations:\n"
        f"{pad}- key: {vocab.KWOK_TAINT_KEY}\n"
        f"{pad}  operator: Exists\n"
        f"{pad}  effect: NoSchedule\n"
        f"{pad}nodeSelector:\n"
        f"{pad}  {vocab.LABEL_FLEET}: {fleet}\n"
    )
    text = text[: policy.end()] + spec + text[policy.end() :]
    inner = meta.group(2) + "  "
    annotation = (
        f'{inner}annotations:\n{inner}  {vocab.KWOK_POD_COMPLETE_DELAY}: "{{{{.Sleep}}}}"\n'
    )
    return text[: meta.end()] + annotation + text[meta.end() :]


def device_class() -> str:
    gpu = vocab.GPU_DRIVER
    expr = f"device.driver == '{gpu}' && device.attributes['{gpu}'].type == 'gpu'"
    return (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
        f"metadata:\n  name: {DEVICE_CLASS}\n"
        f'spec:\n  selectors:\n  - cel:\n      expression: "{expr}"\n'
    )


# -- per pod: where a percentile's difference comes from -----------------------------------

_GO_UNIT = {"h": 3.6e6, "m": 6e4, "s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
_WORST = re.compile(r"\d+ worst (\w+) latencies: \[(.*)\]\s*$")
_ENTRY = re.compile(r"\{(\S+) (\S+)\}")


def go_duration_ms(text: str) -> float:
    """A Go time.Duration's String() (`1m2.5s`, `396.45ms`, `0s`) in ms."""
    parts = re.findall(r"([0-9.]+)(h|ms|m|s|us|µs|ns)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _GO_UNIT[u] for n, u in parts)


def cl2_worst(log: str) -> dict[str, dict[str, float]]:
    """Per phase, pod -> latency (ms) of the pods CL2 logs as its worst 100 (at --v=2): the
    tail its p90/p99 come from."""
    out: dict[str, dict[str, float]] = {}
    for line in log.splitlines():
        m = _WORST.search(line)
        if m is not None:
            for pod, value in _ENTRY.findall(m[2]):
                out.setdefault(m[1], {})[pod] = go_duration_ms(value)
    return out


def ours_per_pod(pods_csv: Path) -> dict[str, dict[str, float]]:
    """Per phase, pod -> loadgen's latency (ms), from an observer's pods.csv."""
    ends = {phase: agreement_ends(phase) for phase in agreement.PHASES}
    out: dict[str, dict[str, float]] = {phase: {} for phase in agreement.PHASES}
    with pods_csv.open() as f:
        for row in csv.DictReader(f):
            for phase, (a, b) in ends.items():
                if row[a] and row[b]:
                    out[phase][row["pod"]] = (float(row[b]) - float(row[a])) * 1000.0
    return out


def agreement_ends(phase: str) -> tuple[str, str]:
    """pods.csv columns of a phase's two ends (watch is run: CL2 sets both from one event)."""
    column = {"create": "created", "schedule": "scheduled", "run": "running", "watch": "running"}
    a, b = stats.PHASES[phase]
    return column[a], column[b]


def per_pod(cl2: dict[str, dict[str, float]], ours: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Per phase, over the pods in CL2's worst-100 list that loadgen measured too: how many,
    and the median / max of |loadgen - CL2| for the same pod (ms)."""
    out: dict[str, Any] = {}
    for phase in agreement.PHASES:
        diffs = sorted(
            abs(ours[phase][pod] - ms)
            for pod, ms in cl2.get(phase, {}).items()
            if pod in ours[phase]
        )
        if diffs:
            out[phase] = {
                "pods": len(diffs),
                "median_abs_diff_ms": round(stats.percentile(diffs, 50), 1),
                "max_abs_diff_ms": round(diffs[-1], 1),
            }
    return out


# -- running ------------------------------------------------------------------------------


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _build(cmd: list[str]) -> Path:
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.returncode)
    return Path(done.stdout.strip().splitlines()[-1])


def _observer(out: Path, prefix: str, selector: str, kubeconfig: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [str(BIN / "loadgen"), "observe", "--namespace-prefix", prefix + "-", "-l", selector,
         "--kubeconfig", kubeconfig, "--output-dir", str(out), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()  # "observing pods in ...": its watches have listed
    if "observing pods" not in line:
        proc.kill()
        raise SystemExit(f"error: loadgen observe did not start: {line.strip()}")
    return proc


def _versions(kubectl: str, env: dict[str, str], cl2_dir: Path) -> dict[str, str]:
    server = subprocess.run(
        [kubectl, "version", "-o", "json"], env=env, capture_output=True, text=True, check=False
    )
    try:
        kube = json.loads(server.stdout)["serverVersion"]["gitVersion"]
    except (ValueError, KeyError):
        kube = "unknown"
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return {
        "clusterloader2": (cl2_dir / "VERSION").read_text().strip(),
        "kubernetes": kube,
        "dra-testbed": rev.stdout.strip() or "unknown",
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=20, help="fleet size (dgx-h100, 8 GPUs each)")
    p.add_argument("--nodes-per-namespace", type=int, default=10)
    p.add_argument("--job-running-time", default="5s", help="churn pods' run time (CL2: 30s)")
    p.add_argument("--fill-qps", type=float, default=10.0)
    p.add_argument("--churn-qps", type=float, default=5.0)
    p.add_argument(
        "--cl2-source",
        type=Path,
        help="a kubernetes/perf-tests checkout (see tools/k8s/clusterloader2.sh)",
    )
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG", ""))
    p.add_argument("--out", type=Path, default=Path("results/bench-cl2-agreement"))
    args = p.parse_args()
    if args.nodes < 1 or args.nodes_per_namespace < 1 or not args.kubeconfig:
        p.error("--nodes and --nodes-per-namespace must be positive, and a kubeconfig given")
    marker = args.out / MARKER
    if args.out.exists() and any(args.out.iterdir()) and not marker.is_file():
        # It is emptied first: only ever a directory this bench made.
        p.error(f"--out {args.out} exists and is not this bench's output; give a new directory")
    env = {**os.environ, "KUBECONFIG": args.kubeconfig}
    cl2_dir = _build(
        [str(BUILD_CL2), *(["--source", str(args.cl2_source)] if args.cl2_source else [])]
    )
    kubectl = str(_build([str(BUILD_KUBE)]) / "kubectl")
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    config_dir = out / "cl2-config"
    config_dir.mkdir(parents=True)
    marker.write_text("written by bench/cl2_agreement.py, which empties this directory\n")

    token = secrets.token_hex(3)
    fleet, prefix = f"cl2agree-{token}", f"cl2agree-{token}"
    source = cl2_dir / CL2_TEST
    (config_dir / "config.yaml").write_text(
        patch_config((source / "config.yaml").read_text(), prefix)
    )
    for name in ("job.yaml", "long-running-job.yaml"):
        (config_dir / name).write_text(patch_job((source / name).read_text(), fleet))
    shutil.copy(source / "resourceclaimtemplate.yaml", config_dir)
    overrides = {
        "CL2_NODES_PER_NAMESPACE": args.nodes_per_namespace,
        "CL2_JOB_RUNNING_TIME": args.job_running_time,
        "CL2_LOAD_TEST_THROUGHPUT": args.fill_qps,
        "CL2_STEADY_STATE_QPS": args.churn_qps,
    }
    (config_dir / "overrides.yaml").write_text(
        "".join(f"{k}: {json.dumps(v)}\n" for k, v in overrides.items())
    )

    cl2_cmd = [
        str(cl2_dir / "clusterloader"), "--provider=local", f"--kubeconfig={args.kubeconfig}",
        f"--testconfig={config_dir / 'config.yaml'}",
        f"--testoverrides={config_dir / 'overrides.yaml'}",
        f"--report-dir={out / 'cl2'}", f"--nodes={args.nodes}", "--enable-exec-service=false",
        "--v=2",
    ]  # fmt: skip
    subprocess.run(
        [str(BIN / "fleet"), "apply", "--profile", "dgx-h100", "--nodes", str(args.nodes),
         "--name", fleet, "--timeout", "1200"],
        env=env, check=True,
    )  # fmt: skip
    made_class = (
        subprocess.run(
            [kubectl, "create", "-f", "-"], input=device_class(), env=env, text=True,
            capture_output=True, check=False,
        ).returncode
        == 0
    )  # fmt: skip
    observers: dict[str, subprocess.Popen[str]] = {}
    started = time.time()
    try:
        for ident, selector in MEASUREMENTS.items():
            observers[ident] = _observer(
                out / f"observe-{ident}", prefix, selector, args.kubeconfig
            )
        with (out / "cl2.log").open("w") as log:
            cl2_code = subprocess.run(
                cl2_cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
            ).returncode
    finally:
        for proc in observers.values():  # Ctrl-C: each writes its report and exits 0
            proc.send_signal(signal.SIGINT)
        for proc in observers.values():
            proc.communicate(timeout=300)
        subprocess.run([str(BIN / "fleet"), "delete", "--name", fleet], env=env, check=False)
        if made_class:
            subprocess.run([kubectl, "delete", "deviceclass", DEVICE_CLASS], env=env, check=False)
    wall = time.time() - started

    summaries = agreement.cl2_summaries(p.name for p in (out / "cl2").glob("*.json"))
    expected = expected_pods(args.nodes, args.nodes_per_namespace)
    table: list[agreement.Row] = []
    pods: dict[str, dict[str, int]] = {}
    same_pods: dict[str, Any] = {}
    worst = cl2_worst((out / "cl2.log").read_text(errors="replace"))
    for ident in MEASUREMENTS:
        doc = document.load(out / f"observe-{ident}" / "result.json")
        cl2: dict[str, dict[str, float]] = {}
        if ident in summaries:
            cl2 = agreement.cl2_pod_startup(
                json.loads((out / "cl2" / summaries[ident]).read_text())
            )
        table += agreement.rows(ident, doc.latency_ms, cl2)
        pods[ident] = {
            "expected": expected[ident],
            "observed": doc.counts.pods_seen,
            "measured_pod_startup": doc.latency_ms["pod_startup"].count,
        }
        same_pods[ident] = per_pod(worst, ours_per_pod(out / f"observe-{ident}" / "pods.csv"))
    result: dict[str, Any] = {
        "command": " ".join([sys.argv[0], *sys.argv[1:]]),
        "clusterloader2_command": " ".join(cl2_cmd),
        "clusterloader2_exit_code": cl2_code,
        "wall_seconds": round(wall, 1),
        "versions": _versions(kubectl, env, cl2_dir),
        "nodes": args.nodes,
        "overrides": overrides,
        "pods": pods,
        "tolerance": f"max({agreement.TOLERANCE_MS:g} ms, {agreement.TOLERANCE_SHARE:.0%})",
        "rows": [
            {
                "measurement": r.measurement,
                "phase": r.phase,
                "stat": r.stat,
                "loadgen_ms": r.ours,
                "cl2_ms": r.cl2,
                "diff_ms": r.diff,
                "allowed_ms": r.allowed,
                "ok": r.ok,
            }
            for r in table
        ],
        "met": agreement.met(table),
        "per_pod": same_pods,
    }
    (out / "agreement.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"versions: {result['versions']}; CL2 exit {cl2_code}; pods {pods}")
    print(
        f"{'measurement':26} {'phase':19} {'stat':6} {'loadgen':>10} {'CL2':>10} "
        f"{'diff':>8} {'allowed':>8}"
    )
    for r in table:
        print(
            f"{r.measurement:26} {r.phase:19} {r.stat:6} {fmt(r.ours):>10} {fmt(r.cl2):>10} "
            f"{fmt(r.diff):>8} {r.allowed:>8.1f} {'ok' if r.ok else 'MISS'}"
        )
    for ident, phases in same_pods.items():
        for phase, d in phases.items():
            print(
                f"same pod, {ident} {phase}: {d['pods']} of CL2's worst, |loadgen - CL2| "
                f"median {d['median_abs_diff_ms']} ms, max {d['max_abs_diff_ms']} ms"
            )
    print(f"agreement within {result['tolerance']}: {'met' if result['met'] else 'missed'}")
    if cl2_code != 0:  # its own 5 s SLO failing is a finding, not a failed tool
        print(f"clusterloader2 exited {cl2_code}: see {out / 'cl2.log'} (its SLO verdicts)")
    return 0 if result["met"] and set(MEASUREMENTS) <= set(summaries) else 1


if __name__ == "__main__":
    sys.exit(main())
