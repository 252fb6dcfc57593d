"""Client-side QPS limiting: a token bucket like client-go's flowcontrol."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up. qps <= 0 means unlimited."""

    def __init__(
        self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = asyncio.Lock()

    def delay(self) -> float:
        """Take one token now; return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        async with self._lock:
            wait = self.delay()
        if wait > 0:
            await asyncio.sleep(wait)
