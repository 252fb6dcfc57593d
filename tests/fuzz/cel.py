"""CEL selectors under a fuzzer: N hypothesis-generated expressions through the served app.

The extender's app serves a rendered dgx-h100 fleet (in this process, on a real socket).
For each generated expression (tests/unit/extender/cel_strategies.py: DRA-shaped
expressions, mutations of them, garbage), the `fuzz` DeviceClass and a claim's own
selector are set to it, then POST /prioritize, /filter (the pod requires alignment, so the
DRA verdict is enforced) and /debug/judge are sent for a pod asking for that class.
Counts replies by status; any 5xx, or an exception in the server (the error middleware
counts those as `error`), is a failure. Prints compiled/not-judged/erroring tallies.

    .venv/bin/python -m tests.fuzz.cel --expressions 20000 [--nodes 8]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import http.client
import json
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from prometheus_client import CollectorRegistry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the shared strategies
from aiohttp import web

from extender import app as app_mod
from extender import expressions
from extender.cache import files
from extender.config import Settings
from fleet.render import render_profile
from testbed.cluster import ports
from testbed.kube.watching import Change
from tests.support.cel_strategies import expressions_any

NS = "fz"


def objects(nodes: int) -> tuple[list[dict[str, Any]], list[str]]:
    rendered = render_profile("dgx-h100", nodes, name="fz", seed=7)
    names = [n["metadata"]["name"] for n in rendered.nodes]
    tmpl = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "fuzzed", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "r", "exactly": {"deviceClassName": "fuzz", "count": 2}},
        ]}}},
    }  # fmt: skip
    return [*rendered.objects(), tmpl], names


def claim_with(expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "own", "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {
            "deviceClassName": "gpu.nvidia.com",
            "selectors": [{"cel": {"expression": expression}}],
        }}]}},
    }  # fmt: skip


def pod(name: str, **ref: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "annotations": {"testbed.dra.io/require-alignment": "numa"},
        },
        "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "x", **ref}]},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--expressions", type=int, default=20_000)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ns = ap.parse_args()
    # Every generated expression is new, so each would log its one line; keep the output to
    # the tallies.
    logging.getLogger("extender").setLevel(logging.ERROR)

    objs, names = objects(ns.nodes)
    loop = asyncio.new_event_loop()
    app = app_mod.build(Settings(debug=True), registry=CollectorRegistry())
    store = app[app_mod.STORE]
    port = ports.free_port()

    async def start() -> web.AppRunner:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return runner

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.json"
        path.write_text(json.dumps({"kind": "List", "items": objs}))
        files.load(store, [path])
    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(start(), loop).result()

    def set_expression(expression: str) -> None:
        async def apply() -> None:
            cls = {
                "kind": "DeviceClass",
                "metadata": {"name": "fuzz"},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
            store.apply("DeviceClass", Change(type="MODIFIED", object=cls))
            store.apply("ResourceClaim", Change(type="MODIFIED", object=claim_with(expression)))

        asyncio.run_coroutine_threadsafe(apply(), loop).result()

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    statuses: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    done = 0
    started = time.monotonic()
    evaluator = expressions.Evaluator()  # only to sort the expressions by kind
    bodies = [
        json.dumps({"Pod": pod("a", resourceClaimTemplateName="fuzzed"), "NodeNames": names}),
        json.dumps({"Pod": pod("b", resourceClaimName="own"), "NodeNames": names}),
    ]

    def one(expression: str) -> None:
        nonlocal done
        sel = evaluator.compile_selector(expression)
        kinds[
            "does_not_compile" if sel.error else "unsupported" if sel.unsupported else "judged"
        ] += 1
        set_expression(expression)
        for body in bodies:
            for path in ("/prioritize", "/filter", "/debug/judge"):
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                statuses[f"{path} {r.status}"] += 1
                if r.status >= 500 and len(failures) < 20:
                    failures.append(f"{r.status} {path} {expression!r}")
        done += 1
        if done % 5000 == 0:
            print(f"{done} expressions, {time.monotonic() - started:.0f}s", flush=True)

    run_seed = ns.seed
    while done < ns.expressions:
        batch = min(2000, ns.expressions - done)

        @seed(run_seed)
        @settings(
            max_examples=batch,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(expressions_any)
        def fuzz(expression: str) -> None:
            one(expression)

        fuzz()
        run_seed += 1

    _, metrics = http_get(port, "/metrics")
    errors = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("extender_requests_total{") and 'outcome="error"' in line
    )
    fives = sum(n for k, n in statuses.items() if k.split()[1].startswith("5"))
    print(f"expressions: {done} ({dict(kinds)}) in {time.monotonic() - started:.0f}s")
    print(f"replies: {dict(sorted(statuses.items()))}")
    print(f"5xx: {fives}; server errors counted: {errors:.0f}")
    for f in failures:
        print("  ", f)
    return 1 if fives or errors else 0


def http_get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read().decode()


if __name__ == "__main__":
    sys.exit(main())
