"""The hostile-client tests run on both event loops: uvloop, which `extender serve` runs on
(`testbed.runtime.run`), and asyncio's own, which the rest of the suite uses. They differ
where these tests look (how connections are accepted and closed): a leak under uvloop went
unseen while they ran on asyncio's loop only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
