"""CPU per watch event of two Python readers side by side: the shared client's watch and a
bare asyncio protocol, to tell what reading an event costs from what handling it costs.

On a running local cluster (`testbed --name C --extender-port P up`), two child processes
watch ResourceClaims in a fresh namespace while this process creates `--events` claims there,
one request at a time. Each child decodes every event with the client's own decoding and
reports its CPU (`time.process_time`) from the first event to the last:

  client  `Kube.stream` (aiohttp over TLS on uvloop), yielding to the loop after each event
          as the extender's informer does
  bare    an `asyncio.Protocol` on the same credentials and TLS settings that speaks HTTP/1.1
          and chunked transfer coding itself and decodes inside `data_received`: no stream
          object, no task wake-up per event. What it spends is about the floor of a Python
          reader here (the wake-up, the socket read, TLS).

Beside them the extender itself runs on the cluster's extender port and watches as it always
does (`extender` below: its `process_cpu_seconds_total` over the burst, per claim event it
applied). All three see the same arrivals; rounds repeat the whole.

    .venv/bin/python bench/watch_reader_cpu.py --cluster C --extender-port P \\
        [--events 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import (  # bench/ is on sys.path
    HERE,
    add_cluster_flags,
    extender_counters,
    extender_from_tree,
    running_cluster,
)
from yarl import URL

from testbed import runtime
from testbed.kube import resources
from testbed.kube.client import Kube, WatchEvent, decode_event

CLAIMS = resources.RESOURCE_CLAIMS
READERS = ("client", "bare")


class Tally:
    """Counts decoded events; notes the CPU clock at the first and at the `want`-th."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.seen = 0
        self.first = self.last = 0.0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def add(self, ev: WatchEvent) -> None:
        if ev.type == "BOOKMARK" or self.done.done():
            return
        self.seen += 1
        if self.seen == 1:
            self.first = time.process_time()
        if self.seen == self.want:
            self.last = time.process_time()
            self.done.set_result(None)

    def us_per_event(self) -> float:
        return (self.last - self.first) / (self.want - 1) * 1e6


class BareWatch(asyncio.Protocol):
    """One watch request; its chunked body split into lines, each handed to `on_line`."""

    def __init__(self, request: bytes, on_line: Callable[[bytes], None]) -> None:
        self.request = request
        self.on_line = on_line
        self.buf = bytearray()
        self.body = bytearray()
        self.in_head = True
        self.chunk_left = -1  # bytes left of the current chunk; -1: a size line comes next

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        if self.in_head:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[: buf.find(b"\r\n")])
            if b" 200 " not in status:
                raise SystemExit(f"watch refused: {status.decode(errors='replace')}")
            del buf[: end + 4]
            self.in_head = False
        while True:
            if self.chunk_left < 0:
                eol = buf.find(b"\r\n")
                if eol < 0:
                    return
                self.chunk_left = int(bytes(buf[:eol]).split(b";")[0], 16)
                del buf[: eol + 2]
            if len(buf) < self.chunk_left + 2:
                return
            self.body += buf[: self.chunk_left]
            del buf[: self.chunk_left + 2]
            self.chunk_left = -1
            self._lines()

    def _lines(self) -> None:
        body, start = self.body, 0
        while (nl := body.find(b"\n", start)) >= 0:
            line = bytes(body[start:nl])
            start = nl + 1
            if line.strip():
                self.on_line(line)
        del body[:start]


