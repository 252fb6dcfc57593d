"""Child processes started for the length of a block beside the cluster (a second
kube-scheduler, a service such as `extender serve`): start with a log file, wait until an
HTTP endpoint answers, stop cleanly. (The cluster's own, detached processes: `supervision`.)"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from testbed.cluster import supervision


class ProcessError(RuntimeError):
    """The process exited or never became healthy; the message names its log."""


@contextlib.contextmanager
def running(
    what: str,
    argv: list[str],
    *,
    log: Path,
    health_url: str,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `argv` until the block ends, once `health_url` answers 200 (TLS unverified: our
    own components' self-signed certificates on loopback)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise ProcessError(f"{what} exited: {supervision.last_line(log)} (log: {log})")
                with (
                    contextlib.suppress(OSError),
                    urllib.request.urlopen(health_url, timeout=2, context=ctx) as r,
                ):
                    if r.status == 200:
                        break
                if time.monotonic() > deadline:
                    raise ProcessError(f"{what} was not healthy within {timeout:.0f}s (log: {log})")
                time.sleep(0.3)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def service(
    what: str,
    argv: list[str],
    port: int,
    *,
    log: Path,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """A service's `serve` command (`argv`) listening on loopback `port`, running until the
    block ends once its /readyz answers (for the extender: its caches have synced)."""
    return running(
        what, argv, log=log, health_url=f"http://127.0.0.1:{port}/readyz", timeout=timeout, env=env
    )
