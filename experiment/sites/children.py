"""The services as child processes, run through their CLIs exactly as a user would."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path


def tool(name: str) -> str:
    """A console script of this installation (beside the running interpreter)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def wait(proc: subprocess.Popen[bytes]) -> int:
    """Wait for a child; on Ctrl-C (or SIGTERM) pass one SIGINT on and let the child finish
    its own interrupt handling, so what it measured is written and what it created is
    removed. Children run in their own process group, so a terminal's Ctrl-C reaches them
    only this way, exactly once (a second SIGINT would make loadgen abort its cleanup)."""
    interrupted = False
    deadline = None
    while True:
        try:
            code = proc.wait(
                timeout=None if deadline is None else max(0.1, deadline - time.monotonic())
            )
            break
        except KeyboardInterrupt:
            if not interrupted:
                interrupted = True
                deadline = time.monotonic() + 120
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
            break
    if interrupted:
        raise KeyboardInterrupt
    return code


def run(cmd: list[str], env: dict[str, str]) -> int:
    return wait(subprocess.Popen(cmd, env=env, process_group=0))
