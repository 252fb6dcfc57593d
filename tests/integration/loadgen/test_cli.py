"""The `loadgen` command on the real cluster: outputs, SLO exit code, bad input, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from pathlib import Path

import pytest

from loadgen import templates
from loadgen.report import document, perfdata
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import children
from tests.support.private_fleet import (
    LOADGEN,
    Fleet,
    loadgen_args,
    namespace_gone,
    run_loadgen,
)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.cluster


def _files(directory: Path, prefix: str) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(prefix))


def _class_params(fleet: Fleet) -> list[str]:
    return [f"gpu_class={fleet.gpu_class}", f"nic_class={fleet.nic_class}"]


async def test_an_impossible_slo_exits_one_after_writing_every_output(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"slo-{fleet.suffix}"
    code, out, err = await run_loadgen(
        "run",
        "pods",
        "pods=5",
        *_class_params(fleet),
        *loadgen_args(fleet, kubeconfig, tmp_path, run_id),
        "--slo",
        "pod_startup.p99=1ms",
        "--slo",
        "create_to_schedule.p50=1h",
    )
    assert code == 1, err
    assert "VIOLATED" in out and "pod_startup" in out
    doc = document.load(tmp_path / "result.json")
    assert doc.counts.pods_running == 5 and doc.cleaned_up
    assert [s.ok for s in doc.slos] == [False, True]
    # Its own CPU over the run: some, and within what the run's wall time allows it.
    assert doc.loadgen_cpu_seconds is not None
    assert 0 < doc.loadgen_cpu_seconds <= doc.duration_seconds * (os.cpu_count() or 1)
    assert "loadgen over the run: cpu" in out
    schema = json.loads((tmp_path / "result.schema.json").read_text())
    assert schema["properties"]["schema_version"]["const"] == 1
    startup = _files(tmp_path, "PodStartupLatency_PodStartupLatency_pods_")
    assert len(startup) == 1
    items = perfdata.PerfData.model_validate_json(startup[0].read_text()).dataItems
    assert {i.labels["Metric"] for i in items} >= {"pod_startup", "create_to_schedule"}
    assert all(i.unit == "ms" and set(i.data) == {"Perc50", "Perc90", "Perc99"} for i in items)
    html = (tmp_path / "report.html").read_text()
    # No CDN: plotly.js from the run directory's own copy.
    assert "Plotly.newPlot" in html and 'src="plotly.min.js"' in html and "<link" not in html
    assert (tmp_path / "plotly.min.js").is_file()
    await namespace_gone(kube, run_id)


async def test_a_met_slo_exits_zero(kubeconfig: str, fleet: Fleet, tmp_path: Path) -> None:
    code, _, err = await run_loadgen(
        "--pods",
        "3",
        "--gpus",
        "0",
        *loadgen_args(fleet, kubeconfig, tmp_path, f"ok-{fleet.suffix}"),
        "--slo",
        "pod_startup.p99=10m",
    )
    assert code == 0, err
    assert document.load(tmp_path / "result.json").counts.pods_running == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pods", "0"], "pods"),
        (["--pods", "-3"], "pods"),
        (["run", "nonsense"], "unknown scenario"),
        (["run", "pods", "colour=red"], "colour"),
        (["run", "pods", "--slo", "startup=5s"], "--slo"),
        (["--qps", "0"], "qps"),
    ],
)
async def test_bad_input_exits_two_with_one_line_and_creates_nothing(
    kube: Kube, kubeconfig: str, tmp_path: Path, args: list[str], message: str
) -> None:
    run_id = f"bad-{secrets.token_hex(3)}"
    out = tmp_path / "out"
    code, _, err = await run_loadgen(
        *args, "--kubeconfig", kubeconfig, "--run-id", run_id, "--output-dir", str(out)
    )
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, templates.namespace_name(run_id))


async def test_a_missing_device_class_exits_one_and_creates_nothing(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    run_id = f"nodc-{secrets.token_hex(3)}"
    code, _, err = await run_loadgen(
        "run", "pods", "gpu_class=no-such-class.example.com",
        "--kubeconfig", kubeconfig, "--run-id", run_id, "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 1
    (error,) = err.strip().splitlines()  # no run id: no namespace was made
    assert "DeviceClass no-such-class.example.com does not exist" in error
    with pytest.raises(errors.NotFound):
        await kube.get(r.NAMESPACES, templates.namespace_name(run_id))


async def test_no_cluster_is_one_line_missing_kubeconfig_2_unreachable_1(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = await run_loadgen(
        "--kubeconfig", str(tmp_path / "missing.yaml"), "--output-dir", str(out)
    )
    assert code == 2  # bad input, as in every command
    # One line: no run id is printed for a run whose namespace never existed.
    assert "does not exist" in err and len(err.strip().splitlines()) == 1, err
    unreachable = tmp_path / "kubeconfig.yaml"
    unreachable.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    code, _, err = await run_loadgen("--kubeconfig", str(unreachable), "--output-dir", str(out))
    assert code == 1
    assert "cannot reach the API server" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


async def test_ctrl_c_writes_a_partial_report_and_leaves_nothing_behind(
    kube: Kube, kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    run_id = f"int-{fleet.suffix}"
    proc = await asyncio.create_subprocess_exec(
        LOADGEN, "run", "pods", "pods=30", *_class_params(fleet), "--qps", "3",
        *loadgen_args(fleet, kubeconfig, tmp_path, run_id),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        # Wait (on a watch) until a few pods run, then interrupt mid-creation.
        selector = f"{templates.LABEL_PHASE}=pods"
        await wait_for(
            kube,
            r.PODS,
            lambda p: (
                p["metadata"]["name"] == "pods-000003"
                and p.get("status", {}).get("phase") == "Running"
            ),
            namespace=templates.namespace_name(run_id),
            label_selector=selector,
            timeout=60,
        )
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await children.reap(proc)
    assert proc.returncode == 130, err.decode()
    doc = document.load(tmp_path / "result.json")
    assert doc.interrupted and doc.cleaned_up
    assert 4 <= doc.counts.objects_created < 30
    assert doc.counts.pods_seen == doc.counts.objects_created
    assert doc.latency_ms["pod_startup"].count >= 4
    await namespace_gone(kube, run_id)


async def test_a_scenario_file_runs_its_phases_in_order(
    kubeconfig: str, fleet: Fleet, tmp_path: Path
) -> None:
    scenario = tmp_path / "two-phases.yaml"
    scenario.write_text(
        "name: two-phases\n"
        "phases:\n"
        "  - {name: first, kind: pods, count: 3, claim: {gpus: 2, nics: 2, "
        f"gpu_class: {fleet.gpu_class}, nic_class: {fleet.nic_class}}}}}\n"
        "  - {name: second, kind: jobs, count: 2, completions: 2, run_time: 1s, "
        f"wait: complete, claim: {{gpus: 1, gpu_class: {fleet.gpu_class}}}}}\n"
    )
    out = tmp_path / "out"
    code, stdout, err = await run_loadgen(
        "run", str(scenario), *loadgen_args(fleet, kubeconfig, out, f"file-{fleet.suffix}")
    )
    assert code == 0, err
    doc = document.load(out / "result.json")
    first, second = doc.phases
    assert (first.name, first.counts.pods_running) == ("first", 3)
    assert (second.name, second.counts.pods_succeeded) == ("second", 4)
    assert doc.claims.gpu_nic_pairs == 6 and doc.claims.pcie_aligned_pairs == 6
    assert "first" in stdout and "second" in stdout  # per-phase rows in the summary
