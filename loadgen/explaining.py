"""Gathers, while a run goes, the evidence that explains it: kube-scheduler's /metrics (and
the extender's) sampled every few seconds (`scheduler_view`), every scraped component's
counters folded over its processes (`segments`: the run's figures, and its restarts as
facts), and CPU profiles of kube-scheduler and kube-apiserver in consecutive slices, as
ClusterLoader2's CPUProfile measurement takes them (`/debug/pprof/profile?seconds=N`,
pprof's default 100 Hz).

    gathering = await explaining.start(kube, settings, clock, origin)
    ...                                 # the run
    await gathering.finish(result)      # result.metrics, .components, .scheduler_view, .profiles

The components are the run's `--scrape` targets named `scheduler`, `apiserver` and
`extender`; a profile URL is the /metrics URL's sibling `/debug/pprof/profile` (`kube:`
targets go through the API client, loopback https ones carry its client certificate). A
component that refuses (403 without the RBAC, no certificate) is not profiled and says why;
one that does not answer (killed, restarting) is profiled again once it answers, and the
stretch it did not is kept. The run goes on either way; a scrape that fails is said once
per component in the result, not logged each time.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from loadgen import outcome, scheduler_view, scrape, segments
from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

SAMPLED = ("scheduler", "extender")
PROFILED = ("scheduler", "apiserver")
SAMPLE_SECONDS = 2.0
"""Between scheduler scrapes; doubled each time the timeline is thinned."""
OTHERS_EVERY = 5
"""The other components (kube-apiserver's /metrics is 2.4 MB) are scraped every 5th round:
often enough to see a restart within a round or so of it, rarely enough to cost little."""
SCRAPE_SECONDS = 10.0
"""A scrape's own time limit: a round's scrapes begin at most this much after the previous
round's, on top of its interval (how long an old process's counts may go unseen)."""
PREFIXES = (*scheduler_view.PREFIXES, *segments.PREFIXES)
RETRY_SECONDS = 2.0
"""Between profile attempts while a component does not answer."""
MAX_POINTS = 300
"""Timeline samples kept: beyond, every other one is dropped (10 min at 2 s, then 4 s...),
so a long run's result.json keeps ~200 KB of it at most."""
SLICE_SECONDS = (5, 10, 15)
"""Profile slices grow to 15 s, and longer in long runs (`slice_seconds`). A slice in flight
when the run ends is lost (Go's pprof cannot end a profile early, and waiting for it would
lengthen every run: at most one slice goes unprofiled), except the first (below)."""
FIRST_SLICE_GRACE = 10.0
"""A run that ends during its first slice waits for it, at most this long beyond the slice's
own seconds (a slow reply on a loaded machine): a run shorter than the first slice (a demo
arm takes 3-6 s) is profiled whole, at a cost of a few seconds to such runs only. (Shorter
first slices would profile only a short run's first seconds, a few dozen samples.)"""
LONG_SLICES = ((60, 30), (80, 60))
"""(from slice i, seconds): after 15 min of 15 s slices, 30 s for 10 min, then 60 s. Back to
back throughout: a long run is profiled whole but for its last slice and any outage (gaps
between slices lost a sixth of a 21-minute run's CPU), in at most MAX_SLICES files."""
MAX_SLICES = 200
"""About 2 h 25 min of profiles (~60 KB a slice); a longer run says where they stopped."""
BUSY = "already in use"
"""What Go's pprof handler answers (500) while another CPU profile of the process runs."""


