"""Each loadgen test gets a private fleet (`tests.support.private_fleet`): 4 dgx-h100 nodes
under a unique fleet name, removed afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from testbed.kube.client import Kube
from tests.support.private_fleet import Fleet, private_fleet


@pytest.fixture
async def fleet(kube: Kube, kubeconfig: str) -> AsyncIterator[Fleet]:
    async with private_fleet(kube, kubeconfig, nodes=4) as f:
        yield f
