"""A TCP relay to the API server that a test can cut and restore, and a kubeconfig that goes
through it: an API server outage as one client sees it, without touching the shared cluster."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from testbed.kube.client import Kube


class Proxy:
    """A TCP relay to the API server that a test can cut and restore: an API server "restart"
    as the service sees it, without touching the shared control plane."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in list(self._conns):
            w.close()
        await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._conns.update({writer, up_w})

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()
                self._conns.discard(w)

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


def kubeconfig_via(source: Path, port: int, target: Path) -> Path:
    config = yaml.safe_load(source.read_text())
    for c in config["clusters"]:
        c["cluster"]["server"] = f"https://127.0.0.1:{port}"
    target.write_text(yaml.safe_dump(config))
    return target


async def proxied(kube: Kube, kubeconfig: str, directory: Path) -> tuple[Proxy, Path]:
    """A started Proxy to `kube`'s API server, and a copy of `kubeconfig` in `directory` whose
    clients go through it."""
    url = urlsplit(kube.host)
    proxy = Proxy(url.hostname or "127.0.0.1", url.port or 443)
    await proxy.start()
    return proxy, kubeconfig_via(Path(kubeconfig), proxy.port, directory / "kubeconfig")
