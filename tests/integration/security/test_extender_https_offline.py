"""`extender serve --from-files` over HTTPS, with and without client certificates (mutual TLS).

No cluster, but the certificates come from openssl (tests/support/certs.py), an outside binary:
these tests run with the full suite (hack/test.sh), not with the pure-Python `--unit` path.
The same server against the real kube-scheduler: test_extender_tls.py."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import aiohttp
import pytest

from tests.support import certs, children
from tests.support import extender_objects as objects

pytestmark = pytest.mark.timeout(120)

SERVER_SAN = "subjectAltName=IP:127.0.0.1"  # Go and Python check IP SANs, not the CN
BODY = json.dumps({"Pod": objects.pod("ns", "p"), "NodeNames": ["n1"]})


async def filtered(port: int, trust: Path, client: certs.Pair | None = None) -> list[str]:
    """The node names the extender's /filter keeps, over HTTPS trusting the CA `trust`."""
    ctx = ssl.create_default_context(cafile=str(trust))
    if client:
        ctx.load_cert_chain(*client)
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"https://127.0.0.1:{port}/filter", data=BODY, ssl=ctx) as r,
    ):
        names: list[str] = (await r.json())["NodeNames"]
        return names


async def test_serves_https_with_cert_and_key(tmp_path: Path) -> None:
    ca = certs.ca(tmp_path, "server-ca")
    cert, key = certs.leaf(tmp_path, ca, "server", cn="server", extensions=SERVER_SAN)
    fleet = objects.two_node_file(tmp_path / "fleet.yaml")
    args = ("--from-files", str(fleet), "--tls-cert", str(cert), "--tls-key", str(key))
    async with children.extender_serving(*args) as (_, port):
        assert await filtered(port, ca[0]) == ["n1"]


async def test_client_ca_answers_only_clients_with_a_certificate_it_signed(
    tmp_path: Path,
) -> None:
    cas = {name: certs.ca(tmp_path, name) for name in ("server-ca", "client-ca", "other-ca")}

    def signed(name: str, ca: str, ext: str) -> certs.Pair:
        return certs.leaf(tmp_path, cas[ca], name, cn=name, extensions=ext)

    cert, key = signed("server", "server-ca", SERVER_SAN)
    client = signed("client", "client-ca", "extendedKeyUsage=clientAuth")
    stranger = signed("stranger", "other-ca", "extendedKeyUsage=clientAuth")
    fleet = objects.two_node_file(tmp_path / "fleet.yaml")
    args = ("--from-files", str(fleet), "--tls-cert", str(cert), "--tls-key", str(key))
    args += ("--client-ca", str(cas["client-ca"][0]))
    async with children.extender_serving(*args) as (_, port):
        assert await filtered(port, cas["server-ca"][0], client) == ["n1"]
        for refused in (None, stranger):
            with pytest.raises(aiohttp.ClientError):
                await filtered(port, cas["server-ca"][0], refused)
