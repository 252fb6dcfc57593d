"""The objects an existing cluster needs for an experiment, rendered from manifests/ (pure).

`Manifests.load` reads the files once (the same ones `kubectl apply -k` takes, without
kustomize: their kustomizations only list files and set kwok's image tag, done here); every
other function is pure, so a unit test sees exactly what the site will apply:
- shared objects, created only where missing: the namespace, the DeviceClasses, the
  extender's read-only ClusterRole and the second scheduler's ServiceAccount and bindings;
- kwok (controller, CRDs, RBAC, the testbed's Stages), for clusters that do not run it;
- per variant, a second scheduler of its own: a ConfigMap with the shipped
  KubeSchedulerConfiguration under the variant's `schedulerName`, with its overrides (and
  without the extender entry when the variant has no extender), and a Deployment of
  manifests/second-scheduler whose extender sidecar takes the variant's flags.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from experiment.sites.site import SchedulerSetup
from testbed import scheduler_profiles, vocab

Obj = dict[str, Any]

NAMESPACE = vocab.NAMESPACE
SCHEDULER = "dra-testbed-scheduler"
"""The second scheduler's base name (manifests/second-scheduler): its ServiceAccount, and
the prefix of every variant's Deployment, ConfigMap and `schedulerName`."""
FIELD_MANAGER = "dra-testbed-experiment"
ANNOTATION_RUN = "testbed.dra.io/experiment-run"
"""On each shared object an experiment run created: which run."""
LABEL_RUN = "testbed.dra.io/experiment-run"
"""On a run's record (`run_record`): which run; while one exists the run uses the cluster."""
LABEL_VARIANT = "testbed.dra.io/experiment-variant"
"""On every per-variant object: which setup it realizes (and what a cleanup may select)."""
CONFIG_KEY = "kube-scheduler-config.yaml"
KWOK_CONTROLLER = ("kube-system", "kwok-controller")
"""kwok's Deployment as its release (manifests/kwok) names it."""
SCHEDULER_METRICS_PORT = 10259
EXTENDER_PORT = 8888
"""The sidecar's port for the scheduler's calls, on the pod's loopback."""
EXTENDER_ADMIN_PORT = 9888
"""The sidecar's probes and /metrics (manifests/second-scheduler)."""


def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _resources(directory: Path) -> list[Obj]:
    """The objects of a kustomization that only lists files."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return [d for name in kustomization.get("resources") or () for d in _docs(directory / name)]


@dataclass(frozen=True)
class Manifests:
    namespace: Obj
    device_classes: list[Obj]
    extender_role: Obj
    scheduler_rbac: list[Obj]
    scheduler_deployment: Obj
    scheduler_config: Obj
    kwok: list[Obj]
    labels: dict[str, str]
    """The labels manifests/base puts on everything it deploys (kustomize `labels`)."""

    @classmethod
    def load(cls, root: Path) -> Manifests:
        kwok_dir = root / "kwok"
        kustomization = yaml.safe_load((kwok_dir / "kustomization.yaml").read_text())
        tags = {i["name"]: i["newTag"] for i in kustomization.get("images") or ()}
        kwok = _resources(kwok_dir)
        for obj in kwok:
            for c in _containers(obj):
                if c.get("image") in tags:
                    c["image"] = f"{c['image']}:{tags[c['image']]}"
        second = root / "second-scheduler"
        base = yaml.safe_load((root / "base" / "kustomization.yaml").read_text())
        labels = {k: v for entry in base.get("labels") or () for k, v in entry["pairs"].items()}
        return cls(
            namespace=_docs(root / "base" / "namespace.yaml")[0],
            device_classes=_resources(root / "deviceclasses"),
            extender_role=_docs(root / "extender" / "clusterrole.yaml")[0],
            scheduler_rbac=_docs(second / "rbac.yaml"),
            scheduler_deployment=_docs(second / "deployment.yaml")[0],
            scheduler_config=_docs(root / "scheduler" / CONFIG_KEY)[0],
            kwok=kwok,
            labels=labels,
        )


def _containers(obj: Obj) -> list[Obj]:
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]


def _labelled(obj: Obj, labels: Mapping[str, str]) -> Obj:
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    return out


def shared(m: Manifests) -> list[Obj]:
    """What every variant's scheduler needs, in the order it can be created, labelled as
    manifests/base labels them."""
    objs = (m.namespace, *m.device_classes, m.extender_role, *m.scheduler_rbac)
    return [_labelled(o, m.labels) for o in objs]


def run_record_name(run: str) -> str:
    return f"dra-testbed-experiment-{run}"


def run_record(run: str, made: list[str]) -> Obj:
    """The ConfigMap recording, on the cluster, that experiment run `run` uses it and what of
    the shared objects it created (its record stays if the run is killed)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": run_record_name(run),
            "namespace": NAMESPACE,
            "labels": {LABEL_RUN: run},
        },
        "data": {"created": json.dumps(made)},
    }


