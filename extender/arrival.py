"""How long ago a call arrived, by the kernel's clock rather than the handler's.

A call that arrives while the event loop is busy waits in its socket's buffer, unseen, until
the loop reads it; its handler then starts "now". Its deadline must count from its arrival,
or a call queued behind a stall is judged and answered long after kube-scheduler gave up
(14 s late once: issue 52). The kernel knows: TCP_INFO's `tcpi_last_data_recv` is the time,
in milliseconds (jiffies' resolution), since the connection last received data, which at
the handler's start is the call's head (kube-scheduler sends one call at a time on a
connection, the next only after the answer). Counting from its last byte received, not its
first, never makes a call older than it is.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

_TCP_INFO_BYTES = 104
"""struct tcp_info up to its fields of Linux 2.6 (stable ABI; longer on newer kernels)."""
_LAST_DATA_RECV = struct.Struct("=I")
_LAST_DATA_RECV_OFFSET = 52
"""tcpi_last_data_recv (__u32, ms): after 8 one-byte fields and 11 __u32 fields."""


def age(transport: asyncio.BaseTransport | None) -> float:
    """Seconds since the connection of `transport` last received data; 0 when unknown (not
    TCP, not Linux, closed)."""
    return age_of(tcp_socket(transport))


def tcp_socket(transport: asyncio.BaseTransport | None) -> Any:
    """The TCP socket of `transport` to read `age_of`, or None (not TCP, not Linux, closed).
    A connection may keep it: uvloop makes a new one at each asking (a getsockname call)."""
    if transport is None or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        sock = transport.get_extra_info("socket")
        if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return None
    except OSError:
        return None
    return sock


def age_of(sock: Any) -> float:
    """Seconds since the connection of the TCP socket `sock` (`tcp_socket`) last received
    data; 0 when unknown (None, closed)."""
    if sock is None:
        return 0.0
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
        (ms,) = _LAST_DATA_RECV.unpack_from(info, _LAST_DATA_RECV_OFFSET)
    except (OSError, struct.error):
        return 0.0
    return float(ms) / 1000.0
