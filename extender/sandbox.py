"""CEL evaluations that may be costly, run in a worker process with a hard deadline.

The interpreter (`common-expression-language`) holds the GIL while it evaluates and counts
no cost: an expression with nested comprehensions (`.all`, `.exists`, `.map`...) over a
literal list can run for seconds (5-deep `.all` over 25 elements: ~10 million steps), and
inline it would stop the event loop, /healthz and every other call with it. Such
expressions are evaluated here instead: the extender waits at most `deadline` seconds for
the answer, then kills the worker (and starts the next one at once) and reports the
expression as too costly. Expressions without a comprehension run inline: their work is
bounded by their length and the device's (Kubernetes-limited) attributes.

The worker reads one JSON request per line (`{"e": expression, "v": variables}`) and answers
one JSON line (`{"ok": result}` or `{"error": message}`); it ends when its input closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import time
import weakref
from typing import Any

log = logging.getLogger(__name__)

DEADLINE_SECONDS = 0.25
"""Longest wait for one evaluation: past it the expression is too costly. Far above what a
selector takes (~5-70 µs), far below kube-scheduler's 5 s call timeout."""
START_SECONDS = 3.0
"""Longest wait for a fresh worker to say it is ready (it imports the interpreter)."""


class TooCostly(Exception):
    """No answer within the deadline: the evaluation was abandoned."""


class Failed(Exception):
    """The expression failed to evaluate (a CEL runtime error); the message says why."""


class Sandbox:
    """One worker process, started when first needed and again after each kill."""

    def __init__(self, deadline: float = DEADLINE_SECONDS) -> None:
        self.deadline = deadline
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._buffer = b""
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def start(self) -> None:
        """Start a worker unless one runs (without waiting for it)."""
        if self._proc is not None:
            return
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "extender.sandbox"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self._ready = False
        self._buffer = b""
        self._finalizer = weakref.finalize(self, _kill, self._proc)

    def evaluate(self, expression: str, variables: dict[str, Any]) -> Any:
        """The value of `expression` over `variables`; Failed on a runtime error, TooCostly
        past the deadline (the worker is then replaced)."""
        self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        if not self._ready:
            if self._line(time.monotonic() + START_SECONDS) != b"ready":
                self._restart()
                raise TooCostly("the CEL sandbox did not start")
            self._ready = True
        try:
            proc.stdin.write(json.dumps({"e": expression, "v": variables}).encode() + b"\n")
            proc.stdin.flush()
        except (OSError, ValueError):  # the worker died
            self._restart()
            raise Failed("the CEL sandbox failed") from None
        line = self._line(time.monotonic() + self.deadline)
        if line is None:
            self._restart()
            raise TooCostly(f"no result within {self.deadline:g}s")
        reply = json.loads(line)
        if "error" in reply:
            raise Failed(str(reply["error"]))
        return reply.get("ok")

    def _line(self, until: float) -> bytes | None:
        """The worker's next line, or None if it does not come by `until` (or it died)."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = until - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _restart(self) -> None:
        self.close()
        self.start()

    def close(self) -> None:
        """Stop the worker, if any."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._proc = None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    proc.wait()


def _serve() -> None:
    """The worker: evaluate each request line, answer a line, until the input closes."""
    import cel

    from extender.expressions import FUNCTIONS

    programs: dict[str, Any] = {}
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        expression = request["e"]
        try:
            program = programs.get(expression)
            if program is None:
                if len(programs) > 1024:
                    programs.clear()
                program = programs[expression] = cel.compile(expression)
            result = program.execute(cel.Context(variables=request["v"], functions=FUNCTIONS))
        except Exception as e:  # the binding's runtime errors
            text = str(e).strip().splitlines()
            answer = json.dumps({"error": text[0][:200] if text else type(e).__name__})
        else:
            try:
                answer = json.dumps({"ok": result})
            except (TypeError, ValueError):  # a result JSON cannot carry
                answer = json.dumps({"error": f"a result of type {type(result).__name__}"})
        out.write(answer.encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    logging.getLogger("cel").setLevel(logging.CRITICAL)
    _serve()