def tls_context(conf: Any) -> ssl.SSLContext:
    """The TLS settings kubernetes-asyncio's pool uses, from the same configuration."""
    ctx = ssl.create_default_context(cafile=conf.ssl_ca_cert)
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, keyfile=conf.key_file)
    if not conf.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def read(reader: str, kubeconfig: str, namespace: str, events: int) -> None:
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        rv = (await kube.list(CLAIMS, namespace=namespace)).resource_version
        tally = Tally(events)
        if reader == "client":
            print("ready", flush=True)
            async for ev in kube.stream(CLAIMS, resource_version=rv, namespace=namespace):
                tally.add(ev)
                if tally.done.done():
                    break
                await asyncio.sleep(0)
        else:
            headers = {"Accept": "application/json", "User-Agent": kube.settings.user_agent}
            await kube.api.update_params_for_auth(headers, [], ["BearerToken"])
            url = URL(kube.host)
            query = f"watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=600"
            lines = [f"GET {CLAIMS.path(namespace)}?{query} HTTP/1.1", f"Host: {url.host}"]
            lines += [f"{k}: {v}" for k, v in headers.items()]
            request = ("\r\n".join(lines) + "\r\n\r\n").encode()
            transport, _ = await asyncio.get_running_loop().create_connection(
                lambda: BareWatch(request, lambda line: tally.add(decode_event(line, CLAIMS))),
                str(url.host),
                url.port or 443,
                ssl=tls_context(kube.api.configuration),
                server_hostname=kube.api.rest_client.server_hostname or url.host,
            )
            print("ready", flush=True)
            await tally.done
            transport.close()
        print(json.dumps({"reader": reader, "us_per_event": tally.us_per_event()}), flush=True)


def claim(i: int) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}
    return {
        "apiVersion": CLAIMS.api_version,
        "kind": CLAIMS.kind,
        "metadata": {"name": f"claim-{i:05d}"},
        "spec": {"devices": {"requests": [request]}},
    }


async def round_(kubeconfig: str, port: int, events: int) -> dict[str, float]:
    """Both readers and the running extender over one burst of `events` claims in a
    namespace of its own."""
    namespace = f"watch-reader-cpu-{secrets.token_hex(3)}"
    async with await Kube.connect(kubeconfig=kubeconfig) as kube:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await kube.create(resources.NAMESPACES, ns)
        try:
            argv = [sys.executable, __file__, "--kubeconfig", kubeconfig]
            argv += ["--namespace", namespace, "--events", str(events), "--reader"]
            children = [
                await asyncio.create_subprocess_exec(*argv, r, stdout=subprocess.PIPE)
                for r in READERS
            ]
            for child in children:
                assert child.stdout is not None
                if (await child.stdout.readline()).strip() != b"ready":
                    sys.exit("a reader did not start; see its error above")
            await asyncio.sleep(2)  # both watches open before the first event
            before = await asyncio.to_thread(extender_counters, port)
            for i in range(events):
                await kube.create(CLAIMS, claim(i), namespace=namespace)
            got: dict[str, float] = {}
            for child in children:
                out, _ = await asyncio.wait_for(child.communicate(), 120)
                doc = json.loads(out)
                got[doc["reader"]] = doc["us_per_event"]
            await asyncio.sleep(1)  # the extender's last events
            after = await asyncio.to_thread(extender_counters, port)
            applied = after["events"] - before["events"]
            got["extender"] = (after["cpu"] - before["cpu"]) / max(applied, 1) * 1e6
            return got
        finally:
            await kube.delete(resources.NAMESPACES, namespace)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_cluster_flags(ap)
    ap.add_argument("--events", type=int, default=1000, help="claims created per round")
    ap.add_argument("--rounds", type=int, default=2, help="rounds (default 2)")
    ap.add_argument("--reader", choices=READERS, help=argparse.SUPPRESS)  # a child's role
    ap.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    ap.add_argument("--namespace", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.events < 2 or args.rounds < 1:
        ap.error("--events must be at least 2 and --rounds at least 1")
    if args.reader:
        runtime.run(read(args.reader, args.kubeconfig, args.namespace, args.events))
        return 0
    port = args.extender_port
    cluster, env = running_cluster(args.cluster, port)
    config = cluster.config
    log = Path(tempfile.mkdtemp(prefix="watch-reader-cpu-")) / "extender.log"
    print(f"{args.events} claim events per round; CPU per event (µs)")
    with extender_from_tree(HERE, port, env, log, None):
        for n in range(args.rounds):
            got = runtime.run(round_(str(config.kubeconfig), port, args.events))
            cells = "   ".join(f"{r} {got[r]:6.1f}" for r in (*READERS, "extender"))
            print(f"round {n + 1}: {cells}   bare/client {got['bare'] / got['client']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
