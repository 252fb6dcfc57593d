"""The hostile-client tests run on both event loops: uvloop, which `extender serve` runs on
(`testbed.runtime.run`), and asyncio's own, which the rest of the suite uses. They differ
where those tests look (how connections are accepted and closed): a leak under uvloop went
unseen while they ran on asyncio's loop only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop

BOTH_LOOPS = "both_event_loops"


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]] | None:
    if item.get_closest_marker(BOTH_LOOPS) is None:
        return None
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
