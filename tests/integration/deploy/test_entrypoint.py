"""The image's exact default command (ENTRYPOINT + CMD, ENV from the Dockerfile) as a process,
against the real cluster the way it runs in a pod: no flags, the cluster from the environment
(KUBECONFIG here, the ServiceAccount in a pod). /healthz answers, then /readyz once the
cache has synced. Loopback and a free port instead of the image's 0.0.0.0:8888."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.support import deploy as s

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


async def test_image_command_serves_against_the_cluster(kubeconfig: str, tmp_path: Path) -> None:
    argv, image_env = s.image_command()
    port = s.free_port()
    env = {
        **os.environ,
        **image_env,
        "KUBECONFIG": kubeconfig,
        "EXTENDER_ADDRESS": "127.0.0.1",
        "EXTENDER_PORT": str(port),
    }
    with s.running(argv, tmp_path / "log", env) as proc:
        body = await asyncio.to_thread(s.wait_http, f"http://127.0.0.1:{port}/healthz", proc)
        assert body == "ok"
        await asyncio.to_thread(s.wait_http, f"http://127.0.0.1:{port}/readyz", proc, limit=120)
