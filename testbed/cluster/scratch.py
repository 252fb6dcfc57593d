"""Private scratch directories for files that carry credentials (a flattened kubeconfig).

They live under the testbed's state home, never in /tmp (every user lists it), each named
after its writer's pid and start time. The writer removes its own on the way out; should it be
killed (SIGKILL), the next writer removes every sibling whose process is gone.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from pathlib import Path

from testbed.cluster import paths, supervision

_NAME = re.compile(r"^(\d+)-(\d+)-[0-9a-f]+$")


def private_dir(kind: str) -> Path:
    """A new directory only this user can read, under <state home>/<kind>/; the directories
    there of processes that are gone are removed first."""
    parent = paths.state_home() / kind
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    sweep(parent)
    pid = os.getpid()
    made = parent / f"{pid}-{supervision.start_time(pid)}-{secrets.token_hex(4)}"
    made.mkdir(mode=0o700)
    return made


def sweep(parent: Path) -> list[Path]:
    """Remove the directories in `parent` whose writer (pid and start time) no longer runs;
    the ones removed. Names of another shape are left alone."""
    removed = []
    for d in parent.iterdir():
        m = _NAME.match(d.name)
        if m and supervision.start_time(int(m.group(1))) != m.group(2):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed
