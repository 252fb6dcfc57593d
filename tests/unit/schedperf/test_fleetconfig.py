"""Our fleet's shapes as a scheduler_perf config: the objects `fleet render` and
`loadgen run pods` make, templated per node."""

from __future__ import annotations

import json

import yaml

from fleet import render
from loadgen import scenarios, templates
from schedperf import fleetconfig


def _render_like_scheduler_perf(template: str, index: int) -> dict[str, object]:
    # scheduler_perf executes the file as a Go text/template with .Index set; our templates
    # use nothing else.
    assert template.count("{{") == template.count("{{.Index}}")
    loaded: dict[str, object] = json.loads(template.replace("{{.Index}}", str(index)))
    return loaded


def test_node_and_slices_of_node_i_are_what_fleet_render_makes_for_node_i() -> None:
    files = fleetconfig.files("dgx-h100", nodes=3, pods=10)
    ours = render.render_profile("dgx-h100", 3, name="perf")
    node = _render_like_scheduler_perf(files["templates/node.yaml"], 2)
    assert node["metadata"] == ours.nodes[2]["metadata"]
    slices = sorted(k for k in files if k.startswith("templates/resourceslice-"))
    per_node = len(ours.slices) // 3
    assert len(slices) == per_node
    for k, path in enumerate(slices):
        got = _render_like_scheduler_perf(files[path], 2)
        want = ours.slices[2 * per_node + k]
        assert got["metadata"]["name"] == want["metadata"]["name"]  # type: ignore[index]
        assert got["spec"]["nodeName"] == want["spec"]["nodeName"]  # type: ignore[index]
        assert got["spec"]["pool"] == want["spec"]["pool"]  # type: ignore[index]
        assert len(got["spec"]["devices"]) == len(want["spec"]["devices"])  # type: ignore[index]


def test_claims_and_pods_are_loadgens() -> None:
    files = fleetconfig.files("dgx-h100", nodes=3, pods=10)
    phase = scenarios.load("pods", {"pods": 10}).phases[0]
    template = json.loads(files["templates/resourceclaimtemplate.yaml"])
    assert template["spec"] == templates.claim_template(phase.claim, "x")["spec"]
    pod = json.loads(files["templates/pod.yaml"])
    assert pod["spec"] == templates.pod_spec(phase, {})


def test_the_config_creates_nodes_slices_classes_claims_then_measures_the_pods() -> None:
    files = fleetconfig.files("dgx-h100", nodes=50, pods=100)
    (case,) = yaml.safe_load(files[fleetconfig.CONFIG])
    ops = [op["opcode"] for op in case["workloadTemplate"]]
    assert ops[0] == "createNodes" and ops[-1] == "createPods"
    assert case["workloadTemplate"][-1]["collectMetrics"] is True
    assert case["workloads"] == [
        {"name": "dgx-h100_100pods_50nodes", "params": {"nodes": 50, "pods": 100}}
    ]
    for op in case["workloadTemplate"]:
        for key in ("nodeTemplatePath", "templatePath", "podTemplatePath"):
            if key in op:
                assert op[key] in files
    assert case["featureGates"]["DynamicResourceAllocation"] is True
