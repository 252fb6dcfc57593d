"""Does a listed object already hold what the fleet wants? Pure comparisons, no I/O.

The reconciler writes only what differs, so a re-apply of the same spec makes zero writes.
"Holds" is deliberately loose where others legitimately add to our objects — the API server
(uid, resourceVersion, a taint's timeAdded), kwok (conditions), node controllers (their own
taints, extra labels) — and strict where a difference changes scheduling: a device, a
capacity, an owner, one of our taints.
"""

from __future__ import annotations

from typing import Any

from testbed import vocab

Obj = dict[str, Any]


def covers(actual: Any, desired: Any) -> bool:
    """True when `actual` holds everything in `desired` (maps may hold more; lists match 1:1)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(
            k in actual and covers(actual[k], v) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(desired)
            and all(covers(a, d) for a, d in zip(actual, desired, strict=True))
        )
    return bool(actual == desired)


def taints(node: Obj) -> list[Obj]:
    return list((node.get("spec") or {}).get("taints") or [])


def node_matches(desired: Obj, actual: Obj) -> bool:
    """Labels, annotations, our taints and the capacity are all in place."""
    dm, am = desired["metadata"], actual.get("metadata") or {}
    return (
        covers(am.get("labels") or {}, dm.get("labels") or {})
        and covers(am.get("annotations") or {}, dm.get("annotations") or {})
        and taints_cover(actual, desired)
        and capacity_matches(desired, actual)
    )


def taints_cover(actual: Obj, desired: Obj) -> bool:
    """Every desired taint is on `actual`; controllers add their own (not-ready, unreachable),
    so only ours must be present."""
    have = {(t.get("key"), t.get("value", ""), t.get("effect")) for t in taints(actual)}
    return all((t["key"], t.get("value", ""), t["effect"]) in have for t in taints(desired))


def capacity_matches(desired: Obj, actual: Obj) -> bool:
    """Capacity and allocatable hold the desired values, and the device-plugin GPU resource
    is present exactly when desired (its presence decides which arm serves `nvidia.com/gpu`)."""
    status = actual.get("status") or {}
    for key in ("capacity", "allocatable"):
        want, have = desired["status"][key], status.get(key) or {}
        if not covers(have, want):
            return False
        if vocab.EXTENDED_RESOURCE_GPU in have and vocab.EXTENDED_RESOURCE_GPU not in want:
            return False
    return True


def node_status_patch(desired: Obj, actual: Obj) -> Obj:
    """The merge patch of the status subresource that makes `actual`'s capacity the desired
    one (a `null` removes a device-plugin GPU count the spec no longer wants)."""
    status: Obj = {}
    for key in ("capacity", "allocatable"):
        want: Obj = dict(desired["status"][key])
        have = (actual.get("status") or {}).get(key) or {}
        if vocab.EXTENDED_RESOURCE_GPU in have and vocab.EXTENDED_RESOURCE_GPU not in want:
            want[vocab.EXTENDED_RESOURCE_GPU] = None
        status[key] = want
    return {"status": status}


def node_apply_body(desired: Obj) -> Obj:
    """What server-side apply owns on a Node: labels, annotations, taints (not status)."""
    meta = desired["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": meta["name"],
            "labels": meta["labels"],
            "annotations": meta["annotations"],
        },
        "spec": {"taints": taints(desired)},
    }


def slice_matches(desired: Obj, actual: Obj) -> bool:
    """Same devices and counters exactly (a taint, a counter or `allowMultipleAllocations`
    that the spec dropped must go), same pool (any generation), labels and owner."""
    want = dict(desired["spec"])
    want["pool"] = {k: v for k, v in want["pool"].items() if k != "generation"}
    have = actual.get("spec") or {}
    for key in _EXACT_SLICE_FIELDS:
        if _server_fields_dropped(have.get(key)) != want.pop(key, None):
            return False
    dm, am = desired["metadata"], actual.get("metadata") or {}
    owners = [(o.get("uid"), o.get("kind")) for o in am.get("ownerReferences") or []]
    want_owners = [(o["uid"], o["kind"]) for o in dm.get("ownerReferences") or []]
    return (
        covers(have, want)
        and covers(am.get("labels") or {}, dm.get("labels") or {})
        and owners == want_owners
    )


_EXACT_SLICE_FIELDS = ("devices", "sharedCounters")


def _server_fields_dropped(items: Any) -> Any:
    """`items` without what the API server adds to them: a device taint's `timeAdded`."""
    if not isinstance(items, list) or not any(isinstance(d, dict) and "taints" in d for d in items):
        return items
    out = []
    for d in items:
        if isinstance(d, dict) and "taints" in d:
            taints = [{k: v for k, v in t.items() if k != "timeAdded"} for t in d["taints"]]
            d = {**d, "taints": taints}
        out.append(d)
    return out


def pool_generation(slices: list[Obj | None]) -> int:
    """The highest pool generation among listed slices (absent ones count 0)."""
    return max(
        (
            int(((s.get("spec") or {}).get("pool") or {}).get("generation") or 0)
            for s in slices
            if s
        ),
        default=0,
    )


def with_version(desired: Obj, actual: Obj) -> Obj:
    """`desired` carrying `actual`'s resourceVersion, for an optimistic-concurrency replace."""
    body = {**desired, "metadata": dict(desired["metadata"])}
    body["metadata"]["resourceVersion"] = actual["metadata"]["resourceVersion"]
    return body
