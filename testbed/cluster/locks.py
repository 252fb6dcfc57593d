"""Advisory file locks that keep concurrent `testbed up`s from racing each other.

kwokctl picks every component's port by scanning down from 32767 for one that is free *at
that moment*, and the component binds it only later, when it starts. Two clusters created at
once therefore pick the same ports: one API server ends up on the other's etcd, components
exit with "address already in use". So on one machine start-ups run one at a time, from the
port choice until every component listens (a machine-wide lock, whatever the state home);
`up` and `down` of one cluster also take that cluster's own lock.

flock(2) locks (filelock's, on Unix) die with their process, so a killed `testbed up` never
leaves one behind; the file descriptor is not inherited, so the components started under it
do not hold it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock


class LockTimeout(RuntimeError):
    """Another process held the lock for longer than we were willing to wait."""


def machine_lock_path() -> Path:
    """The start-up lock every testbed on this machine shares (ports are machine-wide)."""
    return Path(tempfile.gettempdir()) / "dra-testbed-start.lock"


def holder_of(path: Path) -> str:
    """Who holds (or last held) the lock, as its holder wrote it."""
    try:
        return path.read_text().strip() or "another process"
    except OSError:
        return "another process"


@contextlib.contextmanager
def held(
    path: Path,
    *,
    holder: str,
    timeout: float,
    on_wait: Callable[[str], None] | None = None,
    poll: float = 0.2,
) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block; wait up to `timeout` seconds for it,
    calling `on_wait(current holder)` once if it is taken. `holder` is written into the
    file so that waiters can say whom they wait for."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def record(fd: int) -> None:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)  # shared by every user's testbed on this machine
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder} (pid {os.getpid()})\n".encode(), 0)

    # flock(2) on a file that stays in place (waiters share its inode), opened without
    # following a symlink: the machine-wide lock sits in the shared temporary directory,
    # where another user could plant one pointing at a file of ours.
    lock = filelock.FileLock(path, mode=0o666, preserve_lock_file=True, on_acquired=record)
    try:
        lock.acquire(blocking=False)
    except filelock.Timeout:
        if on_wait is not None:
            on_wait(holder_of(path))
        try:
            lock.acquire(timeout=timeout, poll_interval=poll)
        except filelock.Timeout:
            raise LockTimeout(
                f"{holder_of(path)} still holds {path} after {timeout:.0f}s"
            ) from None
    try:
        yield
    finally:
        lock.release()
