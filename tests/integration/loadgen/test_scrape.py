"""Scraping kube-apiserver's authenticated /metrics through the run's API client."""

from __future__ import annotations

import pytest

from loadgen import scrape
from testbed.kube.client import Kube

pytestmark = pytest.mark.cluster


async def test_apiserver_metrics_come_through_the_api_client(kube: Kube) -> None:
    got = await scrape.fetch({"apiserver": "kube:/metrics"}, kube=kube)
    samples = got.samples["apiserver"]
    assert any(k.startswith("apiserver_request_total{") for k in samples)
    assert samples.get("process_resident_memory_bytes", 0) > 0


async def test_a_kube_target_without_a_client_is_skipped_not_fatal() -> None:
    got = await scrape.fetch({"apiserver": "kube:/metrics"})
    assert got.samples == {} and "no API client" in got.failed["apiserver"]
