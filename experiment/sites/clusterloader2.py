"""A variant whose arms run ClusterLoader2's own DRA test on the site's cluster
(`harness: clusterloader2`) while two `loadgen observe` watch the same pods, and pair each
phase's p50/p90/p99 with ClusterLoader2's own PerfData.

ClusterLoader2 is built from its pinned module by tools/k8s/clusterloader2.sh (cached by its
version; where the Go module proxy refuses the module, $DRA_TESTBED_CL2_SOURCE names a
kubernetes/perf-tests checkout at the pinned commit). Its `testing/dra` test is read from that
build and adapted at run time, never kept here: its `dependencies:` (an image-based example
driver) removed, its namespaces given the arm's prefix (which `loadgen observe
--namespace-prefix` watches), its two Job templates given the kwok toleration, the fleet's node
selector, kwok's completion delay (the template's own sleep) and the variant's scheduler; a
DeviceClass `gpu.example.com` (the class its claim template asks for) selects the fleet's
GPUs while the arm runs.

The file's workload is loadgen's `cl2-dra` scenario, which the loadgen variants beside it run
themselves; its parameters become ClusterLoader2's overrides (`overrides`). Each measurement
of ClusterLoader2 (FastFill: the long-running fill Jobs' pods; Churn: the short-lived ones')
is watched by its own observer with the measurement's label selector, and the arm's result is
the two observers' in loadgen's schema (phases `fill` and `churn`), with ClusterLoader2's own
figures and the agreement rows in the arm's record (`ArmRecord.clusterloader2`). An arm
without ClusterLoader2 (it failed to build) or without the expected PerfData is not valid,
and says why in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiment.measure import arm_record, validity
from experiment.measure.arms import Arm
from experiment.sites import children
from loadgen import agreement, scenarios
from loadgen.report import document
from testbed import files, vocab
from testbed.cluster import paths
from testbed.kube import errors, resources
from testbed.kube.client import Kube

HARNESS = "clusterloader2"
SCENARIO = "cl2-dra"
"""The loadgen scenario whose shape ClusterLoader2's DRA test is (`loadgen.scenarios`)."""
KEY = "clusterloader2"
"""The arm result's section of ClusterLoader2's figures and the agreement rows."""
SOURCE = arm_record.CL2_SOURCE
"""`scenario.source` of an arm's result (`figures.defined`)."""
TEST = "testing/dra"
DEVICE_CLASS = "gpu.example.com"
"""What testing/dra's ResourceClaimTemplate asks for."""
NODES_PER_NAMESPACE = 10
COMPLETIONS = 10
"""testing/dra's churn Jobs' completions (not a parameter of the test)."""
MEASUREMENTS = {
    "FastFillPodStartupLatency": ("fill", "job-type=long-running"),
    "ChurnPodStartupLatency": ("churn", "job-type=short-lived"),
}
"""ClusterLoader2's measurement -> (the arm's phase, the label selector of its pods)."""
PARAMS = frozenset({"fill", "completions", "run_time", "long_run_time", "fill_qps", "churn_qps"})
"""The `cl2-dra` parameters testing/dra has overrides for."""
ALLOWED_FIELDS = frozenset(
    {
        "name",
        "harness",
        "kubernetes",
        "featureGates",
        "extender",
        "extenderFlags",
        "extenderFilter",
        "extenderSource",
        "scheduler",
    }
)
"""A ClusterLoader2 variant's fields: the cluster and the scheduler its pods go to."""
RUN_TIMEOUT = 3600.0


class BuildError(RuntimeError):
    """ClusterLoader2 is not built and cannot be; the message is one line."""

    def __init__(self, message: str, *, no_source: bool = False) -> None:
        super().__init__(message)
        self.no_source = no_source
        """Nothing to build from: the module proxy refused the module and no checkout was
        given (tools/k8s/clusterloader2.sh's exit 3), not a build that failed."""


