"""Start-up against the API server: the extender listens at once (/healthz answers, /readyz
says what it waits for) and waits for the API server to answer, saying so in the log, before
it reads the cluster's version and gates and starts its watches. An API server that accepts
connections and never answers is reported every attempt, never waited on in silence."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

RETRY_MAX_SECONDS = 10.0
"""Longest pause between two attempts."""


class ApiWait:
    """Where the wait for the API server stands, for /readyz."""

    def __init__(self, host: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.clock = clock
        self.since = clock()
        self.error: str | None = None
        """Why the last attempt failed; None before the first attempt ends."""
        self.done = False

    def reason(self) -> str | None:
        """Why the extender is not ready yet on the API server's account, or None."""
        if self.done:
            return None
        waited = f"for {self.clock() - self.since:.0f}s"
        last = f": {self.error}" if self.error else ""
        return f"waiting for the API server at {self.host} ({waited}){last}"


async def wait_for_api(kube: Kube, state: ApiWait, *, attempt_timeout: float) -> dict[str, Any]:
    """The API server's /version, once it answers within `attempt_timeout`; each failed
    attempt is logged (one line) and retried after a pause that grows to RETRY_MAX_SECONDS."""
    log.info("waiting for the API server at %s", kube.host)
    pause = 0.5
    while True:
        try:
            version = await kube.request(
                "GET", "/version", retry=False, attempt_timeout=attempt_timeout
            )
        except errors.KubeError as e:
            if isinstance(e.__cause__, TimeoutError):
                state.error = f"no answer within {attempt_timeout:g}s (--request-timeout)"
            else:
                state.error = str(e.__cause__ or e).splitlines()[0][:200]
            log.warning(
                "the API server at %s: %s; still waiting after %.0fs, not ready",
                kube.host,
                state.error,
                state.clock() - state.since,
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_SECONDS)
            continue
        state.done = True
        log.info(
            "the API server at %s answered after %.1fs", kube.host, state.clock() - state.since
        )
        return version if isinstance(version, dict) else {}
