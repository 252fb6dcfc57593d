"""What a pod asks for: GPUs and NICs by DeviceClass, alignment constraints, its job.

Pure: the caller passes lookups for claims, templates and classes. Two views come out: the
GPU and NIC counts per class the scoring terms weigh (a request with its own selectors counts
as its class there; `firstAvailable` as its first alternative; `All` and admin access not at
all), and the claims themselves (`specs`), which `allocation` judges with DRA's full request
semantics. Anything we cannot read (an unknown class, a claim not seen yet) becomes a note,
and a reason in `unjudged`, and is left out, so the policies never reject a node because of
it.

Pod annotations (values are case-insensitive; anything else is ignored with a note):
  testbed.dra.io/require-alignment: pcie-root | numa
      every GPU the pod asks for must be able to get a free NIC of the pod's NIC class on
      the same PCIe root (`pcie-root`) or at least the same NUMA node (`numa`); the filter
      rejects nodes where that is provably impossible.
  testbed.dra.io/require-locality: rack | block
      the pod must land in a rack (block) where a sibling of its job already runs; when no
      sibling runs yet, every node passes. Nodes without the rack (block) label fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from extender import expressions, selectors
from extender.config import Settings
from testbed import vocab, workloads

Alignment = Literal["pcie-root", "numa"]
Locality = Literal["rack", "block"]
Role = Literal["gpu", "nic"]

ALIGNMENT_VALUES: dict[str, Alignment] = {"pcie-root": "pcie-root", "numa": "numa"}
LOCALITY_VALUES: dict[str, Locality] = {"rack": "rack", "block": "block"}

ClaimLookup = Callable[[str, str], dict[str, Any] | None]

_NOTE_VALUE_MAX = 64
"""Longest annotation value quoted in a note (the decision log keeps notes; values can be
as long as the pod's whole annotation budget)."""


@dataclass(frozen=True, slots=True)
class Demand:
    gpu_class: str | None = None
    gpus: int = 0
    nic_class: str | None = None
    nics: int = 0
    groups: tuple[tuple[int, int], ...] = ()
    """(gpus, nics) sets DRA must place on one PCIe root (a matchAttribute constraint)."""
    require_alignment: Alignment | None = None
    require_locality: Locality | None = None
    aligned_in_tree: bool = False
    """A claim constrains its GPUs and NICs to one NUMA node (`matchAttribute:
    resource.kubernetes.io/numaNode`, or on a derived attribute each of those requests reads
    from a NUMA attribute): DRA enforces the alignment wherever the pod lands, so the
    alignment term does not apply (no paying twice for it)."""
    job: str | None = None
    """`namespace/name` of the pod's gang (its PodGroup, else the gang label) or Job."""
    group: bool = False
    """The gang is a Workload API PodGroup: kube-scheduler places all its pods in one cycle
    and binds none before the last is placed, so no sibling is ever seen placed meanwhile."""
    notes: tuple[str, ...] = ()
    specs: tuple[dict[str, Any], ...] = ()
    """The specs of the pod's claims not yet allocated, for `allocation.judge`."""
    unjudged: tuple[str, ...] = ()
    """Reasons (metric labels) of requests left out of the scoring counts."""

    @property
    def pairs(self) -> int:
        """How many GPUs want a NIC next to them."""
        return min(self.gpus, self.nics) if self.gpu_class and self.nic_class else 0

    @property
    def empty(self) -> bool:
        return self.gpus == 0 and self.nics == 0 and self.job is None and not self.require_locality


def role_of(klass: selectors.DeviceClassSelector | None, settings: Settings) -> Role | None:
    if klass is None or klass.driver is None or klass.not_judged is not None:
        return None
    if klass.driver in settings.gpu_drivers:
        return "gpu"
    if klass.driver in settings.nic_drivers:
        return "nic"
    return None


def pod_group(pod: dict[str, Any]) -> str | None:
    """The Workload API group the pod names: its PodGroup (`spec.schedulingGroup`, 1.36 on)
    or, on 1.35, its Workload's pod group (`spec.workloadRef`)."""
    return workloads.group_of(pod.get("spec") or {})


def job_of(pod: dict[str, Any], settings: Settings) -> str | None:
    """The pod's gang: the Workload API group it names (1.35 on), else the gang label, else
    its Job. Sibling pods are watched by label (see cache.store), so a PodGroup's pods are
    followed when they also carry a gang or Job label, as every Job's pods do."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = pod_group(pod) or labels.get(settings.gang_label) or labels.get(vocab.LABEL_JOB_NAME)
    if not isinstance(name, str) or not name:
        return None
    return f"{meta.get('namespace') or 'default'}/{name}"


def of_pod(
    pod: dict[str, Any],
    *,
    claim: ClaimLookup,
    template: ClaimLookup,
    classes: Mapping[str, selectors.DeviceClassSelector],
    settings: Settings,
) -> Demand:
    """The demand of `pod`; `classes` maps DeviceClass names to their compiled selectors."""
    meta = pod.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    annotations = meta.get("annotations") or {}
    notes: list[str] = []
    counts: dict[tuple[Role, str], int] = {}
    groups: list[tuple[int, int]] = []
    specs: list[dict[str, Any]] = []
    unjudged: list[str] = []
    in_tree: list[bool] = []

    statuses = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    for ref in (pod.get("spec") or {}).get("resourceClaims") or []:
        if not isinstance(ref, dict):
            continue
        spec = _claim_spec(ref, statuses, ns, claim, template, notes)
        if spec is not None:
            specs.append(spec)
            in_tree.append(_add_claim(spec, classes, settings, counts, groups, notes, unjudged))

    gpu_class, gpus = _dominant(counts, "gpu", notes)
    nic_class, nics = _dominant(counts, "nic", notes)
    alignment = _annotation(
        annotations, vocab.ANNOTATION_REQUIRE_ALIGNMENT, ALIGNMENT_VALUES, notes
    )
    if alignment is not None and not (gpus and nics):
        notes.append("require-alignment has nothing to align: the pod asks no GPU-NIC pairs")
    job = job_of(pod, settings)
    locality = _annotation(annotations, vocab.ANNOTATION_REQUIRE_LOCALITY, LOCALITY_VALUES, notes)
    if locality is not None and job is None:
        notes.append("require-locality without a job or gang label: no siblings to follow")
    return Demand(
        gpu_class=gpu_class,
        gpus=gpus,
        nic_class=nic_class,
        nics=nics,
        groups=tuple(sorted(groups, reverse=True)),
        require_alignment=alignment,
        require_locality=locality,
        aligned_in_tree=any(in_tree),
        job=job,
        group=pod_group(pod) is not None,
        notes=tuple(notes),
        specs=tuple(specs),
        unjudged=tuple(unjudged),
    )


def _claim_spec(
    ref: dict[str, Any],
    statuses: dict[Any, Any],
    ns: str,
    claim: ClaimLookup,
    template: ClaimLookup,
    notes: list[str],
) -> dict[str, Any] | None:
    """The spec of the claim behind one pod reference, or None if it is already allocated
    (its devices are decided) or cannot be found."""
    name = ref.get("resourceClaimName")
    tmpl = ref.get("resourceClaimTemplateName")
    if not name and tmpl:
        name = statuses.get(ref.get("name"))
    if name:
        obj = claim(ns, str(name))
        if obj is not None:
            if (obj.get("status") or {}).get("allocation"):
                notes.append(f"claim {name} already allocated")
                return None
            return dict(obj.get("spec") or {})
    if tmpl:
        obj = template(ns, str(tmpl))
        if obj is not None:
            return dict((obj.get("spec") or {}).get("spec") or {})
        notes.append(f"template {tmpl} not found")
        return None
    notes.append(f"claim {name or ref.get('name')} not found")
    return None


def _add_claim(
    spec: dict[str, Any],
    classes: Mapping[str, selectors.DeviceClassSelector],
    settings: Settings,
    counts: dict[tuple[Role, str], int],
    groups: list[tuple[int, int]],
    notes: list[str],
    unjudged: list[str],
) -> bool:
    """Count the claim's devices into `counts` and `groups`; True when it carries the
    in-tree NUMA constraint over GPUs and NICs."""
    devices = spec.get("devices") or {}
    per_request: dict[str, tuple[Role, int]] = {}
    derived: dict[str, Mapping[str, str]] = {}
    for req in devices.get("requests") or []:
        if not isinstance(req, dict):
            continue
        rname = str(req.get("name", ""))
        exactly = req.get("exactly")
        derived[rname] = _derived_of(exactly)
        alternatives = req.get("firstAvailable")
        if not isinstance(exactly, dict):
            if (
                isinstance(alternatives, list)
                and alternatives
                and isinstance(alternatives[0], dict)
            ):
                exactly = alternatives[0]  # scored as its first choice
            else:
                notes.append(f"request {rname}: neither exactly nor firstAvailable")
                unjudged.append("request_shape")
                continue
        cls = str(exactly.get("deviceClassName", ""))
        klass = classes.get(cls)
        if klass is None:
            notes.append(f"request {rname}: DeviceClass {cls!r} unknown")
            unjudged.append("unknown_class")
            continue
        if klass.not_judged is not None:
            notes.append(f"request {rname}: DeviceClass {cls!r} not judged ({klass.not_judged})")
            unjudged.append(klass.not_judged)
            continue
        role = role_of(klass, settings)
        if role is None:
            continue
        if exactly.get("adminAccess") is True:
            continue  # consumes nothing
        if exactly.get("allocationMode", "ExactCount") != "ExactCount":
            continue  # All: judged by allocation, not counted
        count = exactly.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            notes.append(f"request {rname}: bad count {count!r}")
            unjudged.append("bad_count")
            continue
        counts[(role, cls)] = counts.get((role, cls), 0) + count
        per_request[rname] = (role, count)
    numa = False
    for con in devices.get("constraints") or []:
        attribute = con.get("matchAttribute") if isinstance(con, dict) else None
        if not isinstance(attribute, str):
            continue
        names = con.get("requests") or list(per_request)
        levels = {_level(attribute, derived.get(n, {})) for n in names if n in per_request}
        if len(levels) != 1:
            continue  # requests of one constraint compare different things: not judged
        attribute = levels.pop()
        if attribute is None:
            continue
        g = sum(c for r, c in (per_request.get(n, ("", 0)) for n in names) if r == "gpu")
        n = sum(c for r, c in (per_request.get(n, ("", 0)) for n in names) if r == "nic")
        if attribute == vocab.ATTR_NUMA_NODE:
            numa = numa or bool(g and n)
        elif g + n >= 2:
            groups.append((g, n))
    return numa


_LEVELS = {a.rpartition("/")[2]: a for a in (vocab.ATTR_PCIE_ROOT, vocab.ATTR_NUMA_NODE)}
"""Drivers name NUMA and PCIe-root attributes each in their own domain (`dra.net/numaNode`)
with these names."""


_NO_DERIVED: Mapping[str, str] = MappingProxyType({})


def _derived_of(exactly: Any) -> Mapping[str, str]:
    """A request's derived attributes: name -> CEL expression."""
    items = exactly.get("derivedAttributes") if isinstance(exactly, dict) else None
    if not items:
        return _NO_DERIVED  # nearly every request: no dict made for it
    return {
        str(d.get("name")): str(d.get("expression"))
        for d in items or ()
        if isinstance(d, dict) and isinstance(d.get("expression"), str)
    }


def _level(attribute: str, derived: Mapping[str, str]) -> str | None:
    """The topology level (the standard PCIe-root or NUMA attribute) a constraint on
    `attribute` compares for a request with these derived attributes: the attribute itself,
    or the one attribute of that level its derived expression reads; None for another."""
    expr = derived.get(attribute)
    if expr is None:
        return attribute if attribute in _LEVELS.values() else None
    names = {name for _, name in expressions.attributes_read(expr)}
    return _LEVELS.get(names.pop()) if len(names) == 1 else None


def _dominant(
    counts: dict[tuple[Role, str], int], role: Role, notes: list[str]
) -> tuple[str | None, int]:
    """The class the pod asks most devices of, for `role` (pods rarely mix classes)."""
    mine = sorted(((n, c) for (r, c), n in counts.items() if r == role), reverse=True)
    if not mine:
        return None, 0
    if len(mine) > 1:
        notes.append(f"{role}s of several classes; judging {mine[0][1]} only")
    return mine[0][1], mine[0][0]


def _annotation(
    annotations: dict[str, Any],
    key: str,
    values: Mapping[str, Any],
    notes: list[str],
) -> Any:
    raw = annotations.get(key)
    if raw is None:
        return None
    value = values.get(str(raw).strip().lower())
    if value is None:
        shown = raw if len(str(raw)) <= _NOTE_VALUE_MAX else f"{str(raw)[:_NOTE_VALUE_MAX]}..."
        notes.append(f"annotation {key}={shown!r} ignored (accepted: {', '.join(values)})")
    return value
