"""The Fleet CustomResourceDefinition (cluster-scoped, with a status subresource).

Its spec schema mirrors `fleet.spec.FleetSpec` (a unit test checks the field names agree);
pydantic still validates each object, and an invalid one gets a Ready=False condition that
names the field. manifests/fleet/crd.yaml is golden-tested against `crd_object()`; regenerate
it with `python -m fleet.crd > manifests/fleet/crd.yaml`.
"""

from __future__ import annotations

import sys
from typing import Any

from fleet import yamlout
from testbed import vocab
from testbed.kube.resources import Resource

FLEETS = Resource(vocab.TESTBED_GROUP, vocab.FLEET_CRD_VERSION, vocab.FLEET_PLURAL, "Fleet", False)
CRD_NAME = f"{vocab.FLEET_PLURAL}.{vocab.TESTBED_GROUP}"

_STR = {"type": "string"}
_INT0 = {"type": "integer", "minimum": 0}
_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_TAINTS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["key"],
        "properties": {
            "key": _STR,
            "value": _STR,
            "effect": {"type": "string", "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
        },
    },
}

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["pools"],
    "properties": {
        "seed": _INT0,
        "pools": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "profile", "count"],
                "properties": {
                    "name": _STR,
                    "profile": _STR,
                    "count": _INT0,
                    "labels": _MAP,
                    "taints": _TAINTS,
                    "capacity": _MAP,
                    "extendedResources": {"type": "boolean"},
                },
            },
        },
        "topology": {
            "type": "object",
            "properties": {
                "hostsPerRack": {"type": "integer", "minimum": 1},
                "racksPerBlock": {"type": "integer", "minimum": 1},
                "blockLabel": _STR,
                "rackLabel": _STR,
            },
        },
        "labels": _MAP,
        "annotations": _MAP,
        "taints": _TAINTS,
        "extendedResources": {"type": "boolean"},
        "kwokShards": {"type": "integer", "minimum": 1, "maximum": 64},
        "deviceTaints": {
            "type": "array",
            "maxItems": 16,
            "items": {
                "type": "object",
                "required": ["share"],
                "properties": {
                    "key": _STR,
                    "value": _STR,
                    "effect": {"type": "string", "enum": ["NoSchedule", "NoExecute", "None"]},
                    "share": {
                        "type": "number",
                        "exclusiveMinimum": True,
                        "minimum": 0,
                        "maximum": 1,
                    },
                    "pools": {"type": "array", "items": _STR},
                },
            },
        },
        "profiles": {
            "type": "array",
            "description": "Inline hardware profiles (same shape as fleet/profiles/*.yaml).",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
}

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
