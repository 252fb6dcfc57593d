"""The feature gates the local cluster's kube-apiserver, kube-controller-manager and
kube-scheduler run with.

The DRA shapes the testbed publishes, requests and judges each sit behind a gate. In 1.36
they are all on by default (GA or beta), in 1.35 several are alpha and off; so `testbed up`
sets every one of them on explicitly, for whichever release it runs, and a user's
`--feature-gates` adds to (or overrides) them. Read from `pkg/features/kube_features.go` of
each pinned `k8s.io/kubernetes` module; setting a gate that is GA and locked on to `true`
is allowed (the component only warns).

Pure: the gate set, its flag value, and the APIs a gate needs served.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
"""Gates on in every `testbed up` (each exists in 1.35 and 1.36)."""

# Gates that only work with an API version the API server does not serve by default: the
# `--runtime-config` entry that serves it, per release.
_APIS: dict[str, dict[str, str]] = {
    "DRADeviceTaintRules": {
        "1.35": "resource.k8s.io/v1alpha3=true",
        "1.36": "resource.k8s.io/v1beta2=true",
    },
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


def gates(extra: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """Every needed gate on, then `extra` (the user's) on top."""
    return {**dict.fromkeys(NEEDED, True), **(extra or {})}


def flag_value(g: Mapping[str, bool]) -> str:
    """The `--feature-gates` value, sorted so equal sets give equal command lines."""
    return ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(g.items()))


def runtime_config(release: str, g: Mapping[str, bool]) -> list[str]:
    """`--runtime-config` entries the enabled gates need served in `release`."""
    return sorted(
        api
        for gate, by_release in _APIS.items()
        if g.get(gate) and (api := by_release.get(release)) is not None
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
