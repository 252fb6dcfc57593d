"""CEL evaluations that may be costly, run in a worker process with a hard deadline.

The interpreter (`common-expression-language`) holds the GIL while it evaluates and counts
no cost: an expression with nested comprehensions (`.all`, `.exists`, `.map`...) over a
literal list can run for seconds (5-deep `.all` over 25 elements: ~10 million steps), and
inline it would stop the event loop, /healthz and every other call with it. Such
expressions are evaluated here instead: the extender waits at most `deadline` seconds for
the answer (in a thread, the event loop free meanwhile: `extender.judging`), then kills the
worker (and starts the next one at once) and reports the expression as too costly.
Expressions without a comprehension run inline: their work is bounded by their length and
the device's (Kubernetes-limited) attributes.

The worker reads one JSON request per line (`{"e": expression, "v": variables}`) and answers
one JSON line (`{"ok": result}` or `{"error": message}`); it ends when its input closes.
"""

from __future__ import annotations

import asyncio
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
START_SECONDS = 10.0
"""Longest wait for a fresh worker to say it is ready (it imports the interpreter: ~0.3 s, some
seconds on a loaded machine). `extender serve` starts the worker and a spare before it
serves, and a spare replaces a killed worker at once, so this is waited for only when kills
follow each other faster than workers start."""


class TooCostly(Exception):
    """No answer within the deadline: the evaluation was abandoned."""


class Failed(Exception):
    """The expression failed to evaluate (a CEL runtime error); the message says why."""


class Unjudged(Exception):
    """The evaluation met what Kubernetes runs and this interpreter cannot: a regular
    expression over its compiled-size limit (Go's RE2 has none such, its `\\w` is ASCII
    where the interpreter's is Unicode: `\\w{250}` compiles there, not here). Not judged,
    never a runtime error."""


class Unavailable(Exception):
    """No worker could take the evaluation (none started in time, or it died): nothing is
    known about the expression."""


class Starting(Unavailable):
    """The worker was still starting when the caller's wait (`within`) ran out; it is kept."""


class _Worker:
    """One worker process and what it has sent that was not read yet."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "extender.sandbox"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.ready = False
        self.buffer = b""
        self.stop = weakref.finalize(self, _kill, self.proc)

    def line(self, until: float) -> bytes | None:
        """The worker's next line, or None if it does not come by `until` (or it died)."""
        stdout = self.proc.stdout
        assert stdout is not None
        poll = select.poll()  # not select(): descriptors past 1024 under many connections
        poll.register(stdout.fileno(), select.POLLIN)
        while b"\n" not in self.buffer:
            left = until - time.monotonic()
            if left <= 0 or not poll.poll(left * 1000):
                return None
            chunk = os.read(stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class Sandbox:
    """A worker process, started when first needed, with a spare beside it: a worker killed
    for a costly expression is replaced by the spare at once, not by a process still
    importing the interpreter."""

    def __init__(self, deadline: float = DEADLINE_SECONDS) -> None:
        self.deadline = deadline
        self._active: _Worker | None = None
        self._spare: _Worker | None = None
        self.closed = False
        """Set by `close()`: no worker starts again."""

    def start(self, *, spare: bool = False) -> None:
        """Start the worker (and with `spare` its spare) unless running, without waiting;
        Unavailable once closed."""
        if self.closed:
            raise Unavailable("the CEL sandbox is closed")
        if self._active is None:
            self._active, self._spare = self._spare or _Worker(), None
        if spare and self._spare is None:
            self._spare = _Worker()

    async def warm(self) -> None:
        """Start the worker and its spare and wait, off the event loop, until both are ready.
        Before serving only: nothing else may read the workers meanwhile."""
        self.start(spare=True)
        for worker in (self._active, self._spare):
            if worker is not None and not worker.ready:
                line = await asyncio.to_thread(worker.line, time.monotonic() + START_SECONDS)
                worker.ready = line == b"ready"

    def evaluate(
        self, expression: str, variables: dict[str, Any], *, within: float | None = None
    ) -> Any:
        """The value of `expression` over `variables`; Failed on a runtime error, Unjudged
        where this interpreter cannot follow Kubernetes', TooCostly past `within` seconds (at
        most the deadline; the worker is then replaced), Starting when the worker is still
        starting after `within`, Unavailable if no worker answers."""
        self.start()
        worker = self._active
        assert worker is not None and worker.proc.stdin is not None
        if not worker.ready:
            # A worker replaced by its spare a moment ago may still import the interpreter.
            wait = START_SECONDS if within is None else min(within, START_SECONDS)
            line = worker.line(time.monotonic() + wait)
            if line is None and wait < START_SECONDS:
                raise Starting(f"the CEL sandbox's worker still starting after {wait:g}s")
            if line != b"ready":
                self._replace()
                raise Unavailable(f"the CEL sandbox did not start within {START_SECONDS:g}s")
            worker.ready = True
        try:
            request = json.dumps({"e": expression, "v": variables}).encode()
            worker.proc.stdin.write(request + b"\n")
            worker.proc.stdin.flush()
        except (OSError, ValueError):  # the worker died
            self._replace()
            raise Unavailable("the CEL sandbox's worker died") from None
        wait = self.deadline if within is None else min(within, self.deadline)
        line = worker.line(time.monotonic() + wait)
        if line is None:
            if self.closed:  # killed by `close()` while this evaluation waited
                raise Unavailable("the CEL sandbox is closed")
            self._replace()
            raise TooCostly(f"no result within {wait:g}s")
        reply = json.loads(line)
        if "error" in reply:
            raise Failed(str(reply["error"]))
        if "unjudged" in reply:
            raise Unjudged(str(reply["unjudged"]))
        return reply.get("ok")

    def _replace(self) -> None:
        """Kill the active worker; the spare takes its place and a new spare starts."""
        if self._active is not None:
            self._active.stop()
            self._active = None
        self.start(spare=True)

    def close(self) -> None:
        """Kill the workers, if any, and start none again. Safe while another thread waits
        on a worker (a call judged off the event loop, `extender.judging`): that wait ends
        at once (Unavailable). The workers are only killed here; each one's pipes are closed
        and its process reaped when the last holder lets it go (`_Worker.stop`), so no
        descriptor is closed under a thread still polling it."""
        self.closed = True
        for worker in (self._active, self._spare):
            if worker is not None:
                worker.proc.kill()
        self._active = self._spare = None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    proc.wait()


_REGEX_TOO_LARGE = "exceeds size limit"
"""How the interpreter says a pattern compiled too large (`regex::Error::CompiledTooBig`)."""


def _serve() -> None:
    """The worker: evaluate each request line, answer a line, until the input closes."""
    import cel

    from extender.cel_functions import FUNCTIONS

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
            if _REGEX_TOO_LARGE in str(e):
                answer = json.dumps({"unjudged": "a regular expression over the size limit"})
            else:
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
