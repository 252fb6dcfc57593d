"""Our fleet's shapes as a scheduler_perf workload (pure): the same Nodes, ResourceSlices and
DeviceClasses `fleet render --profile P` makes, and the same ResourceClaimTemplate and pod
`loadgen run pods` creates, in scheduler_perf's config schema.

The Node and its slices are rendered once and turned into scheduler_perf templates by
putting `{{.Index}}` where the node's name goes: scheduler_perf's `createNodes` and
`createAny` then make node i and its slices as `fleet apply` makes them. Nothing of
upstream's configs is used; the schema is scheduler_perf's (opcodes `createNodes`,
`createAny`, `createPods`), and the feature gates are the ones `testbed up` turns on.
"""

from __future__ import annotations

import json
from typing import Any, Final

import yaml

from fleet import render
from loadgen import scenarios, templates
from schedperf import workloads
from testbed.cluster import feature_gates

TEST_CASE: Final = "Fleet"
CONFIG: Final = "performance-config.yaml"
NAMESPACE: Final = "test"
# The fleet's name in the rendered objects; its node names are `<name>-<profile>-<i>`.
_FLEET: Final = "perf"


def workload_name(profile: str, nodes: int, pods: int) -> str:
    """The workload's name in the config, as upstream names theirs (`5000pods_500nodes`)."""
    return f"{profile}_{pods}pods_{nodes}nodes"


def _templated(obj: dict[str, Any], node_name: str, profile: str) -> str:
    """`obj` as JSON (YAML's subset) with node 0's name replaced by the template's."""
    text = json.dumps(obj, indent=1, sort_keys=True)
    return text.replace(f'"{node_name}', f'"{_FLEET}-{profile}-{{{{.Index}}}}')


def files(profile: str, nodes: int, pods: int) -> dict[str, str]:
    """The config and its templates, by path relative to the directory it runs from.
    `profile` must be a built-in fleet profile (KeyError otherwise)."""
    rendered = render.render_profile(profile, 1, name=_FLEET)
    node = rendered.nodes[0]
    node_name = node["metadata"]["name"]
    out: dict[str, str] = {"templates/node.yaml": _templated(node, node_name, profile)}
    ops: list[dict[str, Any]] = [
        {"opcode": "createNodes", "nodeTemplatePath": "templates/node.yaml", "countParam": "$nodes"}
    ]
    for i, s in enumerate(rendered.slices):
        path = f"templates/resourceslice-{i}.yaml"
        out[path] = _templated(s, node_name, profile)
        ops.append({"opcode": "createAny", "templatePath": path, "countParam": "$nodes"})
    for i, c in enumerate(rendered.device_classes):
        path = f"templates/deviceclass-{i}.yaml"
        out[path] = json.dumps(c, indent=1, sort_keys=True)
        ops.append({"opcode": "createAny", "templatePath": path})

    # loadgen's `pods` scenario: one pod per claim template instance, the run's only phase.
    phase = scenarios.load("pods", {"pods": pods}).phases[0]
    claim_template = templates.claim_template(phase.claim, "perf")
    claim_template["metadata"] = {"name": claim_template["metadata"]["name"]}
    out["templates/resourceclaimtemplate.yaml"] = json.dumps(claim_template, indent=1)
    ops.append(
        {
            "opcode": "createAny",
            "templatePath": "templates/resourceclaimtemplate.yaml",
            "namespace": NAMESPACE,
        }
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": f"{phase.name}-"},
        "spec": templates.pod_spec(phase, {}),
    }
    out["templates/pod.yaml"] = json.dumps(pod, indent=1)
    ops.append(
        {
            "opcode": "createPods",
            "namespace": NAMESPACE,
            "countParam": "$pods",
            "podTemplatePath": "templates/pod.yaml",
            "collectMetrics": True,
        }
    )
    config = [
        {
            "name": TEST_CASE,
            "featureGates": feature_gates.gates(),
            "workloadTemplate": ops,
            "workloads": [
                {
                    "name": workload_name(profile, nodes, pods),
                    "params": {"nodes": nodes, "pods": pods},
                }
            ],
        }
    ]
    out[CONFIG] = yaml.safe_dump(config, sort_keys=False)
    return out


def selected(profile: str, nodes: int, pods: int, workdir: str) -> workloads.Selected:
    """The run of `fleet/<profile>` at this size, rendered into `workdir`. The allocator is
    the release's own choice, as kube-scheduler in the testbed's cluster makes it."""
    name = workload_name(profile, nodes, pods)
    return workloads.Selected(
        name=f"{workloads.FLEET_PREFIX}{profile}",
        benchmark=f"{workloads.BENCHMARK}/{TEST_CASE}/{name}",
        config=CONFIG,
        workdir=workdir,
        topic="fleet",
        allocator="",
        files=files(profile, nodes, pods),
        params={"profile": profile, "nodes": nodes, "pods": pods},
    )
