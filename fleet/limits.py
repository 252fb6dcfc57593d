"""The API's limits on what the fleet writes, in one place, with pure checks over objects.

Everything here is checked before the first write (`render.validate`), so a spec the API
server or etcd would refuse fails at once with exit 2 and a message naming the field, instead
of halfway through an apply. Values are from resource.k8s.io/v1 (k8s.io/api v0.36
`resource/v1/types.go`), apimachinery's object-meta validation, core validation, and etcd's
default request limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]

KIB = 1024
MIB = 1024 * KIB

# Object sizes. etcd refuses a request over `--max-request-bytes` (1.5 MiB by default), the
# API server a body over 3 MiB; objects are stored as protobuf, which is smaller than JSON, so
# measuring JSON against 1.5 MiB errs on the safe side.
MAX_OBJECT_BYTES = 3 * MIB // 2
MAX_ANNOTATIONS_BYTES = 256 * KIB  # sum of key and value lengths, per object
MAX_CONFIGMAP_BYTES = MIB  # sum of a ConfigMap's data values (core validation)

# Names.
MAX_DNS_LABEL = 63  # node names are hostnames and label values: 63 too
MAX_LABEL_VALUE = 63
MAX_QUALIFIED_DOMAIN = 63  # attribute/capacity names: `domain/id`
MAX_QUALIFIED_ID = 32

# ResourceSlices.
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_ADVANCED = 64  # if any device has taints or consumes counters
MAX_ATTRIBUTES_PER_DEVICE = 32  # attributes and capacities together
MAX_STRING_ATTRIBUTE = 64
MAX_COUNTER_SETS_PER_SLICE = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_TAINTS_PER_DEVICE = 16
MAX_VALID_VALUES = 10  # capacity requestPolicy.validValues

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


class LimitError(ValueError):
    """An object the API would refuse; the message names what and the limit (the caller adds
    which spec field is responsible)."""


def json_bytes(obj: Any) -> int:
    """Compact JSON size of `obj`: what a create or update sends."""
    return len(json.dumps(obj, separators=(",", ":")))


def annotations_bytes(annotations: Mapping[str, str]) -> int:
    return sum(len(k) + len(v) for k, v in annotations.items())


def human(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:.1f} MiB"
    if n >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{n} bytes"


def check_object(obj: Obj) -> None:
    """Annotations and the whole object within what the API server and etcd accept."""
    meta = obj.get("metadata") or {}
    what = f"{obj.get('kind', 'object')} {meta.get('name', '?')}"
    annotations = annotations_bytes(meta.get("annotations") or {})
    if annotations > MAX_ANNOTATIONS_BYTES:
        raise LimitError(
            f"{what} would carry {human(annotations)} of annotations; the API allows "
            f"{human(MAX_ANNOTATIONS_BYTES)} per object"
        )
    size = json_bytes(obj)
    if size > MAX_OBJECT_BYTES:
        raise LimitError(
            f"{what} would be {human(size)}; etcd accepts {human(MAX_OBJECT_BYTES)} per object"
        )


def check_dns_label(name: str, what: str) -> None:
    if len(name) > MAX_DNS_LABEL or not _DNS_LABEL.match(name):
        raise LimitError(
            f"{what} {name[:70]!r} is not a DNS label (lower case, digits, '-', "
            f"{MAX_DNS_LABEL} characters at most)"
        )


def check_qualified_name(name: str, what: str) -> None:
    """Attribute and capacity names: an optional DNS-subdomain domain (<= 63) and a C
    identifier (<= 32)."""
    domain, _, ident = name.rpartition("/")
    if len(ident) > MAX_QUALIFIED_ID or not _C_IDENTIFIER.match(ident):
        raise LimitError(
            f"{what} {name[:70]!r}: the name after the domain must be a C identifier of at "
            f"most {MAX_QUALIFIED_ID} characters"
        )
    if len(domain) > MAX_QUALIFIED_DOMAIN:
        raise LimitError(
            f"{what} {name[:70]!r}: the domain allows {MAX_QUALIFIED_DOMAIN} characters"
        )


def check_slice(obj: Obj) -> None:
    """Every ResourceSlice limit the fleet could break: counts of devices, counter sets,
    counters, consumptions, attributes, taints; name formats and string lengths."""
    spec = obj["spec"]
    name = obj["metadata"]["name"]
    devices = spec.get("devices") or []
    counter_sets = spec.get("sharedCounters") or []
    if devices and counter_sets:
        raise LimitError(f"slice {name}: devices and sharedCounters in one slice")
    if len(counter_sets) > MAX_COUNTER_SETS_PER_SLICE:
        raise LimitError(
            f"slice {name} has {len(counter_sets)} counter sets; the API allows "
            f"{MAX_COUNTER_SETS_PER_SLICE} per slice"
        )
    for cs in counter_sets:
        check_dns_label(cs["name"], "counter set")
        _check_counters(cs["counters"], f"counter set {cs['name']}", MAX_COUNTERS_PER_SET)
    advanced = any(d.get("taints") or d.get("consumesCounters") for d in devices)
    most = MAX_DEVICES_PER_SLICE_ADVANCED if advanced else MAX_DEVICES_PER_SLICE
    if len(devices) > most:
        why = " with taints or counters" if advanced else ""
        raise LimitError(
            f"slice {name} has {len(devices)} devices; the API allows {most} per slice{why}"
        )
    for dev in devices:
        _check_device(dev)
    check_object(obj)


def _check_device(dev: Obj) -> None:
    name = dev["name"]
    check_dns_label(name, "device name")
    attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_PER_DEVICE:
        raise LimitError(
            f"device {name} has {len(attrs) + len(caps)} attributes and capacities; the API "
            f"allows {MAX_ATTRIBUTES_PER_DEVICE}"
        )
    for key, value in attrs.items():
        check_qualified_name(key, f"attribute of {name}")
        text = value.get("string", value.get("version"))
        if text is not None and len(text) > MAX_STRING_ATTRIBUTE:
            raise LimitError(
                f"attribute {key} of {name} is {len(text)} characters ({text[:20]}...); the "
                f"API allows {MAX_STRING_ATTRIBUTE}"
            )
    for key, cap in caps.items():
        check_qualified_name(key, f"capacity of {name}")
        valid = ((cap.get("requestPolicy") or {}).get("validValues")) or []
        if len(valid) > MAX_VALID_VALUES:
            raise LimitError(
                f"capacity {key} of {name} has {len(valid)} valid values; the API allows "
                f"{MAX_VALID_VALUES}"
            )
    consumptions = dev.get("consumesCounters") or []
    if len(consumptions) > MAX_CONSUMPTIONS_PER_DEVICE:
        raise LimitError(
            f"device {name} consumes from {len(consumptions)} counter sets; the API allows "
            f"{MAX_CONSUMPTIONS_PER_DEVICE}"
        )
    for c in consumptions:
        _check_counters(c["counters"], f"device {name}", MAX_COUNTERS_PER_CONSUMPTION)
    taints = dev.get("taints") or []
    if len(taints) > MAX_TAINTS_PER_DEVICE:
        raise LimitError(
            f"device {name} has {len(taints)} taints; the API allows {MAX_TAINTS_PER_DEVICE}"
        )


def _check_counters(counters: Mapping[str, Any], what: str, most: int) -> None:
    if not counters:
        raise LimitError(f"{what} has no counters")
    if len(counters) > most:
        raise LimitError(f"{what} has {len(counters)} counters; the API allows {most}")
    for key in counters:
        check_dns_label(key, f"counter of {what}:")
