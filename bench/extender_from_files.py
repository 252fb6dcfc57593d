"""Benchmark: CPU to load a rendered fleet for `extender serve --from-files`, YAML vs JSON lines.

Renders `--nodes` dgx-h100 nodes with `fleet render` in both formats into a temporary
directory, then loads each file into a fresh extender store (`extender.cache.files.load`) in
this process and prints the CPU seconds each load took (`time.process_time`, so a busy machine
stretches the wall time but not the figure). Target (issue 14): <= 10 s at 5,000 nodes.

    .venv/bin/python bench/extender_from_files.py --nodes 5000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from extender.cache import files
from extender.cache.index import Index
from extender.cache.store import Store
from extender.config import Settings

FLEET = str(Path(sys.executable).parent / "fleet")


def load_cpu(path: Path) -> tuple[float, dict[str, int]]:
    store = Store(Index(Settings()))
    started = time.process_time()
    counts = files.load(store, [path])
    return time.process_time() - started, counts


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--nodes", type=int, default=5000, help="rendered dgx-h100 nodes (default 5000)")
    args = p.parse_args()
    if args.nodes < 1:
        p.error("--nodes must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, name in (("json", "fleet.jsonl"), ("yaml", "fleet.yaml")):
            path = Path(tmp) / name
            render = [FLEET, "render", "--profile", "dgx-h100", "--nodes", str(args.nodes)]
            with path.open("w") as out:
                subprocess.run(
                    [*render, "--name", "bench", "--format", fmt], stdout=out, check=True
                )
            cpu, counts = load_cpu(path)
            size = path.stat().st_size / 2**20
            nodes, slices = counts["Node"], counts["ResourceSlice"]
            print(f"{fmt:<5} {size:6.1f} MiB  {cpu:6.1f} s CPU  {nodes} nodes, {slices} slices")
    return 0


if __name__ == "__main__":
    sys.exit(main())
