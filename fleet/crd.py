"""The Fleet CustomResourceDefinition (cluster-scoped, with a status subresource).

Its spec schema is generated from `fleet.spec.FleetSpec` (`structural`: what the API server
accepts of pydantic's JSON schema); pydantic still validates each object, and an invalid one
gets a Ready=False condition that names the field. manifests/fleet/crd.yaml is golden-tested
against `crd_object()`; regenerate it with `python -m fleet.crd > manifests/fleet/crd.yaml`.
"""

from __future__ import annotations

import sys
from typing import Any

from fleet import spec, yamlout
from testbed import vocab
from testbed.kube.resources import Resource

FLEETS = Resource(vocab.TESTBED_GROUP, vocab.FLEET_CRD_VERSION, vocab.FLEET_PLURAL, "Fleet", False)
CRD_NAME = f"{vocab.FLEET_PLURAL}.{vocab.TESTBED_GROUP}"

_STR = {"type": "string"}
_DROPPED = ("title", "default", "$defs")
"""pydantic's titles; its defaults (pydantic applies them: the API server must not write them
into stored objects); the definitions, once inlined."""


def structural(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema as a structural CRD schema (pure): every `$ref` inlined, an
    optional field's `anyOf: [T, null]` as T itself, JSON Schema 2020's numeric
    `exclusiveMinimum`/`exclusiveMaximum` as OpenAPI 3.0's `minimum` + boolean, and no
    `additionalProperties: false` (forbidden there: the API server prunes unknown fields,
    and pydantic, forbidding extras, never sees them)."""
    defs: dict[str, Any] = schema.get("$defs") or {}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[str(node["$ref"]).rsplit("/", 1)[1]]
            return walk({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        kinds = [n for n in node.get("anyOf") or () if n != {"type": "null"}]
        if "anyOf" in node and len(kinds) == 1:
            return walk({**kinds[0], **{k: v for k, v in node.items() if k != "anyOf"}})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or (key == "additionalProperties" and value is False):
                continue
            if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
                out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
                out[key] = True
            elif key == "properties":  # field names, not keywords
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        return out

    out: dict[str, Any] = walk(schema)
    return out


SPEC_SCHEMA: dict[str, Any] = structural(spec.FleetSpec.model_json_schema(by_alias=True))
"""Generated from `fleet.spec.FleetSpec`: the model is the one description of a spec."""

STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observedGeneration": {"type": "integer"},
        "phase": _STR,
        "desiredNodes": {"type": "integer"},
        "nodes": {"type": "integer"},
        "readyNodes": {"type": "integer"},
        "lastReconcile": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "conditions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "status"],
                "properties": {
                    "type": _STR,
                    "status": _STR,
                    "reason": _STR,
                    "message": _STR,
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "observedGeneration": {"type": "integer"},
                },
            },
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        },
    },
}


def crd_object() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": CRD_NAME,
            "labels": {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER},
        },
        "spec": {
            "group": vocab.TESTBED_GROUP,
            "scope": "Cluster",
            "names": {
                "plural": vocab.FLEET_PLURAL,
                "singular": "fleet",
                "kind": vocab.FLEET_KIND,
                "listKind": f"{vocab.FLEET_KIND}List",
            },
            "versions": [
                {
                    "name": vocab.FLEET_CRD_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Desired", "type": "integer", "jsonPath": ".status.desiredNodes"},
                        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyNodes"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": _STR,
                                "kind": _STR,
                                "metadata": {"type": "object"},
                                "spec": SPEC_SCHEMA,
                                "status": STATUS_SCHEMA,
                            },
                        }
                    },
                }
            ],
        },
    }


if __name__ == "__main__":
    sys.stdout.write(yamlout.dump(crd_object()))
