"""The common path of a scheduler call from its turn at the gate to its judged answer, in
process (no HTTP): the gate's admission and turn, the CEL budget, and the core's judging of a
`bench/common.py` pod on a fleet of dgx-h100 nodes. Times the event loop thread's CPU per call
(`time.thread_time`: a busy machine that deschedules the process does not inflate it), the
best of `--rounds` rounds of 200 calls, for a judge that does nothing (the path's own cost),
a filter of a pod that requires nothing, one that requires alignment, and a prioritize.

Side by side with another commit: the extender on PYTHONPATH is the one timed, so

    git archive <commit> | tar -x -C ../other
    PYTHONPATH=../other .venv/bin/python bench/extender_turn.py
    .venv/bin/python bench/extender_turn.py

and compare the two (alternate runs a few times on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import build_objects, pod  # bench/ is on sys.path
from prometheus_client import CollectorRegistry

from extender import app as app_mod
from extender import decoding, handlers
from extender.cache import files
from extender.config import Settings
from extender.core import FilterOutcome

CALLS = 200


class _Request:
    """What handlers before 2026-11-29 (429f49f) read of a request: its app."""

    def __init__(self, app: Any) -> None:
        self.app = app


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=7)
    ns = ap.parse_args()

    objs, names = build_objects(ns.nodes, 1)
    app = app_mod.build(Settings(), registry=CollectorRegistry())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps({"kind": "List", "items": objs}))
        files.load(app[app_mod.STORE], [path])
    core, gate = app[handlers.CORE], app[handlers.GATE]
    # The handlers' first argument: the app since 429f49f, the request before.
    takes_app = "app" in inspect.signature(handlers._within_budget).parameters
    owner: Any = app if takes_app else _Request(app)

    def nothing(pod: dict[str, Any], names: list[str]) -> None:
        return None

    cases: dict[str, tuple[Callable[[dict[str, Any], list[str]], Any], dict[str, Any]]] = {
        "path alone (judge nothing)": (nothing, pod(False)),
        "filter, requires nothing": (core.filter, pod(False)),
        "filter, requires alignment": (core.filter, pod(True)),
        "prioritize": (core.prioritize, pod(False)),
    }
    for case, (judge, p) in cases.items():
        call = decoding.call(json.dumps({"Pod": p, "Nodes": None, "NodeNames": names}).encode())

        def passed(names: list[str]) -> FilterOutcome:
            return FilterOutcome(passed=names)

        async def once(judge: Any = judge, call: decoding.Call = call) -> None:
            async with gate.admitted(gate.clock()) as turn, turn.judging():
                out = handlers._within_budget(owner, "filter", judge, passed, call)
                if inspect.isawaitable(out):
                    await out

        for _ in range(CALLS):  # warm: summaries, caches
            await once()
        best = float("inf")
        for _ in range(ns.rounds):
            t = time.thread_time()
            for _ in range(CALLS):
                await once()
            best = min(best, (time.thread_time() - t) / CALLS)
        print(f"{case:28s} {best * 1e6:8.1f} µs/call (best of {ns.rounds} x {CALLS})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
