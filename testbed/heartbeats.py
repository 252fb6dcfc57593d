"""Whether a loadgen run recorded on its namespace is alive (pure).

A run records itself on its namespace: a random owner token (only the process that made the
namespace knows it, so only that process deletes it on its own authority) and a heartbeat, a
timestamp it refreshes every `interval` seconds while it runs. A run whose heartbeat is older
than `STALE_INTERVALS` intervals was killed (SIGKILL, a lost machine): its pods and claims are
abandoned. A run kept on purpose (`--keep`) says so when it ends.

In the floor because more than loadgen asks: `testbed down` refuses to delete a cluster that a
live run still uses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from testbed import vocab

DEFAULT_INTERVAL: Final = 10.0
STALE_INTERVALS: Final = 3
"""Missed heartbeats before a run counts as abandoned: one late patch is no death."""

State = Literal["running", "kept", "abandoned"]


def parse_time(value: Any) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp; None when absent or malformed."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def interval(namespace: dict[str, Any]) -> float:
    """Seconds between the run's heartbeats, as it recorded them (default when absent)."""
    annotations = namespace.get("metadata", {}).get("annotations") or {}
    try:
        return float(annotations.get(vocab.ANNOTATION_LOADGEN_INTERVAL, DEFAULT_INTERVAL))
    except ValueError:
        return DEFAULT_INTERVAL


def state(namespace: dict[str, Any], now: float) -> State:
    """Whether the run behind `namespace` still runs, was kept, or was abandoned.

    A namespace without a heartbeat (made by an older loadgen) can only be judged
    abandoned: nothing refreshes it.
    """
    annotations = namespace.get("metadata", {}).get("annotations") or {}
    if annotations.get(vocab.ANNOTATION_LOADGEN_STATE) == "kept":
        return "kept"
    beat = parse_time(annotations.get(vocab.ANNOTATION_LOADGEN_HEARTBEAT))
    if beat is None or now - beat > STALE_INTERVALS * interval(namespace):
        return "abandoned"
    return "running"
