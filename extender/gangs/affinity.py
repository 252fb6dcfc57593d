"""The patches the placer sends a gated pod (pure): its release into its gang's blocks, or
the condition that says why it still waits.

A pod still gated may only be narrowed (KEP-3838): a required node affinity may be set when
it has none, or requirements added to each of its terms, and gates removed. One merge patch
does both, so no scheduler sees the pod ungated and not yet narrowed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from testbed import vocab


def gated(spec: Mapping[str, Any], gate: str) -> bool:
    return any(
        isinstance(g, dict) and g.get("name") == gate for g in spec.get("schedulingGates") or ()
    )


def released(
    pod: Mapping[str, Any], gate: str, label: str, blocks: Sequence[str]
) -> dict[str, Any]:
    """A merge patch for `pod`: every term of its required node affinity also requires
    `label` to be one of `blocks` (one term if it had none), and `gate` removed. It carries
    the pod's resourceVersion, so a pod changed meanwhile is refused (Conflict), not
    overwritten."""
    spec = pod.get("spec") or {}
    requirement = {"key": label, "operator": "In", "values": sorted(blocks)}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or [{}]
    narrowed = [
        {**t, "matchExpressions": [*(t.get("matchExpressions") or []), requirement]} for t in terms
    ]
    gates = [g for g in spec.get("schedulingGates") or () if g.get("name") != gate]
    meta = pod.get("metadata") or {}
    return {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": narrowed
                    }
                }
            },
            "schedulingGates": gates or None,
        },
    }


def waiting(reason: str, message: str, *, placed: bool = False) -> dict[str, Any]:
    """A strategic merge patch of the pod's status (conditions merge by type, so the
    scheduler's own are kept): `vocab.CONDITION_GANG_PLACEMENT` False for `reason`, or
    with `placed` True (a pod that was said to wait, released at last)."""
    condition = {
        "type": vocab.CONDITION_GANG_PLACEMENT,
        "status": "True" if placed else "False",
        "reason": reason,
        "message": message,
    }
    return {"status": {"conditions": [condition]}}
