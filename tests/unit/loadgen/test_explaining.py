"""The profile slices of a run: a run that ends during its first slice still gets that slice
(a demo arm of a few seconds carries a CPU breakdown), a later slice in flight is dropped,
and a first slice that never comes back leaves the run saying why. Profiles come from a
stand-in for the component's pprof handler: what is tested is the slicing, not the cluster."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import pytest

from loadgen import explaining, outcome
from testbed.kube import errors
from testbed.kube.client import Kube
from tests.support import synthetic_run as synthetic

# The API server is profiled but not sampled: nothing here reaches the (absent) API client.
URLS = {"apiserver": "https://127.0.0.1:6443/metrics"}
NO_CLIENT = cast(Kube, None)


class PprofHandler:
    """Answers a profile of `seconds` after `seconds` hundredths of a second (the test stays
    short), or never, for the slices listed in `hang`."""

    def __init__(self, *, hang: frozenset[int] = frozenset()) -> None:
        self.hang = hang
        self.asked: list[int] = []

    async def __call__(self, url: str, seconds: int) -> bytes:
        assert url == "https://127.0.0.1:6443/debug/pprof/profile"
        self.asked.append(seconds)
        if len(self.asked) - 1 in self.hang:
            await asyncio.Event().wait()
        await asyncio.sleep(seconds / 100)
        return f"profile of {seconds} s".encode()


async def _run(
    handler: PprofHandler, slices_asked: int, *, interrupted: bool = False
) -> outcome.Profiled:
    """A run that ends once `slices_asked` slices were asked for (0: at once)."""
    gathering = explaining.Gathering(NO_CLIENT, URLS, time.monotonic, 0.0, fetch=handler)
    await gathering.begin()
    for _ in range(1000):  # bounded: 10 s at most
        if len(handler.asked) >= slices_asked:
            break
        await asyncio.sleep(0.01)
    result = synthetic.run_result()
    result.interrupted = interrupted
    await asyncio.wait_for(gathering.finish(result), timeout=60)
    return result.profiles["apiserver"]


def _seconds(p: outcome.Profiled) -> list[float]:
    return [s.seconds for s in p.slices]


async def test_a_run_that_ends_during_its_first_slice_waits_for_it() -> None:
    handler = PprofHandler()
    p = await _run(handler, 0)
    assert _seconds(p) == [explaining.slice_seconds(0)] and p.not_profiled is None
    assert handler.asked == [explaining.slice_seconds(0)]  # and no second slice is begun


async def test_slices_grow_and_the_one_in_flight_at_the_end_is_dropped() -> None:
    # The run ends while the sixth slice is in flight (it never comes back): the five
    # before it are kept, and the end does not wait for the sixth.
    handler = PprofHandler(hang=frozenset({5}))
    p = await _run(handler, 6)
    assert _seconds(p) == [explaining.slice_seconds(i) for i in range(5)]
    assert _seconds(p) == sorted(_seconds(p)) and explaining.slice_seconds(5) == 15


async def test_a_long_run_is_profiled_back_to_back_in_longer_slices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 15-minute stretch of 15 s slices and then 30 s and 60 s ones, scaled down: every
    # slice begins where the one before ended (no gaps: a 21-minute run lost a sixth of its
    # CPU to them), so the profiles cover the run but for its last slice.
    monkeypatch.setattr(explaining, "SLICE_SECONDS", (5, 10))
    monkeypatch.setattr(explaining, "LONG_SLICES", ((3, 20), (5, 40)))
    handler = PprofHandler(hang=frozenset({7}))
    p = await _run(handler, 8)
    assert _seconds(p) == [5, 10, 10, 20, 20, 40, 40]
    for before, after in zip(p.slices, p.slices[1:], strict=False):
        assert after.started - (before.started + before.seconds / 100) < 0.25


async def test_profiling_that_reaches_its_last_slice_says_where_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explaining, "MAX_SLICES", 2)
    handler = PprofHandler()
    gathering = explaining.Gathering(NO_CLIENT, URLS, time.monotonic, 0.0, fetch=handler)
    await gathering.begin()
    await asyncio.wait_for(gathering.profilers["apiserver"], timeout=10)
    result = synthetic.run_result()
    await asyncio.wait_for(gathering.finish(result), timeout=60)
    p = result.profiles["apiserver"]
    assert len(p.slices) == 2 and p.not_profiled is not None and "after 2 slices" in p.not_profiled


async def test_a_first_slice_that_never_comes_back_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explaining, "SLICE_SECONDS", (1,))  # the end waits 1 s for it
    monkeypatch.setattr(explaining, "FIRST_SLICE_GRACE", 0.0)
    handler = PprofHandler(hang=frozenset({0}))
    p = await _run(handler, 1)
    assert not p.slices
    assert p.not_profiled is not None and "did not come back" in p.not_profiled


async def test_an_interrupted_run_does_not_wait_for_its_first_slice() -> None:
    # The first slice never comes back: an interrupted run ends at once and says so.
    handler = PprofHandler(hang=frozenset({0}))
    p = await _run(handler, 1, interrupted=True)
    assert not p.slices
    assert p.not_profiled is not None and "interrupted before" in p.not_profiled


class RestartingHandler(PprofHandler):
    """A component killed after its first slice: it does not answer the next `down`
    requests (connection refused), then answers again (repaired)."""

    def __init__(self, down: int) -> None:
        super().__init__()
        self.down = down

    async def __call__(self, url: str, seconds: int) -> bytes:
        if len(self.asked) >= 1 and self.down:
            self.down -= 1
            self.asked.append(0)  # a request not answered
            raise errors.Unreachable(f"{url} unreachable: connection refused")
        return await super().__call__(url, seconds)


async def test_profiling_resumes_once_a_killed_component_answers_and_keeps_the_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explaining, "RETRY_SECONDS", 0.01)
    handler = RestartingHandler(down=3)
    p = await _run(handler, 6)
    # Its first slice, three refused requests, then slices again: not stopped for good.
    assert p.not_profiled is None and len(p.slices) >= 2
    [gap] = p.unanswered
    assert gap.end is not None and gap.start < gap.end <= p.slices[1].started
    assert "connection refused" in gap.reason
    # The refused requests used up no slice: the second slice is the second size.
    assert _seconds(p)[:2] == [explaining.slice_seconds(0), explaining.slice_seconds(1)]


class RefusingAfterRestartHandler(RestartingHandler):
    """As RestartingHandler, and once back it first refuses (403, anonymous): a new process
    whose delegated authentication has not synced with the API server yet."""

    def __init__(self, down: int, refusals: int) -> None:
        super().__init__(down)
        self.refusals = refusals

    async def __call__(self, url: str, seconds: int) -> bytes:
        if len(self.asked) >= 1 and not self.down and self.refusals:
            self.refusals -= 1
            self.asked.append(0)
            raise errors.Forbidden('forbidden: User "system:anonymous" cannot get path')
        return await super().__call__(url, seconds)


async def test_a_refusal_right_after_a_restart_is_still_down_and_profiling_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explaining, "RETRY_SECONDS", 0.01)
    p = await _run(RefusingAfterRestartHandler(down=2, refusals=2), 7)
    assert p.not_profiled is None and len(p.slices) >= 2
    [gap] = p.unanswered
    assert gap.end is not None and gap.end <= p.slices[1].started


async def test_a_refusal_before_any_restart_stops_profiling_in_one_line() -> None:
    async def forbidden(url: str, seconds: int) -> bytes:
        raise errors.Forbidden("forbidden: no certificate")

    gathering = explaining.Gathering(NO_CLIENT, URLS, time.monotonic, 0.0, fetch=forbidden)
    await gathering.begin()
    await asyncio.sleep(0.05)
    result = synthetic.run_result()
    await asyncio.wait_for(gathering.finish(result), timeout=60)
    p = result.profiles["apiserver"]
    assert p.not_profiled is not None and "403" in p.not_profiled and not p.unanswered


async def test_a_component_down_at_the_end_is_not_waited_for_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explaining, "RETRY_SECONDS", 0.01)

    async def refused(url: str, seconds: int) -> bytes:
        raise errors.Unreachable(f"{url} unreachable: connection refused")

    gathering = explaining.Gathering(NO_CLIENT, URLS, time.monotonic, 0.0, fetch=refused)
    await gathering.begin()
    await asyncio.sleep(0.05)
    started = time.monotonic()
    result = synthetic.run_result()
    await gathering.finish(result)
    # Not the first slice's 5 s and its grace: nothing was coming.
    assert time.monotonic() - started < 2.0
    p = result.profiles["apiserver"]
    assert p.not_profiled is not None and "connection refused" in p.not_profiled
    assert p.unanswered and p.unanswered[0].end is None
