"""The fleet's record: the ConfigMap an apply writes last, keeping the spec it applied.

`fleet status` reads a fleet's desired nodes from it and checks the cluster against them;
its absence (or its "applying" mark) tells that an apply was cut short. Pure: the reconciler
reads and writes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fleet import layout, limits
from fleet import profiles as profiles_mod
from fleet.layout import DesiredFleet
from fleet.profiles import Profile
from fleet.spec import Fleet, SpecError, from_data
from testbed import vocab

Obj = dict[str, Any]

RECORD_NAMESPACE = vocab.NAMESPACE
RECORD_KEY = "fleet.yaml"


def record_name(fleet_name: str) -> str:
    return f"dra-testbed-fleet-{fleet_name}"


def record_object(desired: DesiredFleet, namespace: str) -> Obj:
    """The ConfigMap that records an apply finished: written last, after every object."""
    name = desired.fleet.name
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": record_name(name),
            "namespace": namespace,
            "labels": layout.fleet_labels(name),
        },
        "data": {RECORD_KEY: desired.record},
    }


def record_text(fleet: Fleet, profiles: Mapping[str, Profile]) -> str:
    """The record's JSON; a SpecError naming the largest spec field if it cannot fit the
    ConfigMap that keeps it."""
    builtin = profiles_mod.builtin()
    used = {pool.profile for pool in fleet.spec.pools}
    inline = [p for name, p in sorted(profiles.items()) if name in used and builtin.get(name) != p]
    doc = fleet.to_object(inline=inline)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    if len(text) > limits.MAX_CONFIGMAP_BYTES:
        sizes = {k: limits.json_bytes(v) for k, v in doc["spec"].items()}
        field = max(sizes, key=lambda k: sizes[k])
        raise SpecError(
            f"spec.{field}: {limits.human(sizes[field])}; the fleet's record (a ConfigMap, "
            f"{limits.human(limits.MAX_CONFIGMAP_BYTES)} at most) would be "
            f"{limits.human(len(text))}"
        )
    return text


def recorded_fleet(name: str, cm: Obj) -> Fleet | None:
    """The spec a record ConfigMap keeps (None if it keeps none)."""
    text = (cm.get("data") or {}).get(RECORD_KEY)
    return from_data(json.loads(text), source=f"ConfigMap {record_name(name)}") if text else None
