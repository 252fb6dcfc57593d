"""The scheduler-call decode, old path against new, side by side: `ExtenderArgs` (pydantic,
the reference) vs `extender.decoding.call` (msgspec fast path), on a loadgen-shaped pod with
N candidate names. CPU time per call (process_time), best of `--repeat` batches.

    .venv/bin/python bench/extender_decode.py [--names 500,1000,5000] [--calls 300] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from extender import decoding
from testbed.wire import ExtenderArgs

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "pod-000123",
        "namespace": "loadgen-20261122-171245-d59025",
        "uid": "0b6c1f5e-8a59-4b1e-9d8e-3f3b2f0c9a11",
        "labels": {"testbed.dra.io/run": "20261122-171245-d59025", "testbed.dra.io/phase": "pods"},
        "creationTimestamp": "2026-11-22T17:12:45Z",
        "managedFields": [
            {
                "manager": "loadgen",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2026-11-22T17:12:45Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:containers": {}, "f:resourceClaims": {}}},
            }
        ],
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}],
        "nodeSelector": {"testbed.dra.io/fleet": "demo"},
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
        "schedulerName": "default-scheduler",
    },
    "status": {"phase": "Pending", "qosClass": "BestEffort"},
}


def per_call(fn: Callable[[bytes], object], body: bytes, calls: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(calls):
            fn(body)
        best = min(best, (time.process_time() - start) / calls)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--names", default="500,1000,5000", help="candidate names per call")
    ap.add_argument("--calls", type=int, default=300, help="calls per batch")
    ap.add_argument("--repeat", type=int, default=5, help="batches (the best is kept)")
    args = ap.parse_args()
    print("names   body KiB   ExtenderArgs   decoding.call   ratio")
    for n in (int(x) for x in args.names.split(",")):
        names = [f"demo-h100-{i:05d}" for i in range(n)]
        body = json.dumps({"Pod": POD, "Nodes": None, "NodeNames": names}).encode()
        assert decoding.call(body).names == ExtenderArgs.model_validate_json(body).NodeNames
        old = per_call(ExtenderArgs.model_validate_json, body, args.calls, args.repeat)
        new = per_call(decoding.call, body, args.calls, args.repeat)
        print(
            f"{n:5d}   {len(body) / 1024:8.1f}   {old * 1e6:9.0f} µs   {new * 1e6:10.0f} µs"
            f"   {new / old:5.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
