"""Gathers, while a run goes, the evidence that explains it: kube-scheduler's /metrics (and
the extender's) sampled every few seconds (`scheduler_view`), and CPU profiles of
kube-scheduler and kube-apiserver in consecutive slices, as ClusterLoader2's CPUProfile
measurement takes them (`/debug/pprof/profile?seconds=N`, pprof's default 100 Hz).

    gathering = await explaining.start(kube, settings, clock, origin)
    ...                                 # the run
    await gathering.finish(result)      # result.scheduler_view, result.profiles

The components are the run's `--scrape` targets named `scheduler`, `apiserver` and
`extender`; a profile URL is the /metrics URL's sibling `/debug/pprof/profile` (`kube:`
targets go through the API client, loopback https ones carry its client certificate). A
component that refuses (403 without the RBAC, no certificate) is not profiled and says why;
the run goes on either way.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping

from loadgen import outcome, scheduler_view, scrape
from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

SAMPLED = ("scheduler", "extender")
PROFILED = ("scheduler", "apiserver")
SAMPLE_SECONDS = 2.0
"""Between scheduler scrapes; doubled each time the timeline is thinned."""
MAX_POINTS = 300
"""Timeline samples kept: beyond, every other one is dropped (10 min at 2 s, then 4 s...),
so a long run's result.json keeps ~200 KB of it at most."""
SLICE_SECONDS = (5, 10, 15)
"""Profile slices grow to 15 s. A slice in flight when the run ends is lost (Go's pprof cannot
end a profile early, and waiting for it would lengthen every run: at most 15 s go
unprofiled), except the first (below)."""
FIRST_SLICE_GRACE = 10.0
"""A run that ends during its first slice waits for it, at most this long beyond the slice's
own seconds (a slow reply on a loaded machine): a run shorter than the first slice (a demo
arm takes 3-6 s) is profiled whole, at a cost of a few seconds to such runs only. (Shorter
first slices would profile only a short run's first seconds, a few dozen samples.)"""
CONSECUTIVE = 60
"""Slices taken back to back (15 min); after them, the gaps between slices grow."""
MAX_SLICES = 120
BUSY = "already in use"
"""What Go's pprof handler answers (500) while another CPU profile of the process runs."""


def slice_seconds(i: int) -> int:
    return int(SLICE_SECONDS[min(i, len(SLICE_SECONDS) - 1)])


