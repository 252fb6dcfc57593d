"""The processes a local cluster runs detached (kwokctl's components, the kwok shard
controllers): read through psutil and their pid files, started in a session of their own,
stopped with SIGTERM then SIGKILL, and why one stopped, from its log.

`LocalCluster` decides which processes to start and stop; this module only knows how.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

PORT_TAKEN = "address already in use"
APISERVER_WAIT = "failed to wait for apiserver being healthy"
"""kube-controller-manager gives the API server 10 s to answer /healthz, then exits: a loaded
machine's API server can take longer to finish its start-up hooks."""
TRANSIENT = (PORT_TAKEN, APISERVER_WAIT)
"""Exit reasons that starting the component again can cure."""


# -- reading a process -------------------------------------------------------------------------


def read_pid(path: Path) -> int | None:
    """The pid in a pid file (None: no file, or not a number)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _process(pid: int) -> psutil.Process | None:
    """`pid` if it runs and is not a zombie (one that has given its memory back)."""
    try:
        proc = psutil.Process(pid)
        return None if proc.status() in _GONE else proc
    except psutil.Error:
        return None


_GONE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


def rss_bytes(pid: int) -> int | None:
    """Resident memory of `pid` (None: it is gone, or has already given its memory back)."""
    proc = _process(pid)
    try:
        return int(proc.memory_info().rss) if proc is not None else None
    except psutil.Error:
        return None


def cpu_seconds(pid: int) -> float | None:
    """CPU time `pid` has used so far, user and system, its own threads only (None: gone)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def children_cpu_seconds() -> float:
    """CPU time, user and system, of this process's children that have ended and been waited
    for (and of theirs that they waited for): a difference of two readings around a child's
    run is its whole process tree's CPU."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def peak_rss_bytes(pid: int) -> int | None:
    """The most resident memory `pid` has held (the kernel's VmHWM; psutil has no such figure;
    None: gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, every core counted; busy
    is all but idle and iowait. A difference of two readings over a wall time gives the
    machine's busy cores meanwhile."""
    times = psutil.cpu_times()
    total = float(sum(times))
    return total - times.idle - getattr(times, "iowait", 0.0), total


def listen_overflows() -> int:
    """The kernel's count of connection attempts dropped because a listen queue was full
    (TcpExt ListenOverflows; for the whole network namespace, so other programs' too; 0
    where the kernel does not say)."""
    try:
        lines = [ln.split() for ln in Path("/proc/net/netstat").read_text().splitlines()]
    except OSError:
        return 0
    for keys, values in zip(lines[::2], lines[1::2], strict=False):
        if keys[0] == "TcpExt:" and "ListenOverflows" in keys:
            return int(values[keys.index("ListenOverflows")])
    return 0


def argv(pid: int) -> list[str]:
    """The command line of `pid` (empty if it is gone)."""
    try:
        return [a for a in psutil.Process(pid).cmdline() if a]
    except psutil.Error:
        return []


def exited(pid: int) -> bool:
    """Gone, or every thread a zombie: only then are its files and sockets closed (a Go
    program's main thread turns zombie while its other threads still hold them). psutil
    reports a process's status, not each thread's: read /proc/<pid>/task here."""
    try:
        stats = [t.joinpath("stat").read_text() for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return True
    return all(st.rsplit(")", 1)[-1].split()[:1] in (["Z"], ["X"], []) for st in stats)


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (as /proc/<pid>/stat has it; psutil
    gives it as seconds since the epoch, boot time added): with the pid, what tells a process
    from a later one given the same pid. None when it is gone or a zombie."""
    proc = _process(pid)
    try:
        since_boot = proc.create_time() - psutil.boot_time() if proc is not None else None
    except psutil.Error:
        return None
    return None if since_boot is None else str(round(since_boot * os.sysconf("SC_CLK_TCK")))


@dataclass(frozen=True)
class Launch:
    """How a running process was started: enough to start it again the same way."""

    argv: list[str]
    env: dict[str, str]
    cwd: str


def launch_of(pid: int) -> Launch:
    """The arguments, environment and working directory `pid` runs with (raises OSError
    if it is gone)."""
    try:
        proc = psutil.Process(pid)
        return Launch(proc.cmdline(), dict(proc.environ()), proc.cwd())
    except psutil.Error as e:
        raise ProcessLookupError(f"process {pid}: {e}") from None


# -- starting and stopping ---------------------------------------------------------------------


def start_detached(
    argv: list[str], *, log: Path, cwd: str | Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` in a session of its own (it outlives the command that started it, as
    kwokctl's components do), appending its output to `log`."""
    with log.open("a") as out:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(pids: Iterable[int], *, grace_seconds: float = 5.0) -> None:
    """SIGTERM every one of `pids` at once, SIGKILL whichever still runs `grace_seconds`
    later; our own children among them are reaped (else they linger as zombies)."""
    running = list(pids)
    for pid in running:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for pid in running:
        while rss_bytes(pid) is not None and time.monotonic() < deadline:
            reap(pid)
            time.sleep(0.05)
        if rss_bytes(pid) is not None:
            os.kill(pid, signal.SIGKILL)
        reap(pid)


def wait_exited(pid: int, timeout: float = 30.0) -> None:
    """Wait (at most `timeout`) until `pid` has fully exited: until then it holds its ports
    (its memory goes first, its sockets later), and a successor fails to bind them. 30 s:
    at load ~20 a restarted kube-apiserver found its port still taken after the 10 s this was."""
    deadline = time.monotonic() + timeout
    while not exited(pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def reap(pid: int) -> None:
    """Collect `pid` if it is our own exited child (else it lingers as a zombie)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


# -- health and logs ---------------------------------------------------------------------------


def answers(url: str) -> bool:
    """`url` answers 200 within two seconds."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def last_line(log: Path) -> str:
    """The last non-blank line of `log` (its last 300 characters), or "no output"."""
    try:
        lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return lines[-1][-300:] if lines else "no output"


def exit_reason(log: Path) -> str:
    """Why a component stopped, from its log: a transient cause (a port conflict, an API
    server slow to answer) if its last lines have one (a Go component logs more lines as it
    unwinds), else the last line."""
    try:
        tail = [ln for ln in log.read_text().splitlines() if ln.strip()][-20:]
    except OSError:
        return "no output"
    transient = [ln for ln in tail if any(t in ln for t in TRANSIENT)]
    return (transient or tail or ["no output"])[-1][-300:]


def transient(reason: str) -> bool:
    """Whether an exit reason is one that starting the component again can cure."""
    return any(t in reason for t in TRANSIENT)


def exited_transiently(log: Path) -> bool:
    """Whether the component logging to `log` stopped for a reason starting it again can
    cure (`exit_reason` of its log is `transient`)."""
    return transient(exit_reason(log))
