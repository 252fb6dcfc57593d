"""The fleet spec and loadgen scenario parsers under a fuzzer: N generated files each.

Documents come from tests/support/fuzz_documents.py (almost-right specs and scenarios with wrong
types, huge or negative numbers and odd Unicode at any field; malformed YAML/JSON, bytes that
are not UTF-8, nesting past recursion limits, alias bombs, Python tags). Each is written to a
file and parsed the way the CLIs do (tests/support/fuzz_oracles.py, which the fuzz tests use
too): the outcome must be a valid object or the
project's one-line error (SpecError/ProfileError, ScenarioError), never another exception.
Then `--cli` of the bad files per parser go through `fleet render -f` and `loadgen run FILE`
as subprocesses: exit 2, one line on stderr, no traceback.

    .venv/bin/python -m tests.fuzz.parsers --documents 50000 [--cli 20] [--seed 1]

Prints per parser: documents, valid / one-line errors / other exceptions / messages that are
not one line, the slowest document, and this process's RSS every 10,000 documents.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from testbed.cluster import supervision
from tests.support import fuzz_documents as fd
from tests.support import fuzz_oracles as oracles

CHUNK = 2_000


def rss_mib() -> float:
    rss = supervision.rss_bytes(os.getpid())
    return rss / 2**20 if rss is not None else float("nan")


PARSERS: dict[str, tuple[Any, str, Callable[[Path], str | None], str, list[str]]] = {
    "fleet spec": (
        fd.fleet_values,
        "pools",
        oracles.parse_fleet_spec,
        "fleet: error: ",
        [sys.executable, "-c", "from fleet.cli import main; main()", "render", "-f", "{}"],
    ),
    "loadgen scenario": (
        fd.scenario_values,
        "phases",
        oracles.parse_scenario,
        "loadgen: error: ",
        [sys.executable, "-m", "loadgen", "run", "{}", "--kubeconfig", "/nonexistent"],
    ),
}


def fuzz(name: str, n: int, cli: int, seed_value: int, tmp: Path) -> bool:
    values, field, parse, prefix, argv = PARSERS[name]
    outcomes: collections.Counter[str] = collections.Counter()
    others: dict[str, str] = {}
    bad_files: list[Path] = []
    slowest = (0.0, b"")
    done = 0
    rss = [(0, rss_mib())]
    started = time.perf_counter()

    def one(doc: fd.Document) -> None:
        nonlocal done, slowest
        if done >= n:
            return
        done += 1
        path = doc.write(tmp, f"d{done % 1000}")
        if name == "loadgen scenario":
            path = path.rename(tmp / f"d{done % 1000}.yaml")
        t0 = time.perf_counter()
        try:
            message = parse(path)
        except Exception as e:  # the bug this hunts: recorded, not raised (no shrinking)
            key = f"{type(e).__name__}: {str(e)[:120]}"
            outcomes["other exception"] += 1
            others.setdefault(key, "".join(traceback.format_exception(e)[-3:]))
            return
        finally:
            dt = time.perf_counter() - t0
            if dt > slowest[0]:
                slowest = (dt, doc.data[:80])
        if message is None:
            outcomes["valid"] += 1
        elif fd.one_line(message):
            outcomes["one-line error"] += 1
            if len(bad_files) < cli:
                keep = tmp / f"bad{len(bad_files)}{path.suffix}"
                keep.write_bytes(path.read_bytes())
                bad_files.append(keep)
        else:
            outcomes["message not one line"] += 1
            others.setdefault("message not one line", message[:300])
        if done % 10_000 == 0:
            rss.append((done, rss_mib()))
            print(f"  {name}: {done:>7} documents  RSS {rss[-1][1]:.1f} MiB", flush=True)

    strategy = fd.documents(values, field)
    chunk = 0
    while done < n:  # fresh hypothesis runs of CHUNK examples: one engine grows with each
        before = done
        seed(seed_value * 1_000_000 + chunk)(
            settings(
                max_examples=min(CHUNK, n - done),
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )(given(doc=strategy)(one))
        )()
        chunk += 1
        if done == before:
            break
    wall = time.perf_counter() - started
    rss.append((done, rss_mib()))

    cli_ok = 0
    cli_bad: list[str] = []
    for f in bad_files:
        proc = subprocess.run(
            [a.replace("{}", str(f)) for a in argv], capture_output=True, timeout=120
        )
        err = proc.stderr.decode(errors="replace")
        lines = err.strip().splitlines()
        if proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(prefix):
            cli_ok += 1
        else:
            cli_bad.append(f"exit {proc.returncode}: {err[-300:]!r}")

    print(f"\n{name}: {done} documents in {wall:.0f}s ({done / wall:.0f}/s)")
    print("  outcomes: " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))
    print(f"  slowest document: {slowest[0] * 1000:.0f} ms ({slowest[1]!r}...)")
    print("  RSS MiB: " + ", ".join(f"{k}: {v:.1f}" for k, v in rss))
    print(f"  CLI: {cli_ok}/{len(bad_files)} bad files -> exit 2 with one line, no traceback")
    for key, tb in others.items():
        print(f"  OTHER: {key}\n{tb}")
    for line in cli_bad:
        print(f"  CLI FAIL: {line}")
    bad = outcomes["other exception"] + outcomes["message not one line"]
    return bad == 0 and not cli_bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--documents", type=int, default=50_000, help="generated files per parser")
    ap.add_argument("--cli", type=int, default=20, help="bad files per parser through the CLI")
    ap.add_argument("--seed", type=int, default=1)
    ns = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in PARSERS:
            ok = fuzz(name, ns.documents, ns.cli, ns.seed, Path(tmp)) and ok
    print(f"\nload {os.getloadavg()[0]:.2f}; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