def pause_before(i: int) -> float:
    """Seconds left unprofiled before slice `i`: none for the first CONSECUTIVE, then gaps
    of 15 s, 45 s, 105 s... growing every 20 slices (a two-hour run keeps ~100 slices)."""
    if i < CONSECUTIVE:
        return 0.0
    return 15.0 * ((2 << ((i - CONSECUTIVE) // 20)) - 1)


def profile_url(metrics_url: str) -> str | None:
    """The /debug/pprof/profile URL beside a /metrics URL (None: not a /metrics URL)."""
    if not metrics_url.endswith("/metrics"):
        return None
    return metrics_url.removesuffix("/metrics") + "/debug/pprof/profile"


def why(e: Exception) -> str:
    """A refusal in one line: `403 Forbidden: <the server's message>`."""
    if isinstance(e, errors.KubeError) and e.status:
        return f"HTTP {e.status}: {e}"
    return str(e) or type(e).__name__


async def fetch_profile(kube: Kube, url: str, seconds: int) -> bytes:
    """One CPU profile of `seconds` from a `profile_url`."""
    if url.startswith(scrape.KUBE_SCHEME):
        got = await kube.request(
            "GET",
            url[len(scrape.KUBE_SCHEME) :],
            query=[("seconds", str(seconds))],
            raw=True,
            retry=False,
            attempt_timeout=seconds + 30.0,
        )
        return bytes(got)
    return await kube.fetch_component(f"{url}?seconds={seconds}", seconds=seconds + 30.0)


class Gathering:
    """The sampler and profilers of one run, running until `finish`."""

    def __init__(
        self,
        kube: Kube,
        scrape_urls: Mapping[str, str],
        clock: Callable[[], float],
        origin: float,
        *,
        profile: bool = True,
        fetch: Callable[[str, int], Awaitable[bytes]] | None = None,
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.origin = origin
        self.sampled = {k: v for k, v in scrape_urls.items() if k in SAMPLED}
        self.timeline = scheduler_view.Timeline()
        self.profiles: dict[str, outcome.Profiled] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.profilers: dict[str, asyncio.Task[None]] = {}
        self.profile = profile
        self.scrape_urls = dict(scrape_urls)
        self.fetch = fetch or functools.partial(fetch_profile, kube)
        """A profile of `seconds` from a profile URL (a test gives its own)."""
        self.ending = asyncio.Event()
        """Set by `finish`: a profiler still waiting for its first slice stops after it."""

    async def begin(self) -> None:
        """The first sample (the baseline, before the run creates anything), then the
        sampler and the profilers in the background."""
        if "scheduler" in self.sampled:
            await self._sample()
            self.tasks.append(asyncio.create_task(self._sample_loop(), name="scheduler-view"))
        for name in PROFILED if self.profile else ():
            url = profile_url(self.scrape_urls.get(name, ""))
            if url is None:
                continue
            self.profiles[name] = outcome.Profiled()
            task = self._profile_loop(name, url, self.profiles[name])
            self.profilers[name] = asyncio.create_task(task, name=f"profile-{name}")
            self.tasks.append(self.profilers[name])

    async def _sample(self) -> None:
        got = await scrape.fetch(self.sampled, kube=self.kube, prefixes=scheduler_view.PREFIXES)
        for name in [n for n in self.sampled if n not in got and n != "scheduler"]:
            # An extender that does not answer (not started) is warned about once, not
            # every few seconds: its serving time is left out of the view.
            del self.sampled[name]
        if "scheduler" not in got:
            return
        if not self.timeline.seconds:
            self.timeline.release, self.timeline.gates = scheduler_view.build_info(got["scheduler"])
        reduced = scheduler_view.reduce(scheduler_view.merged(*got.values()))
        self.timeline.add(self.clock() - self.origin, reduced)

    async def _sample_loop(self) -> None:
        interval = SAMPLE_SECONDS
        while True:
            await asyncio.sleep(interval)
            await self._sample()
            if len(self.timeline.seconds) > MAX_POINTS:
                self.timeline.thin()
                interval *= 2

    async def _profile_loop(self, name: str, url: str, into: outcome.Profiled) -> None:
        for i in range(MAX_SLICES):
            if i > 0 and self.ending.is_set():
                return
            await asyncio.sleep(pause_before(i))
            seconds = slice_seconds(i)
            started = self.clock()
            try:
                data = await self.fetch(url, seconds)
            except errors.ServerError as e:
                if BUSY not in str(e):
                    into.not_profiled = why(e)
                    return
                # Someone else profiles it (Go allows one CPU profile at a time): this slice
                # is theirs; try again after it.
                into.busy_slices += 1
                await asyncio.sleep(seconds)
                continue
            except (errors.KubeError, ValueError, OSError) as e:
                into.not_profiled = why(e)
                log.warning("not profiling %s: %s", name, into.not_profiled)
                return
            into.slices.append(outcome.ProfileSlice(started, float(seconds), data))

    async def finish(self, result: outcome.RunResult) -> None:
        """Stop sampling and profiling (a slice in flight is dropped, unless it is the
        first of a run not interrupted: that one is waited for, FIRST_SLICE_GRACE at most
        beyond its seconds), take a last sample, and put what was gathered into `result`."""
        self.ending.set()
        first = [t for n, t in self.profilers.items() if not self.profiles[n].slices]
        if first and not result.interrupted:
            await asyncio.wait(first, timeout=slice_seconds(0) + FIRST_SLICE_GRACE)
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception as e:  # evidence is best effort: the run's report goes on
                log.warning("%s failed: %s", task.get_name(), e)
        if "scheduler" in self.sampled:
            await self._sample()
            if self.timeline.seconds:
                result.scheduler_view = self.timeline
        for profiled in self.profiles.values():
            if not profiled.slices and profiled.not_profiled is None:
                profiled.not_profiled = (
                    f"the run was interrupted before its first {slice_seconds(0)} s profile"
                    if result.interrupted
                    else f"its first {slice_seconds(0)} s profile did not come back within"
                    f" {FIRST_SLICE_GRACE:.0f} s of the run's end"
                )
        result.profiles = self.profiles


async def start(
    kube: Kube,
    settings: outcome.Settings,
    clock: Callable[[], float],
    origin: float,
) -> Gathering:
    """Sampling and profiling of `settings.scrape`'s scheduler, apiserver and extender,
    begun (the first sample taken)."""
    gathering = Gathering(kube, settings.scrape, clock, origin, profile=settings.profile)
    await gathering.begin()
    return gathering