def check_variant(fields: Mapping[str, Any]) -> None:
    """A ClusterLoader2 variant's fields as set (aliases); ValueError naming the first it
    cannot honour (its pods are ClusterLoader2's: no device plugin, workload parameters or
    fault of the variant's own)."""
    for key in fields:
        if key not in ALLOWED_FIELDS:
            raise ValueError(
                f"{key}: a clusterloader2 variant sets only its cluster and scheduler "
                f"({', '.join(sorted(ALLOWED_FIELDS - {'name', 'harness'}))})"
            )


def fleet_problem(profile: str | None, gpu_profiles: Sequence[str]) -> str | None:
    """Why testing/dra cannot size itself on the file's fleet, or None: it takes every node
    to have the same GPU count (`CL2_GPUS_PER_NODE`)."""
    if profile is None or profile not in gpu_profiles:
        return (
            "fleet: a clusterloader2 variant needs a profile fleet of one GPU profile "
            f"(one of: {', '.join(gpu_profiles)}): testing/dra sizes itself from nodes x GPUs "
            "per node"
        )
    return None


def workload_problem(scenario: str, params: Mapping[str, object]) -> str | None:
    """Why testing/dra cannot run this workload, or None."""
    if scenario != SCENARIO:
        return (
            f"clusterloader2 runs ClusterLoader2's DRA test, the {SCENARIO!r} scenario's shape, "
            f"not {scenario!r}"
        )
    if unknown := sorted(set(params) - PARAMS):
        return f"params.{unknown[0]}: testing/dra has no override for it"
    if "completions" in params and int(str(params["completions"])) != COMPLETIONS:
        return f"params.completions: testing/dra's churn Jobs have {COMPLETIONS} completions"
    fill = float(str(params.get("fill", 0.9))) * 100
    if abs(fill - round(fill)) > 1e-9:
        return "params.fill: testing/dra takes a whole percentage (e.g. 0.9)"
    return None


def _go_duration(seconds: float) -> str:
    return f"{seconds:g}s"


def overrides(params: Mapping[str, str], gpus_per_node: int) -> dict[str, object]:
    """testing/dra's overrides for the `cl2-dra` parameters `params` (pure)."""
    fill, churn = scenarios.load(SCENARIO, dict(params)).phases
    return {
        "CL2_NODES_PER_NAMESPACE": NODES_PER_NAMESPACE,
        "CL2_GPUS_PER_NODE": gpus_per_node,
        "CL2_FILL_PERCENTAGE": round((fill.fill_fraction or 0.9) * 100),
        "CL2_LONG_JOB_RUNNING_TIME": _go_duration(fill.run_time or 3600.0),
        "CL2_JOB_RUNNING_TIME": _go_duration(churn.run_time or 30.0),
        "CL2_LOAD_TEST_THROUGHPUT": fill.qps,
        "CL2_STEADY_STATE_QPS": churn.qps,
    }


def expected_pods(nodes: int, settings: Mapping[str, object]) -> dict[str, int]:
    """The pods testing/dra creates per measurement on `nodes` nodes with `settings` (its
    overrides), its integer divisions included (pure)."""
    per_namespace = min(nodes, int(str(settings["CL2_NODES_PER_NAMESPACE"])))
    namespaces = nodes // per_namespace
    gpus = int(str(settings["CL2_GPUS_PER_NODE"])) * nodes
    fill_per_namespace = gpus * int(str(settings["CL2_FILL_PERCENTAGE"])) // 100 // namespaces
    churn_jobs_per_namespace = (gpus - fill_per_namespace * namespaces) // namespaces
    return {
        "FastFillPodStartupLatency": fill_per_namespace * namespaces,
        "ChurnPodStartupLatency": churn_jobs_per_namespace * namespaces * COMPLETIONS,
    }


# -- adapting testing/dra at run time (pure) ------------------------------------------------


class ShapeError(ValueError):
    """testing/dra is not shaped as the adaptation expects: refused, never guessed."""


