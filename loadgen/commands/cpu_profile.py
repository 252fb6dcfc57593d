"""`loadgen cpu`: where a Go component's CPU went, from pprof CPU profiles, by the named
categories loadgen's reports use (`loadgen.cpu`)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from loadgen import cpu, pprof
from loadgen.commands.common import EXIT_OK, UsageError
from testbed import units


def print_breakdown(paths: list[Path], out: Console) -> int:
    profiles = []
    for path in paths:
        try:
            profiles.append(pprof.decode(path.read_bytes()))
        except IsADirectoryError:
            raise UsageError(f"{path} is a directory (give its .pb.gz files)") from None
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        except pprof.ProfileError as e:
            raise UsageError(f"{path}: {e}") from None
    b = cpu.breakdown(profiles)
    table = Table(
        title=f"CPU {b.cpu_seconds:.2f} s in {b.seconds_profiled:.0f} s profiled "
        f"({len(profiles)} files); named categories cover {units.percent(b.coverage)}"
    )
    table.add_column("category")
    table.add_column("CPU", justify="right")
    table.add_column("share", justify="right")
    shares = b.shares()
    for c in cpu.CATEGORIES:
        table.add_row(c, f"{b.by_category[c] / 1e9:.2f} s", units.percent(shares[c]))
    out.print(table)
    for name, share in b.signature_shares().items():
        out.print(f"under {name}: {units.percent(share)}", highlight=False)
    for function, nanos in b.top_other:
        out.print(f"uncategorized: {function} {nanos / 1e9:.2f} s", highlight=False)
    return EXIT_OK
