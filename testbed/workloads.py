"""Which Workload API group a pod belongs to, as each release's pods name it (pure).

1.36 and 1.37 pods name a standalone PodGroup (`spec.schedulingGroup.podGroupName`); 1.35
pods name their Workload and one of its pod groups (`spec.workloadRef`: name, podGroup and
an optional replica key, each replica a gang of its own). loadgen (gang records) and the
extender (gang siblings) read membership here, so both see the same gangs.
"""

from __future__ import annotations

from typing import Any


def group_of(spec: dict[str, Any]) -> str | None:
    """The group a pod's `spec` names: the PodGroup's name, or (1.35) `workload/podGroup`
    (`/replicaKey` appended when set); None when it names none."""
    named = (spec.get("schedulingGroup") or {}).get("podGroupName")
    if isinstance(named, str) and named:
        return named
    ref = spec.get("workloadRef") or {}
    workload, group = ref.get("name"), ref.get("podGroup")
    if not (isinstance(workload, str) and workload and isinstance(group, str) and group):
        return None
    replica = ref.get("podGroupReplicaKey")
    return f"{workload}/{group}/{replica}" if replica else f"{workload}/{group}"