def kwok(m: Manifests, *, flow_control: bool = False) -> list[Obj]:
    """kwok's release and the testbed's Stages, CRDs first (a Stage needs its CRD). kwok's
    FlowSchema, which exempts its controller from API Priority and Fairness cluster-wide,
    only if `flow_control` asks for it."""
    objs = [copy.deepcopy(o) for o in m.kwok if flow_control or o.get("kind") != "FlowSchema"]
    return sorted(objs, key=lambda o: o["kind"] != "CustomResourceDefinition")


def variant_name(
    setup: SchedulerSetup, feature_gates: Mapping[str, bool] | None = None, run: str = ""
) -> str:
    """A name per distinct setup: the base name and a digest of it, then the `run`'s own
    suffix (if given), so two runs on one cluster never share, nor delete, each other's."""
    what: dict[str, Any] = {
        "extender": setup.extender,
        "args": setup.extender_args,
        "config": setup.config,
    }
    if setup.extender_filter != "required":  # only then: the other set-ups keep their names
        what["filter"] = False if setup.extender_filter == "none" else setup.extender_filter
    if feature_gates:
        what["gates"] = dict(feature_gates)
    key = json.dumps(what, sort_keys=True)
    digest = f"{SCHEDULER}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    return f"{digest}-{run}" if run else digest


def scheduler_config(m: Manifests, setup: SchedulerSetup, name: str) -> Obj:
    """The variant's KubeSchedulerConfiguration as its pod runs it: the shipped one with the
    overrides replacing top-level fields (as the local site's second scheduler takes them),
    its profiles named for `name` (`scheduler_profiles.renamed`), the in-cluster client (no
    kubeconfig file) and the loopback extender (the sidecar) only when the variant has one."""
    doc = {**copy.deepcopy(m.scheduler_config), **copy.deepcopy(dict(setup.config))}
    doc["clientConnection"] = {
        k: v for k, v in (doc.get("clientConnection") or {}).items() if k != "kubeconfig"
    }
    doc["profiles"] = scheduler_profiles.renamed(doc.get("profiles") or [], name)
    if setup.extender:
        doc["extenders"] = setup.extender_entries(doc.get("extenders") or [])
    else:
        doc.pop("extenders", None)
    return doc


def variant(
    m: Manifests,
    setup: SchedulerSetup,
    *,
    image: str,
    scheduler_image: str,
    feature_gates: Mapping[str, bool] | None = None,
    run: str = "",
) -> tuple[Obj, Obj]:
    """The variant's ConfigMap and Deployment. Its labels and selector are its own, so two
    variants' pods never count for each other's Deployment. `feature_gates` become
    kube-scheduler's --feature-gates; `run` makes the names the run's own."""
    name = variant_name(setup, feature_gates, run)
    labels = {
        **m.labels,
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": "scheduler",
        LABEL_VARIANT: name.removeprefix(f"{SCHEDULER}-"),
    }
    config_map: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "data": {CONFIG_KEY: yaml.safe_dump(scheduler_config(m, setup, name), sort_keys=False)},
    }
    dep = copy.deepcopy(m.scheduler_deployment)
    dep["metadata"] = {"name": name, "namespace": NAMESPACE, "labels": labels}
    dep["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": name}}
    pod = dep["spec"]["template"]
    pod["metadata"] = {"labels": labels}
    spec = pod["spec"]
    for volume in spec["volumes"]:
        if volume["name"] == "shared-config":
            volume["configMap"]["name"] = name
    init = []
    for c in spec["initContainers"]:
        if c["name"] == "config":
            c["image"] = image
            c["command"][-1] = name  # the profile name its program sets (already set: a no-op)
        elif c["name"] == "extender":
            if not setup.extender:
                continue
            c["image"] = image
            c["args"] = [*c["args"], *setup.extender_args]
        init.append(c)
    spec["initContainers"] = init
    for c in spec["containers"]:
        if c["name"] == "kube-scheduler":
            c["image"] = scheduler_image
            if feature_gates:
                gates = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(feature_gates.items()))
                c["command"] = [*c["command"], f"--feature-gates={gates}"]
    return config_map, dep


def scheduler_image(git_version: str) -> str:
    """kube-scheduler's image for the cluster's release (`/version`'s gitVersion), e.g.
    v1.36.3 -> registry.k8s.io/kube-scheduler:v1.36.3 (a build suffix such as +k3s1 or
    -gke.100 is dropped: those registries publish the upstream release)."""
    release = git_version.split("+")[0].split("-")[0]
    return f"registry.k8s.io/kube-scheduler:{release}"


def pod_proxy(namespace: str, pod: str, port: int, path: str, *, https: bool) -> str:
    """A pod's endpoint through the API server, as loadgen's `--scrape` takes it."""
    target = f"https:{pod}:{port}" if https else f"{pod}:{port}"
    return f"kube:/api/v1/namespaces/{namespace}/pods/{target}/proxy{path}"
