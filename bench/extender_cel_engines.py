"""The two CEL engines on PyPI, side by side on DRA-shaped selectors (why the extender uses
`common-expression-language`).

For each expression: compile once, then evaluate it against one device (a GPU as a
ResourceSlice publishes it) many times; prints µs per evaluation for each engine and which
expressions each one evaluates at all. `cel-python` is not a dependency: install it into
the environment first (`pip install cel-python`).

    .venv/bin/python bench/extender_cel_engines.py [--evaluations 2000]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import cel

DEVICE = {
    "driver": "gpu.nvidia.com",
    "allowMultipleAllocations": False,
    "attributes": {
        "gpu.nvidia.com": {"productName": "NVIDIA H100 80GB HBM3", "index": 3, "type": "gpu"},
        "resource.kubernetes.io": {"pcieRoot": "pci0000:15"},
    },
    "capacity": {"gpu.nvidia.com": {"memory": 85899345920}},
}
EXPRESSIONS = [
    "device.driver == 'gpu.nvidia.com'",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')",
    "device.attributes['gpu.nvidia.com'].index in [0, 1, 2, 3]",
    "device.driver == 'dra.net' || "
    "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:15'",
    "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA (H|A)100')",
    "device.attributes.exists(d, d == 'gpu.nvidia.com')",
    "has(device.attributes['gpu.nvidia.com'].uuid) ? false : !device.allowMultipleAllocations",
]


def rust(expr: str, n: int) -> float:
    program = cel.compile(expr)
    ctx = cel.Context(variables={"device": DEVICE})
    program.execute(ctx)
    t = time.perf_counter()
    for _ in range(n):
        program.execute(ctx)
    return (time.perf_counter() - t) / n


def python(expr: str, n: int) -> float:
    import celpy  # type: ignore[import-not-found]

    env = celpy.Environment()
    program = env.program(env.compile(expr))
    activation: Any = {"device": celpy.json_to_cel(DEVICE)}
    program.evaluate(activation)
    t = time.perf_counter()
    for _ in range(n):
        program.evaluate(activation)
    return (time.perf_counter() - t) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--evaluations", type=int, default=2000)
    ns = ap.parse_args()
    ratios = []
    for expr in EXPRESSIONS:
        cells = []
        times = []
        for engine in (rust, python):
            try:
                seconds = engine(expr, ns.evaluations if engine is rust else ns.evaluations // 10)
            except Exception as e:
                cells.append(f"fails ({type(e).__name__})")
                times.append(None)
            else:
                cells.append(f"{seconds * 1e6:8.1f} µs")
                times.append(seconds)
        if times[0] and times[1]:
            ratios.append(times[1] / times[0])
        print(f"{cells[0]:>14}  {cells[1]:>14}  {expr}")
    ratios.sort()
    print(
        f"common-expression-language vs cel-python: median {ratios[len(ratios) // 2]:.0f}x faster"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