def patch_config(text: str, prefix: str) -> str:
    """testing/dra/config.yaml without its `dependencies:` block, its namespaces named
    `<prefix>-1..N`."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
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
        raise ShapeError(f"{TEST}/config.yaml has an unexpected shape; not adapted")
    return patched


def patch_job(text: str, fleet: str, scheduler: str) -> str:
    """A testing/dra Job template with kwok's completion delay (its own `{{.Sleep}}`) on the
    pod, the kwok toleration, the fleet's node selector and, unless it is the cluster's own,
    the scheduler `scheduler`."""
    meta = re.search(r"^(\s+)template:\n(\s+)metadata:\n", text, re.M)
    policy = re.search(r"^(\s+)restartPolicy: Never\n", text, re.M)
    if meta is None or policy is None:
        raise ShapeError(f"a Job template of {TEST} has an unexpected shape; not adapted")
    pad = policy.group(1)
    spec = (
        f"{pad}tolerations:\n"
        f"{pad}- key: {vocab.KWOK_TAINT_KEY}\n"
        f"{pad}  operator: Exists\n"
        f"{pad}  effect: NoSchedule\n"
        f"{pad}nodeSelector:\n"
        f"{pad}  {vocab.LABEL_FLEET}: {fleet}\n"
    )
    if scheduler != "default-scheduler":
        spec += f"{pad}schedulerName: {scheduler}\n"
    text = text[: policy.end()] + spec + text[policy.end() :]
    inner = meta.group(2) + "  "
    annotation = (
        f'{inner}annotations:\n{inner}  {vocab.KWOK_POD_COMPLETE_DELAY}: "{{{{.Sleep}}}}"\n'
    )
    return text[: meta.end()] + annotation + text[meta.end() :]


def device_class() -> dict[str, Any]:
    """`gpu.example.com` over the fleet's whole GPUs."""
    gpu = vocab.GPU_DRIVER
    expr = f"device.driver == '{gpu}' && device.attributes['{gpu}'].type == 'gpu'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def write_config(
    cl2_dir: Path,
    config_dir: Path,
    prefix: str,
    fleet: str,
    scheduler: str,
    settings: Mapping[str, object],
) -> None:
    """testing/dra of the build `cl2_dir`, adapted, and its overrides, into `config_dir`."""
    source = cl2_dir / TEST
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.yaml").write_text(
        patch_config((source / "config.yaml").read_text(), prefix)
    )
    for name in ("job.yaml", "long-running-job.yaml"):
        (config_dir / name).write_text(patch_job((source / name).read_text(), fleet, scheduler))
    shutil.copy(source / "resourceclaimtemplate.yaml", config_dir)
    (config_dir / "overrides.yaml").write_text(
        "".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items())
    )


# -- the build ------------------------------------------------------------------------------

_built: dict[str, Path] = {}


def build() -> Path:
    """ClusterLoader2's cache directory (`clusterloader`, `testing/`, `VERSION`), built on
    first use (once per process); BuildError with the script's one line."""
    if "dir" in _built:
        return _built["dir"]
    tools = paths.k8s_tools()
    if tools is None:
        raise BuildError("ClusterLoader2 cannot be built: tools/k8s is not beside this checkout")
    cmd = [str(tools / "clusterloader2.sh")]  # it reads $DRA_TESTBED_CL2_SOURCE itself
    # The build's progress lines go to our stderr as they come (a first build takes minutes).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None and proc.stdout is not None
    error = ""
    for line in proc.stderr:
        if line.startswith("error: "):
            error = line[len("error: ") :].strip()
        else:
            sys.stderr.write(line)
    out = proc.stdout.read()
    if (code := proc.wait()) != 0:
        raise BuildError(
            f"ClusterLoader2 is not available: {error or f'exit {code}'}", no_source=code == 3
        )
    _built["dir"] = Path(out.strip().splitlines()[-1])
    return _built["dir"]


# -- running --------------------------------------------------------------------------------


def command(
    cl2_dir: Path, config_dir: Path, report_dir: Path, kubeconfig: Path, nodes: int
) -> list[str]:
    """ClusterLoader2 on the adapted test (pure)."""
    return [
        str(cl2_dir / "clusterloader"),
        "--provider=local",
        f"--kubeconfig={kubeconfig}",
        f"--testconfig={config_dir / 'config.yaml'}",
        f"--testoverrides={config_dir / 'overrides.yaml'}",
        f"--report-dir={report_dir}",
        f"--nodes={nodes}",
        "--enable-exec-service=false",
        "--v=2",
    ]


