"""Object templates: the namespace, ResourceClaimTemplates, pods and Jobs a run creates.

Pure functions returning plain dicts. Every object carries the run's label so cleanup and
tracking select exactly this run; names are deterministic (`<phase>-<index>`), so a create
retried after an unanswered request cannot make a second object.
"""

from __future__ import annotations

from typing import Any, Final

from loadgen.scenarios.model import Claim, Phase, go_duration
from testbed import scheduler_profiles, vocab

MANAGED_BY: Final = vocab.LOADGEN_MANAGED_BY
LABEL_PHASE: Final = "testbed.dra.io/loadgen-phase"
POD_IMAGE: Final = "registry.k8s.io/pause:3.10"
CLAIM_NAME: Final = "devices"
# Bare pods stay Running until deleted; Jobs get a run time, and without one a long one so
# kwok's pod-complete stage does not finish them after its 1 s default.
DEFAULT_JOB_RUN_SECONDS: Final = 24 * 3600.0


def namespace_name(run_id: str) -> str:
    return f"loadgen-{run_id}"


def run_labels(run_id: str) -> dict[str, str]:
    return {vocab.LABEL_RUN: run_id, vocab.LABEL_MANAGED_BY: MANAGED_BY}


# Claims with adminAccess are only allowed in namespaces with this label (resource/v1).
LABEL_ADMIN_ACCESS: Final = "resource.kubernetes.io/admin-access"
# Pod Security admission enforces this level on every pod of the namespace; `baseline` admits
# every pod loadgen makes and refuses privileged ones (manifests/loadgen/vap.yaml demands it
# of loadgen's ServiceAccount).
LABEL_POD_SECURITY_ENFORCE: Final = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVEL: Final = "baseline"


def namespace(
    run_id: str, annotations: dict[str, str] | None = None, *, admin_access: bool = False
) -> dict[str, Any]:
    """The run's namespace; `annotations` carry its ownership and heartbeat (`loadgen.runs`);
    `admin_access` lets its claims ask for admin access. Pod Security baseline is enforced
    in it."""
    labels = run_labels(run_id) | {LABEL_POD_SECURITY_ENFORCE: POD_SECURITY_LEVEL}
    if admin_access:
        labels[LABEL_ADMIN_ACCESS] = "true"
    meta: dict[str, Any] = {"name": namespace_name(run_id), "labels": labels}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _memory_selector(min_memory: str | None) -> list[dict[str, Any]]:
    if not min_memory:
        return []
    expr = (
        f"device.capacity['{vocab.GPU_DRIVER}'].{vocab.GPU_CAP_MEMORY}"
        f".compareTo(quantity('{min_memory}')) >= 0"
    )
    return [{"cel": {"expression": expr}}]


def claim_spec(claim: Claim) -> dict[str, Any]:
    """The ResourceClaim spec that serves `claim` (templates and shared claims alike).

    Aligned GPU+NIC pairs become one request per device (`gpu-0`, `nic-0`, ...) with a
    `matchAttribute` constraint per pair: one constraint over all of them would demand a
    single PCIe root for every device, which no multi-GPU host has. `numa` adds one
    constraint over every GPU and NIC request on the standard NUMA attribute, or with
    `derived` on a derived attribute each request computes from its driver's own.
    """
    gpu_selectors = _memory_selector(claim.min_memory)
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    if claim.nics and claim.align:
        for i in range(claim.gpus):
            requests.append(_gpu_request(f"gpu-{i}", claim, 1, gpu_selectors))
            requests.append(_request(f"nic-{i}", claim.nic_class, 1, []))
            constraints.append(
                {"requests": [f"gpu-{i}", f"nic-{i}"], "matchAttribute": vocab.ATTR_PCIE_ROOT}
            )
    else:
        if claim.first_available:
            alternatives = [
                {"name": f"alt{i}"}
                | _exactly(
                    a.gpu_class or claim.gpu_class, a.gpus, _memory_selector(a.min_memory), claim
                )
                for i, a in enumerate(claim.first_available)
            ]
            requests.append({"name": "gpu", "firstAvailable": alternatives})
        elif claim.gpus:
            requests.append(_gpu_request("gpu", claim, claim.gpus, gpu_selectors))
        if claim.nics:
            requests.append(_request("nic", claim.nic_class, claim.nics, []))
    if claim.numa:
        names = [r["name"] for r in requests]
        attribute = vocab.ATTR_NUMA_NODE
        if claim.derived:
            attribute = vocab.DERIVED_NUMA_NODE
            for r in requests:
                source = (
                    vocab.NIC_ATTR_NUMA if r["name"].startswith("nic") else vocab.ATTR_NUMA_NODE
                )
                r["exactly"]["derivedAttributes"] = [
                    {"name": attribute, "expression": attribute_expression(source)}
                ]
        constraints.append({"requests": names, "matchAttribute": attribute})
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def attribute_expression(qualified: str) -> str:
    """The CEL reading a device's attribute `domain/name`: `device.attributes['domain'].name`
    (a device missing it is a CEL runtime error, which fails the pod's scheduling: every
    device the fleet publishes has both NUMA attributes)."""
    domain, _, name = qualified.rpartition("/")
    return f"device.attributes['{domain}'].{name}"


