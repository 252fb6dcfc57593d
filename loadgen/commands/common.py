"""What loadgen's subcommands share: exit codes, the usage error, the run-id rule, and a
client for a command that talks to the cluster once."""

from __future__ import annotations

import re
import signal
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from testbed import cliconv
from testbed.kube.client import ClientSettings, Kube

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = cliconv.EXIT_OK, cliconv.EXIT_FAILURE, cliconv.EXIT_USAGE
# Interrupted runs exit 128 + the signal number, as shells report a process that signal ended.
_SIGNAL_EXIT = cliconv.SIGNAL_EXIT
EXIT_INTERRUPTED = _SIGNAL_EXIT + signal.SIGINT
# The namespace is loadgen-<run-id>: a DNS label of at most 63 characters.
RUN_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,52}[a-z0-9])?\Z")


class UsageError(cliconv.UsageError):
    pass


class Aborted(KeyboardInterrupt):
    """A second signal: stop without waiting for the report or the cleanup."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code(signum: int) -> int:
    return _SIGNAL_EXIT + signum


_T = TypeVar("_T")


async def with_kube(opts: dict[str, Any], use: Callable[[Kube], Awaitable[_T]]) -> _T:
    kube = await cliconv.connect(
        opts,
        ClientSettings(
            user_agent="dra-testbed-loadgen", request_timeout=cliconv.long_run_timeout(opts)
        ),
    )
    try:
        return await use(kube)
    finally:
        await kube.close()
