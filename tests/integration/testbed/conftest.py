from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from testbed.kube.client import Kube
from tests.support.small_world import Env, world


@pytest.fixture
async def env(kube: Kube) -> AsyncIterator[Env]:
    async with world(kube) as e:
        yield e