def claim_template(claim: Claim, run_id: str) -> dict[str, Any]:
    """A ResourceClaimTemplate for `claim`, named by `claim.key`."""
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": claim.key,
            "namespace": namespace_name(run_id),
            "labels": run_labels(run_id),
        },
        "spec": {"spec": claim_spec(claim)},
    }


def shared_claim_name(phase: Phase, group: int) -> str:
    return f"{phase.name}-shared-{group:06d}"


def shared_claim(phase: Phase, group: int, run_id: str) -> dict[str, Any]:
    """ResourceClaim number `group` of a phase whose pods share claims (`shared_by` each)."""
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "name": shared_claim_name(phase, group),
            "namespace": namespace_name(run_id),
            "labels": run_labels(run_id) | {LABEL_PHASE: phase.name},
        },
        "spec": claim_spec(phase.claim),
    }


def _exactly(
    device_class: str, count: int, selectors: list[dict[str, Any]], claim: Claim | None = None
) -> dict[str, Any]:
    """The fields of one exact request; `claim` adds its GPU shape (All, capacity, admin)."""
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if claim is not None and claim.all_gpus:
        exactly["allocationMode"] = "All"
    else:
        exactly |= {"allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = selectors
    if claim is not None and claim.shares:
        shares = {vocab.GPU_CAP_MEMORY: claim.memory, vocab.GPU_CAP_COMPUTE: claim.compute}
        exactly["capacity"] = {"requests": {k: v for k, v in shares.items() if v is not None}}
    if claim is not None and claim.admin_access:
        exactly["adminAccess"] = True
    return exactly


def _gpu_request(
    name: str, claim: Claim, count: int, selectors: list[dict[str, Any]]
) -> dict[str, Any]:
    if claim.mig_profile:
        # MIG partitions are devices of their own class; the profile attribute picks one.
        expr = (
            f"device.attributes['{vocab.GPU_DRIVER}'].{vocab.GPU_ATTR_MIG_PROFILE} == "
            f"'{claim.mig_profile}'"
        )
        mig = [{"cel": {"expression": expr}}]
        return {"name": name, "exactly": _exactly(claim.mig_class, count, mig, claim)}
    return {"name": name, "exactly": _exactly(claim.gpu_class, count, selectors, claim)}


def _request(
    name: str, device_class: str, count: int, selectors: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"name": name, "exactly": _exactly(device_class, count, selectors)}


def object_name(phase: Phase, index: int) -> str:
    return f"{phase.name}-{index:06d}"


def pod_spec(
    phase: Phase, node_selector: dict[str, str], scheduler_name: str | None = None
) -> dict[str, Any]:
    """The pod spec every pod of `phase` shares (bare pods and Job templates alike)."""
    container: dict[str, Any] = {"name": "main", "image": POD_IMAGE}
    spec: dict[str, Any] = {
        "containers": [container],
        "tolerations": [
            {
                "key": vocab.KWOK_TAINT_KEY,
                "operator": "Equal",
                "value": vocab.KWOK_TAINT_VALUE,
                "effect": "NoSchedule",
            }
        ],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
    }
    if phase.kind == "jobs":
        spec["restartPolicy"] = "Never"
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if phase.gang_gated:
        spec["schedulingGates"] = [{"name": vocab.GATE_GANG_PLACEMENT}]
    if phase.gang_profile:
        spec["schedulerName"] = scheduler_profiles.gang_profile(scheduler_name)
    elif scheduler_name:
        spec["schedulerName"] = scheduler_name
    claim = phase.claim
    if claim.device_plugin and claim.gpus:
        count = str(claim.gpus)
        container["resources"] = {
            "limits": {vocab.EXTENDED_RESOURCE_GPU: count},
            "requests": {vocab.EXTENDED_RESOURCE_GPU: count},
        }
    elif claim.uses_dra:
        # Shared claims are named per pod (see `pod`); this is the template's reference.
        spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": claim.key}]
        container["resources"] = {"claims": [{"name": CLAIM_NAME}]}
    return spec


def _pod_metadata(phase: Phase, run_id: str) -> dict[str, Any]:
    labels = run_labels(run_id) | {LABEL_PHASE: phase.name}
    meta: dict[str, Any] = {"labels": labels}
    annotations: dict[str, str] = {}
    if phase.kind == "jobs":
        run = phase.run_time if phase.run_time is not None else DEFAULT_JOB_RUN_SECONDS
        annotations[vocab.KWOK_POD_COMPLETE_DELAY] = go_duration(run)
    if footprint := phase.claim.footprint_bytes:
        annotations[vocab.ANNOTATION_GPU_MEMORY] = str(footprint)
    if annotations:
        meta["annotations"] = annotations
    return meta


def pod(phase: Phase, index: int, run_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One bare pod; `spec` is `pod_spec(phase, ...)`, built once per phase and shared."""
    meta = _pod_metadata(phase, run_id)
    meta["name"] = object_name(phase, index)
    meta["namespace"] = namespace_name(run_id)
    if phase.claim.shared_by > 1 and phase.claim.uses_dra:
        group = index // phase.claim.shared_by
        claims = [{"name": CLAIM_NAME, "resourceClaimName": shared_claim_name(phase, group)}]
        spec = spec | {"resourceClaims": claims}  # a shallow copy: the rest stays shared
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# The one pod group (template) of a native gang's Workload.
POD_GROUP_TEMPLATE: Final = "workers"


def workload(
    phase: Phase, index: int, run_id: str, version: str = vocab.WORKLOAD_VERSION
) -> dict[str, Any]:
    """The Workload of native gang `index` in the Workload API's `version`: one pod group
    (template) with the gang policy. v1alpha1 (1.35) holds the group itself (`podGroups`,
    `policy`); later versions hold a template a PodGroup object is made from."""
    if version == "v1alpha1":
        groups = {"podGroups": [{"name": POD_GROUP_TEMPLATE, "policy": _gang_policy(phase)}]}
    else:
        groups = {
            "podGroupTemplates": [
                {"name": POD_GROUP_TEMPLATE, "schedulingPolicy": _gang_policy(phase)}
            ]
        }
    return {
        "apiVersion": f"{vocab.SCHEDULING_GROUP}/{version}",
        "kind": "Workload",
        "metadata": _object_metadata(phase, index, run_id),
        "spec": groups,
    }


def pod_group(
    phase: Phase, index: int, run_id: str, version: str = vocab.WORKLOAD_VERSION
) -> dict[str, Any]:
    """The PodGroup of native gang `index` (named as its Job): all of the Job's concurrent
    pods or none (`gang.minCount`), made from its Workload's template. v1alpha2 (1.36) names
    the template as `podGroupTemplateRef.workload`, v1beta1 (1.37) as `workloadRef`."""
    name = object_name(phase, index)
    ref: dict[str, Any]
    if version == "v1alpha2":
        ref = {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": POD_GROUP_TEMPLATE}
            }
        }
    else:
        ref = {"workloadRef": {"workloadName": name, "templateName": POD_GROUP_TEMPLATE}}
    return {
        "apiVersion": f"{vocab.SCHEDULING_GROUP}/{version}",
        "kind": "PodGroup",
        "metadata": _object_metadata(phase, index, run_id),
        "spec": ref | {"schedulingPolicy": _gang_policy(phase)},
    }


def group_ref(name: str, version: str = vocab.WORKLOAD_VERSION) -> dict[str, Any]:
    """The pod spec fields naming native gang `name`'s group: `schedulingGroup` (1.36 on),
    or in v1alpha1 (1.35) `workloadRef` to the Workload and its pod group."""
    if version == "v1alpha1":
        return {"workloadRef": {"name": name, "podGroup": POD_GROUP_TEMPLATE}}
    return {"schedulingGroup": {"podGroupName": name}}


def _object_metadata(phase: Phase, index: int, run_id: str) -> dict[str, Any]:
    """A Job's, Workload's or PodGroup's metadata: named as the phase's object `index`."""
    return {
        "name": object_name(phase, index),
        "namespace": namespace_name(run_id),
        "labels": run_labels(run_id) | {LABEL_PHASE: phase.name},
    }


def _gang_policy(phase: Phase) -> dict[str, Any]:
    return {"gang": {"minCount": phase.concurrent}}


def build(
    phase: Phase,
    index: int,
    run_id: str,
    spec: dict[str, Any],
    workload_version: str = vocab.WORKLOAD_VERSION,
) -> dict[str, Any]:
    """The object number `index` of `phase`: a pod, or a Job of `phase.parallelism` x
    `phase.completions` pods whose gangs label their pods, or (native gangs) name their group
    in the Workload API's `workload_version`."""
    if phase.kind != "jobs":
        return pod(phase, index, run_id, spec)
    name = object_name(phase, index)
    template_meta = _pod_metadata(phase, run_id)
    if phase.native_gang:
        spec = spec | group_ref(name, workload_version)
    elif phase.gang:
        template_meta["labels"][vocab.LABEL_GANG] = name
        if phase.gang_gated:
            # The placer places a gang once this many of its pods are present.
            annotations = template_meta.setdefault("annotations", {})
            annotations[vocab.ANNOTATION_GANG_SIZE] = str(phase.concurrent)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _object_metadata(phase, index, run_id),
        "spec": {
            "parallelism": phase.parallelism,
            "completions": phase.completions,
            "backoffLimit": 0,
            "template": {"metadata": template_meta, "spec": spec},
        },
    }
