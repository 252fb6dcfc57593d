"""Scrape Prometheus `/metrics` of control-plane components before and after a run: the
only I/O of the metrics path (aiohttp, TLS unverified because local components serve
self-signed certificates on loopback). `loadgen.series` parses what comes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import aiohttp

from loadgen import series
from testbed.kube import errors
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

# A target URL of the form `kube:/metrics` is fetched through the run's API client, with its
# credentials: how kube-apiserver's own /metrics (which needs authentication) is scraped.
KUBE_SCHEME = "kube:"


async def fetch(
    urls: Mapping[str, str],
    seconds: float = 10.0,
    *,
    kube: Kube | None = None,
    prefixes: tuple[str, ...] = (),
) -> dict[str, series.Samples]:
    """Every component's samples (with `prefixes`: only those series, see `series.parse`);
    a component that does not answer is logged and skipped."""
    if not urls:
        return {}
    client_timeout = aiohttp.ClientTimeout(total=seconds)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:

        async def one(name: str, url: str) -> tuple[str, series.Samples | None]:
            if url.startswith(KUBE_SCHEME):
                if kube is None:
                    log.warning("scrape of %s (%s): no API client", name, url)
                    return name, None
                try:
                    text = await kube.request("GET", url[len(KUBE_SCHEME) :], text=True)
                except errors.KubeError as e:
                    log.warning("scrape of %s (%s) failed: %s", name, url, e)
                    return name, None
                return name, series.parse(text, prefixes)
            try:
                async with session.get(url, ssl=False) as resp:
                    if resp.status != 200:
                        log.warning("scrape of %s (%s): HTTP %s", name, url, resp.status)
                        return name, None
                    return name, series.parse(await resp.text(), prefixes)
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                log.warning("scrape of %s (%s) failed: %s", name, url, e)
                return name, None

        got = await asyncio.gather(*(one(n, u) for n, u in urls.items()))
    return {name: samples for name, samples in got if samples is not None}


async def deltas_since(
    before: Mapping[str, series.Samples], urls: Mapping[str, str], *, kube: Kube | None = None
) -> dict[str, dict[str, float]]:
    """Scrape `urls` again: what each component's series moved by since `before` (only the
    components that answered both times; nothing if nothing answered before)."""
    if not before:
        return {}
    after = await fetch(urls, kube=kube)
    return {name: series.deltas(before[name], s) for name, s in after.items() if name in before}