def recorded(cmd: list[str], arm_dir: Path, kubeconfig: Path) -> str:
    """`cmd` as a result keeps it: run from the arm's directory, the binary by name and the
    kubeconfig as $KUBECONFIG, so no machine path is written into the result (pure)."""
    shown = [Path(cmd[0]).name]
    for arg in cmd[1:]:
        arg = arg.replace(f"={kubeconfig}", "=$KUBECONFIG")
        shown.append(arg.replace(f"={arm_dir}/", "=").replace(f"={arm_dir}", "=."))
    return " ".join(shown)


def _observers(arm_dir: Path, prefix: str, kubeconfig: Path) -> list[subprocess.Popen[str]]:
    """One `loadgen observe` per measurement, started together; each has listed its watches
    (its first line says so) when this returns."""
    procs = [
        subprocess.Popen(
            [
                children.tool("loadgen"),
                "observe",
                "--namespace-prefix",
                prefix + "-",
                "-l",
                selector,
                "--kubeconfig",
                str(kubeconfig),
                "--output-dir",
                str(arm_dir / f"observe-{ident}"),
                "-q",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for ident, (_, selector) in MEASUREMENTS.items()
    ]
    for proc in procs:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "observing pods in ...": its watches have listed
        if "observing pods" not in line:
            _stop(procs)
            raise RuntimeError(f"loadgen observe did not start: {line.strip() or 'no output'}")
    return procs


def _stop(procs: Sequence[subprocess.Popen[str]]) -> None:
    """Ctrl-C to each observer: it writes its report and exits."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@contextlib.contextmanager
def _observing(arm_dir: Path, prefix: str, kubeconfig: Path) -> Iterator[None]:
    """Both observers for the block."""
    procs = _observers(arm_dir, prefix, kubeconfig)
    try:
        yield
    finally:
        _stop(procs)


async def _ensure_class(kubeconfig: Path) -> bool:
    """Create `gpu.example.com` unless it exists; True if made here."""
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        try:
            await kube.create(resources.DEVICE_CLASSES, device_class())
        except errors.AlreadyExists:
            return False
        return True


async def _clean(kubeconfig: Path, prefix: str, made_class: bool, seconds: float) -> bool:
    """Delete the arm's namespaces (ClusterLoader2 deletes its own; one left by a failed run
    is deleted here), then the class if made here; True once every namespace is gone, so the
    next arm starts on a fleet with every device free."""
    deadline = time.monotonic() + seconds
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        while True:
            left = [
                n["metadata"]["name"]
                for n in (await kube.list(resources.NAMESPACES)).items
                if n["metadata"]["name"].startswith(prefix + "-")
            ]
            for name in left:
                with contextlib.suppress(errors.NotFound):
                    await kube.delete(resources.NAMESPACES, name)
            if not left or time.monotonic() >= deadline:
                break
            await asyncio.sleep(1.0)
        if made_class:
            with contextlib.suppress(errors.NotFound):
                await kube.delete(resources.DEVICE_CLASSES, DEVICE_CLASS)
    return not left


@dataclass(frozen=True)
class Where:
    """Where an arm runs: the site's cluster, the fleet, the scheduler its pods go to."""

    kubeconfig: Path
    fleet: str
    nodes: int
    gpus_per_node: int
    scheduler: str


def run_arm(
    arm: Arm, out_dir: Path, where: Where
) -> tuple[arm_record.ArmRecord | None, validity.Validity]:
    """Run testing/dra with both observers; the arm's result (None without one) and its
    validity."""
    arm_dir = out_dir / arm.name
    if arm_dir.exists():
        shutil.rmtree(arm_dir)
    arm_dir.mkdir(parents=True)
    try:
        cl2_dir = build()
    except BuildError as e:
        return None, validity.Validity(False, str(e))
    settings = overrides(arm.params, where.gpus_per_node)
    prefix = f"cl2-{secrets.token_hex(3)}"
    try:
        write_config(
            cl2_dir, arm_dir / "cl2-config", prefix, where.fleet, where.scheduler, settings
        )
    except (OSError, ShapeError) as e:
        return None, validity.Validity(False, f"ClusterLoader2's {TEST} not adapted: {e}")
    report_dir = arm_dir / "cl2"
    cmd = command(cl2_dir, arm_dir / "cl2-config", report_dir, where.kubeconfig, where.nodes)
    made_class = asyncio.run(_ensure_class(where.kubeconfig))
    started = time.time()
    try:
        with _observing(arm_dir, prefix, where.kubeconfig), (arm_dir / "cl2.log").open("w") as log:
            try:
                code = subprocess.run(
                    cmd, stdout=log, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT, check=False
                ).returncode
            except subprocess.TimeoutExpired:
                code = -1
    except RuntimeError as e:
        asyncio.run(_clean(where.kubeconfig, prefix, made_class, 300))
        return None, validity.Validity(False, str(e))
    except KeyboardInterrupt:  # the observers have written their reports; nothing left behind
        asyncio.run(_clean(where.kubeconfig, prefix, made_class, 60))
        raise
    wall = time.time() - started
    cleaned = asyncio.run(_clean(where.kubeconfig, prefix, made_class, 300))
    try:
        doc, section = compose(arm_dir, where.nodes, settings, version=_version(cl2_dir), code=code)
    except (OSError, ValueError) as e:
        return None, validity.Validity(False, f"loadgen observe wrote no result: {e}")
    doc = doc.model_copy(update={"cleaned_up": cleaned})
    section = section.model_copy(
        update={
            "command": recorded(cmd, arm_dir, where.kubeconfig),
            "wall_seconds": round(wall, 1),
            "cleaned_up": cleaned,
        }
    )
    files.write_atomic(arm_dir / arm_record.RESULT, doc.model_dump_json(indent=1) + "\n")
    return arm_record.build(doc, clusterloader2=section), judge(section)


def _version(cl2_dir: Path) -> str:
    with contextlib.suppress(OSError):
        return (cl2_dir / "VERSION").read_text().strip()
    return "unknown"


def compose(
    arm_dir: Path, nodes: int, settings: Mapping[str, object], *, version: str, code: int
) -> tuple[document.ResultDoc, arm_record.Cl2Section]:
    """The arm's result: the Churn observer's, with both observers' pods as phases `fill`
    and `churn` and their counts summed; and ClusterLoader2's figures and the agreement rows
    (OSError without an observer's result, ValueError when one is not of loadgen's schema)."""
    observed = {
        ident: document.load(arm_dir / f"observe-{ident}" / arm_record.RESULT)
        for ident in MEASUREMENTS
    }
    report_dir = arm_dir / "cl2"
    names = [p.name for p in report_dir.glob("*.json")] if report_dir.is_dir() else []
    summaries = agreement.cl2_summaries(names)
    expected = expected_pods(nodes, settings)
    rows: list[agreement.Row] = []
    cl2_figures: dict[str, dict[str, dict[str, float]]] = {}
    pods: dict[str, arm_record.Cl2Pods] = {}
    for ident, ours in observed.items():
        theirs: dict[str, dict[str, float]] = {}
        if ident in summaries:
            theirs = agreement.cl2_pod_startup(
                json.loads((report_dir / summaries[ident]).read_text())
            )
        cl2_figures[ident] = theirs
        rows += agreement.rows(ident, ours.latency_ms, theirs)
        startup = ours.latency_ms.get("pod_startup")
        pods[ident] = arm_record.Cl2Pods(
            expected=expected[ident],
            observed=ours.counts.pods_seen,
            measured=startup.count if startup else 0,
        )
    churn = observed["ChurnPodStartupLatency"]
    counts = {
        k: sum(getattr(o.counts, k) for o in observed.values())
        for k in document.Counts.model_fields
    }
    doc = churn.model_copy(
        update={
            "phases": [
                _phase(phase, observed[ident]) for ident, (phase, _) in MEASUREMENTS.items()
            ],
            "counts": document.Counts(**{**counts, "expected_pods": sum(expected.values())}),
            "scenario": {**churn.scenario, "source": SOURCE, "name": SCENARIO},
        }
    )
    section = arm_record.Cl2Section(
        version=version,
        exit_code=code,
        overrides=dict(settings),
        perfdata=sorted(summaries.values()),
        figures_ms=cl2_figures,
        pods=pods,
        tolerance=f"max({agreement.TOLERANCE_MS:g} ms, {agreement.TOLERANCE_SHARE:.0%})",
        rows=[row_record(r) for r in rows],
        within=sum(r.ok for r in rows),
        met=agreement.met(rows),
    )
    return doc, section


_NONE = document.summary_of([])


def _phase(name: str, observed: document.ResultDoc) -> document.PhaseDoc:
    """An observer's pods as a phase of the arm's result: its counts, latencies and
    throughput; it created nothing."""
    return document.PhaseDoc(
        name=name,
        kind="observed",
        objects=0,
        waves=0,
        timed_out=False,
        duration_seconds=observed.duration_seconds,
        create_seconds=0.0,
        counts=observed.counts,
        latency_ms=observed.latency_ms,
        throughput=observed.throughput,
        create_request_ms=_NONE,
    )


def row_record(r: agreement.Row) -> arm_record.Cl2Row:
    return arm_record.Cl2Row(
        measurement=r.measurement,
        phase=r.phase,
        stat=r.stat,
        loadgen_ms=r.ours,
        cl2_ms=r.cl2,
        diff_ms=r.diff,
        allowed_ms=r.allowed,
        ok=r.ok,
    )


def judge(section: arm_record.Cl2Section) -> validity.Validity:
    """Valid when ClusterLoader2 wrote both measurements' PerfData and both observers saw every
    pod it was to create; its own SLO failing (exit 1) is a finding, not an invalid arm."""
    missing = [i for i in MEASUREMENTS if not section.figures_ms.get(i)]
    if missing:
        return validity.Validity(
            False,
            f"ClusterLoader2 (exit {section.exit_code}) wrote no PodStartupLatency PerfData "
            f"for {', '.join(missing)}",
        )
    short = [
        f"{i} {p.observed} of {p.expected}"
        for i, p in section.pods.items()
        if p.observed != p.expected
    ]
    if short:
        return validity.Validity(False, f"loadgen observe saw {', '.join(short)} pods")
    return validity.VALID


# -- reporting ------------------------------------------------------------------------------

AGREEMENT_COLUMNS = (
    "arm",
    "measurement",
    "phase",
    "stat",
    "loadgen ms",
    "CL2 ms",
    "diff",
    "allowed",
    "",
)


Sections = Mapping[str, arm_record.Cl2Section]
"""Arm name -> its ClusterLoader2 section: what the reports show, kept in experiment.json
under `KEY` (so `testbed report` shows it again)."""


def sections(
    results: Sequence[tuple[Arm, arm_record.ArmRecord]],
) -> dict[str, arm_record.Cl2Section]:
    """The ClusterLoader2 arms' sections, by arm name."""
    return {arm.name: rec.clusterloader2 for arm, rec in results if rec.clusterloader2 is not None}


def agreement_cells(kept: Sections) -> list[tuple[str, ...]]:
    """Each ClusterLoader2 arm's rows, loadgen observe beside ClusterLoader2's PerfData."""

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f}"

    return [
        (
            arm,
            r.measurement.removesuffix("PodStartupLatency"),
            r.phase,
            r.stat,
            fmt(r.loadgen_ms),
            fmt(r.cl2_ms),
            "-" if r.diff_ms is None else f"{r.diff_ms:+,.1f}",
            fmt(r.allowed_ms),
            "ok" if r.ok else "MISS",
        )
        for arm, section in kept.items()
        for r in section.rows
    ]


def agreement_lines(kept: Sections) -> list[str]:
    """One line per ClusterLoader2 arm: rows within tolerance, and its exit code."""
    return [
        f"{arm}: {s.within} of {len(s.rows)} rows within {s.tolerance} of "
        f"ClusterLoader2 {s.version} (exit {s.exit_code})"
        for arm, s in kept.items()
    ]
