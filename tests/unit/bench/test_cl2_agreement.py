"""bench/cl2_agreement.py's pure parts: how it patches a CL2 test config and Job template
(synthetic ones of the same shape here), reads CL2's log and sizes the test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from testbed import vocab

BENCH = Path(__file__).resolve().parents[3] / "bench" / "cl2_agreement.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cl2_agreement", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cl2_agreement"] = module
    spec.loader.exec_module(module)
    return module


CONFIG = """\
{{$n := DefaultParam .CL2_X 1}}
name: some-test
namespace:
  number: {{$n}}
dependencies:
- name: install a driver
  Method: SomeDriver
  Params:
    Count: {{.Nodes}}
  Timeout: 5m
steps:
- name: first
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{.Name}}
spec:
  template:
    metadata:
      labels:
        job-type: short-lived
    spec:
      restartPolicy: Never
      containers:
      - name: c
        args: [{{.Sleep}}]
"""


def test_the_config_loses_its_dependencies_and_gets_the_namespace_prefix(
    bench: ModuleType,
) -> None:
    patched = bench.patch_config(CONFIG, "cl2agree-abc")
    assert "dependencies" not in patched and "SomeDriver" not in patched
    assert "namespace:\n  prefix: cl2agree-abc\n  number: {{$n}}\n" in patched
    assert patched.endswith("steps:\n- name: first\n")
    with pytest.raises(SystemExit):
        bench.patch_config("name: x\n", "p")  # no namespace block: refuse, never guess


def test_a_job_template_gets_the_kwok_delay_toleration_and_fleet(bench: ModuleType) -> None:
    rendered = bench.patch_job(JOB, "fleet-1").replace("{{.Name}}", "j").replace("{{.Sleep}}", "5s")
    pod = yaml.safe_load(rendered)["spec"]["template"]
    assert pod["metadata"]["annotations"] == {vocab.KWOK_POD_COMPLETE_DELAY: "5s"}
    assert pod["metadata"]["labels"] == {"job-type": "short-lived"}
    assert pod["spec"]["tolerations"] == [
        {"key": vocab.KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["spec"]["nodeSelector"] == {vocab.LABEL_FLEET: "fleet-1"}


def test_the_test_sizes_as_documented(bench: ModuleType) -> None:
    assert bench.expected_pods(100, 10) == {
        "FastFillPodStartupLatency": 720,
        "ChurnPodStartupLatency": 800,
    }
    assert bench.expected_pods(20, 10) == {
        "FastFillPodStartupLatency": 144,
        "ChurnPodStartupLatency": 160,
    }


@pytest.mark.parametrize(
    ("text", "ms"),
    [("0s", 0.0), ("396.45ms", 396.45), ("2.5s", 2500.0), ("1m2.5s", 62500.0), ("750µs", 0.75)],
)
def test_go_durations(bench: ModuleType, text: str, ms: float) -> None:
    assert bench.go_duration_ms(text) == pytest.approx(ms)


def test_cl2s_worst_latencies_are_read_per_phase_and_pod(bench: ModuleType) -> None:
    log = (
        "I1122 17:29:35.368179 1 phase_latency.go:163] PodStartupLatency: 2 worst "
        "pod_startup latencies: [{ns-1/a-0 2.5s} {ns-2/b-0 396.45ms}]\n"
        "I1122 17:29:35.368180 1 other.go:1] unrelated line\n"
    )
    assert bench.cl2_worst(log) == {"pod_startup": {"ns-1/a-0": 2500.0, "ns-2/b-0": 396.45}}
