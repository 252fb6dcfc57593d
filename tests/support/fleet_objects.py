"""Fleet custom-resource objects and their status checks, for tests of `fleet serve`."""

from __future__ import annotations

from typing import Any

from testbed import vocab
from tests.support.waiting import condition


def fleet_object(name: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{vocab.TESTBED_GROUP}/{vocab.FLEET_CRD_VERSION}",
        "kind": "Fleet",
        "metadata": {"name": name},
        "spec": {"pools": [{"name": "h", "profile": "dgx-h100", "count": count}]},
    }


def ready_at(generation: int, nodes: int) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        st = obj.get("status") or {}
        return (
            st.get("observedGeneration") == generation
            and condition(obj, "Ready") == "True"
            and st.get("readyNodes") == nodes
        )

    return check
