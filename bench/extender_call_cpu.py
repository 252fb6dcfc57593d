"""Benchmark: the extender's own CPU per scheduler call, in-process (no HTTP, no cluster).

Renders the demo's mixed fleet (`--nodes`), loads it into the extender's store as
`extender serve --from-files` would, and sends the demo's extender workload through the
handlers' code path: per pod, a filter and a prioritize over the first 42 % of the nodes (the
share kube-scheduler's adaptive `percentageOfNodesToScore` sends at 1,000 nodes), each pod
asking one GPU through its own ResourceClaim. With `--allocate` each pod's claim is then
allocated on its best node, so every next call sees nodes that changed (the realistic case).
Prints CPU per pod for decoding, filter, prioritize and encoding the scores (and applying the
allocation), from `time.process_time`: a single-process figure, much lower than the
extender's CPU in the demo, where it shares the machine with the control plane.

    .venv/bin/python bench/extender_call_cpu.py --nodes 1000 --pods 300 [--allocate]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from experiment.demo import plan
from extender import app as extender_app
from extender import decoding, handlers
from extender.config import Settings
from fleet.render import render
from fleet.spec import from_data
from testbed import vocab
from testbed.kube.watching import Change

NAMESPACE = "bench"
SCORED_SHARE = 0.42


def claim(i: int) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": vocab.CLASS_GPU, "count": 1}}
    return {
        "apiVersion": vocab.RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {"name": f"p-{i}-gpu", "namespace": NAMESPACE, "uid": f"c{i}"},
        "spec": {"devices": {"requests": [request]}},
        "status": {},
    }


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{i}", "namespace": NAMESPACE, "uid": f"u{i}"},
        "spec": {
            "containers": [
                {"name": "main", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu1"}],
            "nodeSelector": {vocab.LABEL_FLEET: plan.FLEET_NAME},
        },
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"p-{i}-gpu"}]},
    }


def measure(nodes: int, pods: int, allocate: bool) -> dict[str, float]:
    rendered = render(from_data(plan.fleet_spec(nodes)))
    application = extender_app.build(Settings())
    store, core = application[extender_app.STORE], application[handlers.CORE]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in [*rendered.objects(), *(claim(i) for i in range(pods))]:
        by_kind.setdefault(obj["kind"], []).append(obj)
    for kind in store.watches:  # classes first, as the store's own order
        store.replace(kind, by_kind.get(store.watches[kind].kind, []))
    for view in store.index.nodes.values():  # as the server does once synced (app.py)
        if view.known:
            store.index.summary(view)
    gpus: dict[str, list[str]] = {}
    for s in rendered.slices:
        if s["spec"]["driver"] == vocab.GPU_DRIVER:
            gpus.setdefault(s["spec"]["nodeName"], []).extend(
                d["name"] for d in s["spec"]["devices"]
            )
    names = [n["metadata"]["name"] for n in rendered.nodes][: int(nodes * SCORED_SHARE)]
    bodies = [json.dumps({"Pod": pod(i), "NodeNames": names}).encode() for i in range(pods)]
    spent = dict.fromkeys(("decode", "filter", "prioritize", "encode", "allocate"), 0.0)
    used: dict[str, int] = {}
    clock = time.process_time
    heads = handlers.HostHeads()  # one per server, as app.build makes it
    for i, body in enumerate(bodies):
        t0 = clock()
        call = decoding.call(body)
        t1 = clock()
        core.filter(call.pod, call.names)
        t2 = clock()
        scores = core.prioritize(call.pod, call.names)
        t3 = clock()
        handlers.encode_priorities(call.names, scores, heads)
        t4 = clock()
        spent["decode"] += t1 - t0
        spent["filter"] += t2 - t1
        spent["prioritize"] += t3 - t2
        spent["encode"] += t4 - t3
        if allocate:
            best = call.names[max(range(len(scores)), key=scores.__getitem__)]
            k = used.get(best, 0)
            used[best] = k + 1
            devices = gpus.get(best) or ["gpu-0"]
            allocated = claim(i) | {
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "gpu",
                                    "driver": vocab.GPU_DRIVER,
                                    "pool": best,
                                    "device": devices[k % len(devices)],
                                }
                            ]
                        }
                    }
                }
            }
            t5 = clock()
            store.apply("ResourceClaim", Change("MODIFIED", allocated))
            spent["allocate"] += clock() - t5
    return {k: v / pods * 1e6 for k, v in spent.items()}


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--nodes", type=int, default=1000, help="demo fleet size (default 1000)")
    p.add_argument("--pods", type=int, default=300, help="pods, one filter + prioritize each")
    p.add_argument("--allocate", action="store_true", help="allocate each pod's claim after it")
    args = p.parse_args()
    if args.nodes < 10 or args.pods < 1:
        p.error("--nodes must be at least 10 and --pods at least 1")
    got = measure(args.nodes, args.pods, args.allocate)
    names = int(args.nodes * SCORED_SHARE)
    print(f"{args.nodes} nodes, {names} names per call, {args.pods} pods; CPU per pod (µs):")
    for part, us in got.items():
        if part != "allocate" or args.allocate:
            print(f"  {part:<11} {us:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