def slice_seconds(i: int) -> int:
    for start, seconds in reversed(LONG_SLICES):
        if i >= start:
            return seconds
    return int(SLICE_SECONDS[min(i, len(SLICE_SECONDS) - 1)])


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
        self.others = {k: v for k, v in scrape_urls.items() if k not in SAMPLED}
        self.interval = SAMPLE_SECONDS
        self.rounds = 0
        self.components: dict[str, segments.Component] = {}
        """Every scraped component's counters over its processes."""
        self.origin_wall = time.time() - (clock() - origin)
        """Epoch seconds of the run's start (start times are epoch seconds)."""
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
        """The first sample of every component (the baseline, before the run creates
        anything), then the sampler and the profilers in the background."""
        if self.scrape_urls:
            await self._sample(everyone=True)
            self.tasks.append(asyncio.create_task(self._sample_loop(), name="scrapes"))
        for name in PROFILED if self.profile else ():
            url = profile_url(self.scrape_urls.get(name, ""))
            if url is None:
                continue
            self.profiles[name] = outcome.Profiled()
            task = self._profile_loop(name, url, self.profiles[name])
            self.profilers[name] = asyncio.create_task(task, name=f"profile-{name}")
            self.tasks.append(self.profilers[name])

    def _component(self, name: str) -> segments.Component:
        if name not in self.components:
            self.components[name] = segments.Component(
                name, origin_wall=self.origin_wall, max_gap=self._max_gap(name)
            )
        return self.components[name]

    def _max_gap(self, name: str) -> float:
        every = 1 if name in self.sampled else OTHERS_EVERY
        return self.interval * every + SCRAPE_SECONDS

    async def _sample(self, *, everyone: bool = False) -> None:
        urls = {**self.sampled, **(self.others if everyone else {})}
        at = self.clock() - self.origin
        got = await scrape.fetch(urls, SCRAPE_SECONDS, kube=self.kube, prefixes=PREFIXES)
        for name, samples in got.samples.items():
            self._component(name).answered(at, samples)
        for name, why_not in got.failed.items():
            self._component(name).failed(at, why_not)
        if "scheduler" not in got.samples:
            return
        scheduler = got.samples["scheduler"]
        if not self.timeline.seconds:
            self.timeline.release, self.timeline.gates = scheduler_view.build_info(scheduler)
        reduced = scheduler_view.reduce_scrapes(scheduler, got.samples.get("extender"))
        self.timeline.add(at, reduced)

    async def _sample_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.rounds += 1
            await self._sample(everyone=self.rounds % OTHERS_EVERY == 0)
            if len(self.timeline.seconds) > MAX_POINTS:
                self.timeline.thin()
                self.interval *= 2
                for name, component in self.components.items():
                    component.max_gap = self._max_gap(name)

    async def _profile_loop(self, name: str, url: str, into: outcome.Profiled) -> None:
        i = 0
        while i < MAX_SLICES:
            if i > 0 and self.ending.is_set():
                return
            seconds = slice_seconds(i)
            started = self.clock()
            try:
                data = await self.fetch(url, seconds)
            except errors.ServerError as e:
                if BUSY not in str(e):
                    await self._unanswered(into, started, e)
                    continue
                # Someone else profiles it (Go allows one CPU profile at a time): this slice
                # is theirs; try again after it.
                into.busy_slices += 1
                await asyncio.sleep(seconds)
                i += 1
                continue
            except (errors.Unreachable, OSError) as e:
                # Not answering (killed, restarting): tried again until it does, without
                # using up a slice.
                await self._unanswered(into, started, e)
                continue
            except (errors.KubeError, ValueError) as e:
                if _down(into):
                    # A process that just came back refuses (anonymous, 403) until its
                    # delegated authentication has synced with the API server: still down.
                    await self._unanswered(into, started, e)
                    continue
                into.not_profiled = why(e)
                log.warning("not profiling %s: %s", name, into.not_profiled)
                return
            if _down(into):
                into.unanswered[-1].end = started
            into.slices.append(outcome.ProfileSlice(started, float(seconds), data))
            i += 1
        into.not_profiled = f"profiling stopped after {MAX_SLICES} slices (the run went on)"

    async def _unanswered(self, into: outcome.Profiled, since: float, e: Exception) -> None:
        """A component that did not answer: the stretch without an answer noted (once),
        and a pause before the next try."""
        if not into.unanswered or into.unanswered[-1].end is not None:
            into.unanswered.append(outcome.Unanswered(start=since, reason=why(e)))
        await asyncio.sleep(RETRY_SECONDS)

    async def finish(self, result: outcome.RunResult) -> None:
        """Stop sampling and profiling (a slice in flight is dropped, unless it is the
        first of a run not interrupted: that one is waited for, FIRST_SLICE_GRACE at most
        beyond its seconds), take a last sample, and put what was gathered into `result`."""
        self.ending.set()
        # A component not answering now is not waited for: its first slice is not coming.
        first = [
            t
            for n, t in self.profilers.items()
            if not self.profiles[n].slices and not _down(self.profiles[n])
        ]
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
        if self.scrape_urls:
            await self._sample(everyone=True)
            if self.timeline.seconds:
                result.scheduler_view = self.timeline
        result.components = self.components
        result.metrics = {name: c.deltas() for name, c in self.components.items() if c.processes}
        for profiled in self.profiles.values():
            if not profiled.slices and profiled.not_profiled is None:
                profiled.not_profiled = (
                    f"it did not answer its profile requests: {profiled.unanswered[-1].reason}"
                    if _down(profiled)
                    else f"the run was interrupted before its first {slice_seconds(0)} s profile"
                    if result.interrupted
                    else f"its first {slice_seconds(0)} s profile did not come back within"
                    f" {FIRST_SLICE_GRACE:.0f} s of the run's end"
                )
        result.profiles = self.profiles


def _down(profiled: outcome.Profiled) -> bool:
    """Whether the component has not answered since its last refused request."""
    return bool(profiled.unanswered) and profiled.unanswered[-1].end is None


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
