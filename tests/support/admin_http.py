"""GETs against a service's admin endpoints as a polite client makes them.

/metrics and /debug/* are rate-limited (a 429 with Retry-After past a burst), so a test that
reads one node after another waits as asked instead of failing on the limit it is testing
elsewhere. Bounded: a limit that never lifts still fails the test.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

ATTEMPTS = 30


def get(port: int, path: str, timeout: float = 10.0) -> bytes:
    """The body of GET http://127.0.0.1:`port``path`, waiting out 429s (HTTPError otherwise)."""
    url = f"http://127.0.0.1:{port}{path}"
    for attempt in range(ATTEMPTS):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                body: bytes = resp.read()
                return body
        except urllib.error.HTTPError as e:
            if e.code != 429 or attempt == ATTEMPTS - 1:
                raise
            time.sleep(float(e.headers.get("Retry-After") or 1))
    raise AssertionError("unreachable")


def get_json(port: int, path: str, timeout: float = 10.0) -> Any:
    return json.loads(get(port, path, timeout))
