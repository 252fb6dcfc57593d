"""The feature gates the local cluster's kube-apiserver, kube-controller-manager and
kube-scheduler run with.

The DRA shapes the testbed publishes, requests and judges each sit behind a gate, at a
different stage in each release (in 1.35 several are alpha and off; in 1.37 some are GA and
locked on). `testbed up` turns every needed gate on where the release has it and lets it be
set; a gate the release lacks (removed, or not yet added) is never set, since a component
refuses to start with an unknown gate. A user's `--feature-gates` adds to (or overrides)
them, and naming a gate the release does not know, or setting a locked gate against its
default, is refused before anything starts.

What each release knows comes from its own gate registry: `tools/k8s/<module>/
feature-gates.txt`, written by tools/k8s/pin.sh (one line per gate: name, stage, default,
locked). Parsing and the gate arithmetic are pure; `known` reads that file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from testbed.cluster import binaries as bins

NEEDED: tuple[str, ...] = (
    "DynamicResourceAllocation",  # ResourceClaims, DeviceClasses, ResourceSlices
    "DRAPrioritizedList",  # firstAvailable alternatives
    "DRAAdminAccess",  # adminAccess requests
    "DRAPartitionableDevices",  # shared counters + consumesCounters (MIG partitions)
    "DRAConsumableCapacity",  # allowMultipleAllocations, capacity requests
    "DRAExtendedResource",  # DeviceClass extendedResourceName: nvidia.com/gpu via DRA
    "DRADeviceTaints",  # device taints in ResourceSlices
    "DRAResourceClaimDeviceStatus",  # a claim's status.devices
    "DRASchedulerFilterTimeout",  # the DynamicResources filter gives up instead of hanging
)
"""Gates on in every `testbed up`, where the release has them and they are not locked."""

# Gates that only work with an API version the API server does not serve by default: the
# `--runtime-config` entry that serves it, per release (GA in 1.37: served as v1).
_APIS: dict[str, dict[str, str]] = {
    "DRADeviceTaintRules": {
        "1.35": "resource.k8s.io/v1alpha3=true",
        "1.36": "resource.k8s.io/v1beta2=true",
    },
    # The Workload API (Workload, PodGroup): beta in 1.37, and beta APIs are not served by
    # default; v1alpha2 in 1.36 (v1alpha1 Workload only in 1.35).
    "GenericWorkload": {
        "1.35": "scheduling.k8s.io/v1alpha1=true",
        "1.36": "scheduling.k8s.io/v1alpha2=true",
        "1.37": "scheduling.k8s.io/v1beta1=true",
    },
}


@dataclass(frozen=True)
class Gate:
    """One gate as a release's components know it."""

    stage: str
    """ALPHA, BETA, GA or DEPRECATED."""
    default: bool
    locked: bool
    """Locked to its default: setting it otherwise makes the component refuse to start."""


def parse_known(text: str) -> dict[str, Gate]:
    """A release's `feature-gates.txt` (`Name STAGE default locked` per line; pure)."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, stage, default, locked = line.split()
        out[name] = Gate(stage, default == "true", locked == "true")
    return out


def known(release: str) -> dict[str, Gate] | None:
    """The gates `release` knows, from its pinned module's gate list; None where no list is
    at hand (an installed package without the repository's tools/k8s). A preview's
    components come from two releases that all take the same `--feature-gates`: the gates
    both know (`common`)."""
    own = _listed(release)
    plane = bins.control_plane(release)
    if own is None or plane is None:
        return own
    other = _listed(plane)
    return own if other is None else common(own, other)


def _listed(release: str) -> dict[str, Gate] | None:
    module = bins.module_dir(release)
    listing = module / "feature-gates.txt" if module else None
    if listing is None or not listing.is_file():
        return None
    return parse_known(listing.read_text())


def common(newer: Mapping[str, Gate], older: Mapping[str, Gate]) -> dict[str, Gate]:
    """The gates two releases both know, as `newer` has them, locked where either locks them
    (a value one release refuses stops that component; pure)."""
    return {
        name: Gate(gate.stage, gate.default, gate.locked or older[name].locked)
        for name, gate in newer.items()
        if name in older
    }


_GATE = re.compile(r"[A-Z][A-Za-z0-9]*")


class GateError(ValueError):
    """A malformed --feature-gates value; the message names the bad entry."""


def parse(text: str) -> dict[str, bool]:
    """`A=true,B=false` (the components' own syntax) as a dict; GateError if malformed."""
    out: dict[str, bool] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, sep, value = entry.partition("=")
        if not sep or not _GATE.fullmatch(name) or value.lower() not in ("true", "false"):
            raise GateError(f"{entry!r} is not Name=true or Name=false")
        out[name] = value.lower() == "true"
    return out


def check(release: str, wanted: Mapping[str, bool], table: Mapping[str, Gate] | None) -> None:
    """GateError naming the first of `wanted` that `release` does not have, or that sets a
    locked gate against its default (pure; `table` from `known`, None: nothing to check)."""
    if table is None:
        return
    for name, value in sorted(wanted.items()):
        gate = table.get(name)
        if gate is None:
            raise GateError(f"Kubernetes {release} has no feature gate {name}")
        if gate.locked and value != gate.default:
            raise GateError(
                f"{name} is {gate.stage} and locked to {str(gate.default).lower()} in "
                f"Kubernetes {release}"
            )


def gates(
    extra: Mapping[str, bool] | None = None, table: Mapping[str, Gate] | None = None
) -> dict[str, bool]:
    """Every needed gate `table` has and lets be set on (all of them without a table), then
    `extra` (the user's, checked with `check`) on top (pure)."""
    needed = [g for g in NEEDED if table is None or (g in table and not table[g].locked)]
    return {**dict.fromkeys(needed, True), **(extra or {})}


def for_release(release: str, extra: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """The gates the components of `release` run with: `gates` over the release's own list,
    after `check`ing `extra` against it (GateError)."""
    table = known(release)
    check(release, extra or {}, table)
    return gates(extra, table)


def flag_value(g: Mapping[str, bool]) -> str:
    """The `--feature-gates` value, sorted so equal sets give equal command lines."""
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(g.items()))


def runtime_config(release: str, g: Mapping[str, bool]) -> list[str]:
    """`--runtime-config` entries the enabled gates need served in `release` (by its API
    server: a preview's is its control plane's)."""
    served_by = bins.control_plane(release) or release
    return sorted(
        api
        for gate, by_release in _APIS.items()
        if g.get(gate) and (api := by_release.get(served_by)) is not None
    )


_ENABLED = re.compile(r"^kubernetes_feature_enabled\{([^}]*)\}\s+(\S+)", re.MULTILINE)
_NAME = re.compile(r'name="([^"]+)"')


def enabled_in(metrics: str) -> dict[str, bool]:
    """Each gate's state as a component reports it in its /metrics text
    (`kubernetes_feature_enabled{name=...} 0|1`; pure)."""
    out = {}
    for labels, value in _ENABLED.findall(metrics):
        if m := _NAME.search(labels):
            out[m.group(1)] = float(value) == 1.0
    return out
