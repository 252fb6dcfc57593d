"""The quantity parser (testbed.units.parse_quantity) on long inputs: it must stay linear in
the text's length (the regex parsers it replaced backtracked quadratically: an 8,000-digit
quantity took ~1.5 s in the extender's CEL `quantity()`), and on the short quantities real
objects hold.

    .venv/bin/python bench/quantities.py [--repeat 5]

Prints, per input, its length and the best wall time of `--repeat` parses (or refusals).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import time
from collections.abc import Callable

from testbed import units


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.suppress(ValueError):  # a refusal is timed too
            fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    inputs = {
        "80Gi": "80Gi",
        "1.5e9": "1.5e9",
        "8,000 digits": "9" * 8000,
        "8,000 digits, then a bad suffix": "9" * 8000 + "x",
        "8,000 fraction digits": "0." + "0" * 7999 + "1",
        "8,000 leading zeros, Ki": "0" * 8000 + "1Ki",
        "80,000 digits": "9" * 80000,
        "80,000 fraction digits": "0." + "0" * 79999 + "1",
    }
    for name, text in inputs.items():
        seconds = best(functools.partial(units.parse_quantity, text), args.repeat)
        print(f"{name:<34} {len(text):>7} chars  {seconds * 1e6:>10.1f} µs")


if __name__ == "__main__":
    main()
