"""Our CLIs as child processes of a test, as a user would run them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from testbed.cluster import ports, processes

BIN = Path(sys.executable).parent
"""Where this installation's console scripts (fleet, extender, loadgen, testbed) live."""


async def run_tool(
    env: dict[str, str], tool: str, *args: str, log: Path | None = None, within: float = 600
) -> int:
    """One of our CLIs, awaited without blocking the event loop; killed if it overruns."""
    return await run_argv([str(BIN / tool), *args], env, log=log, within=within)


async def run_argv(
    argv: list[str], env: dict[str, str], *, log: Path | None = None, within: float = 600
) -> int:
    """A child process, its output to `log`; killed if it overruns `within` seconds."""
    with (log or Path(os.devnull)).open("wb") as out:
        proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=out, stderr=out)
        try:
            return await asyncio.wait_for(proc.wait(), within)
        finally:
            await reap(proc)


async def reap(proc: asyncio.subprocess.Process) -> None:
    """Kill `proc` if it still runs, and wait for it: a test's `finally` leaves no child."""
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def extender_process(*args: str) -> asyncio.subprocess.Process:
    """`extender ARGS` from this interpreter (no console script needed), its stderr a pipe."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from extender.cli import main; main()",
        *args,
        stderr=asyncio.subprocess.PIPE,
    )


@contextlib.asynccontextmanager
async def extender_serving(*args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """`extender serve ARGS --port P` (P a free loopback port), once it logged that it serves;
    its stderr stays readable through the process."""
    port = ports.free_port()
    proc = await extender_process("serve", *args, "--port", str(port))
    try:
        assert proc.stderr is not None
        async with asyncio.timeout(30):
            while b"serving on" not in (line := await proc.stderr.readline()):
                assert line, "extender exited before serving"
        yield proc, port
    finally:
        await reap(proc)


def extender(
    env: dict[str, str], log: Path, port: int
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """`extender serve` on 127.0.0.1:`port`, ready (synced) inside the block."""
    return processes.service(
        "the extender",
        [str(BIN / "extender"), "serve", "--port", str(port), "--debug"],  # tests read /debug
        port,
        log=log,
        env=env,
    )


def fleet_service(
    env: dict[str, str], log: Path, port: int
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """`fleet serve --install-crd` on 127.0.0.1:`port`, ready inside the block."""
    return processes.service(
        "the fleet service",
        [str(BIN / "fleet"), "serve", "--install-crd", "--port", str(port)],
        port,
        log=log,
        env=env,
    )


TESTBED = [sys.executable, "-m", "testbed"]


def testbed(
    *args: str, home: Path, timeout: float = 300, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`testbed ARGS` with its state in `home` (DRA_TESTBED_HOME), run in `cwd`, to completion."""
    full_env = {**os.environ, "DRA_TESTBED_HOME": str(home), **env}
    return subprocess.run(
        [*TESTBED, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=timeout,
        check=False,
    )
