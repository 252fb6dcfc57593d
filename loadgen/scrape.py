"""Scrape Prometheus `/metrics` of control-plane components through a run: the only I/O of
the metrics path (aiohttp, TLS unverified because local components serve
self-signed certificates on loopback). `loadgen.series` parses what comes back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp

from loadgen import series
from testbed.kube import errors
from testbed.kube.client import Kube

# A target URL of the form `kube:/metrics` is fetched through the run's API client, with its
# credentials: how kube-apiserver's own /metrics (which needs authentication) is scraped.
KUBE_SCHEME = "kube:"


@dataclass(frozen=True)
class Scraped:
    """One round of scrapes: what answered, and why the others did not."""

    samples: dict[str, series.Samples] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Component -> why its scrape failed, in one line (the caller says it once: a run's
    scrapes repeat every few seconds)."""


async def fetch(
    urls: Mapping[str, str],
    seconds: float = 10.0,
    *,
    kube: Kube | None = None,
    prefixes: tuple[str, ...] = (),
) -> Scraped:
    """Every component's samples (with `prefixes`: only those series, see `series.parse`)."""
    if not urls:
        return Scraped()
    client_timeout = aiohttp.ClientTimeout(total=seconds)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:

        async def one(url: str) -> series.Samples | str:
            if url.startswith(KUBE_SCHEME):
                if kube is None:
                    return f"{url}: no API client"
                try:
                    text = await kube.request("GET", url[len(KUBE_SCHEME) :], text=True)
                except errors.KubeError as e:
                    return f"{url}: {e}"
                return series.parse(text, prefixes)
            try:
                async with session.get(url, ssl=False) as resp:
                    if resp.status != 200:
                        return f"{url}: HTTP {resp.status}"
                    return series.parse(await resp.text(), prefixes)
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                return f"{url}: {e or type(e).__name__}"

        got = await asyncio.gather(*(one(u) for u in urls.values()))
    out = Scraped()
    for name, answer in zip(urls, got, strict=True):
        if isinstance(answer, str):
            out.failed[name] = answer
        else:
            out.samples[name] = answer
    return out
