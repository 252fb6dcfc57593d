"""No component logs credentials or Secret contents, even at debug level.

The extender, `fleet serve`, `fleet apply` and loadgen run briefly against the cluster at
their most verbose, with kubeconfigs that carry the credentials inline: a bearer token
(a TokenRequest for a ServiceAccount bound to cluster-admin) for some, client-certificate-data
and client-key-data for the others. A Secret with a marker value sits in the cluster while
they run. Then every log line and every file loadgen wrote is searched for the token, the
key and certificate (base64 and PEM body) and the marker.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import vocab
from testbed.cluster import ports, processes
from testbed.kube import errors
from testbed.kube import resources as r
from testbed.kube.client import Kube
from testbed.kube.watching import Change, Snapshot, informer
from tests.support import children
from tests.support.waiting import condition, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BIN = Path(sys.executable).parent
SECRETS = r.Resource("", "v1", "secrets", "Secret", namespaced=True)
BINDINGS = r.Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
FLEETS = r.Resource(
    vocab.TESTBED_GROUP, vocab.FLEET_CRD_VERSION, vocab.FLEET_PLURAL, "Fleet", False
)
# loadgen's -v logs at INFO; configuring the root logger first makes it (and its client
# library) log at DEBUG, the most a user could turn on.
LOADGEN_DEBUG = (
    "import logging, sys; logging.basicConfig(level=logging.DEBUG); "
    "sys.argv[0] = 'loadgen'; from loadgen.cli import main; main()"
)


def inline_kubeconfigs(kubeconfig: str, token: str, d: Path) -> tuple[Path, Path, list[str]]:
    """(token kubeconfig, client-cert kubeconfig, the secret strings they carry)."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = doc["clusters"][0]["cluster"]
    user = doc["users"][0]["user"]

    def data(inline: str, path_key: str, holder: dict[str, Any]) -> bytes:
        if inline in holder:
            return base64.b64decode(holder[inline])
        return Path(holder[path_key]).read_bytes()

    ca = data("certificate-authority-data", "certificate-authority", cluster)
    cert = data("client-certificate-data", "client-certificate", user)
    key = data("client-key-data", "client-key", user)

    def config(user: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [
                {
                    "name": "c",
                    "cluster": {
                        "server": cluster["server"],
                        "certificate-authority-data": base64.b64encode(ca).decode(),
                    },
                }
            ],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        }

    with_token, with_cert = d / "token.kubeconfig", d / "cert.kubeconfig"
    with_token.write_text(yaml.safe_dump(config({"token": token})))
    cert_data, key_data = base64.b64encode(cert).decode(), base64.b64encode(key).decode()
    with_cert.write_text(
        yaml.safe_dump(config({"client-certificate-data": cert_data, "client-key-data": key_data}))
    )
    pem_lines = [
        ln
        for pem in (cert, key)
        for ln in pem.decode().splitlines()
        if ln and not ln.startswith("-----") and len(ln) >= 40
    ]
    return with_token, with_cert, [token, cert_data, key_data, *pem_lines]


async def _run(argv: list[str], env: dict[str, str], log: Path) -> int:
    return await children.run_argv(argv, env, log=log, within=180)


def leaks(files: list[Path], needles: list[str]) -> list[tuple[str, str]]:
    """(file name, the needle's first 12 characters) for each needle found in each file."""
    return [
        (f.name, n[:12])
        for f in files
        if f.is_file()
        for n in needles
        if n in f.read_text(errors="replace")
    ]


def _post(port: int, verb: str, body: dict[str, Any]) -> int:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{verb}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(resp.status)


async def test_debug_logs_and_reports_hold_no_credentials_or_secret_values(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    suffix = secrets.token_hex(3)
    ns, sa, fleet = f"leak-{suffix}", f"leak-{suffix}", f"leak-{suffix}"
    marker = f"s3cr3t-{secrets.token_hex(8)}"
    await kube.create(r.NAMESPACES, {"metadata": {"name": ns}})
    binding = {
        "metadata": {"name": f"leak-{suffix}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "cluster-admin",
        },
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    try:
        await kube.create(r.SERVICE_ACCOUNTS, {"metadata": {"name": sa}}, namespace=ns)
        await kube.create(BINDINGS, binding)
        await kube.create(
            SECRETS,
            {"metadata": {"name": "db"}, "type": "Opaque", "stringData": {"password": marker}},
            namespace=ns,
        )
        token = (
            await kube.request(
                "POST",
                r.SERVICE_ACCOUNTS.path(ns, sa) + "/token",
                body={"spec": {"expirationSeconds": 3600}},
            )
        )["status"]["token"]
        with_token, with_cert, needles = inline_kubeconfigs(kubeconfig, token, tmp_path)
        needles += [marker, base64.b64encode(marker.encode()).decode()]
        env = {**os.environ, "KUBECONFIG": str(with_token)}
        cert_env = {**os.environ, "KUBECONFIG": str(with_cert)}

        # fleet serve (client certificate) reconciles a one-node Fleet object.
        port = ports.free_port()
        fleet_serve = [str(BIN / "fleet"), "-v", "serve", "--install-crd", "--port", str(port)]
        with processes.service(
            "fleet serve",
            fleet_serve,
            port,
            log=logs / "fleet-serve.log",
            env=cert_env,
        ):
            body = {
                "apiVersion": f"{vocab.TESTBED_GROUP}/{vocab.FLEET_CRD_VERSION}",
                "kind": "Fleet",
                "metadata": {"name": fleet},
                "spec": {"pools": [{"name": "h", "profile": "dgx-h100", "count": 1}]},
            }
            await kube.create(FLEETS, body)
            await wait_for(
                kube, FLEETS, lambda o: condition(o, "Ready") == "True", name=fleet, timeout=120
            )

            # The extender (token) answers a scheduler call; loadgen (token) runs two pods.
            ext_port = ports.free_port()
            serve = [str(BIN / "extender"), "serve", "--port", str(ext_port)]
            with processes.service(
                "the extender",
                [*serve, "--log-level", "debug"],
                ext_port,
                log=logs / "extender.log",
                env=env,
            ):
                pod = {"metadata": {"name": "p", "namespace": ns, "uid": "u"}, "spec": {}}
                assert _post(ext_port, "filter", {"Pod": pod, "NodeNames": ["x"]}) == 200
                assert _post(ext_port, "prioritize", {"Pod": pod, "NodeNames": ["x"]}) == 200
                out = tmp_path / "loadgen-out"
                loadgen = [sys.executable, "-c", LOADGEN_DEBUG, "run", "pods", "pods=2"]
                loadgen += ["--node-selector", f"{vocab.LABEL_FLEET}={fleet}", "-v"]
                loadgen += ["--output-dir", str(out), "--timeout", "2m"]
                assert await _run(loadgen, env, logs / "loadgen.log") == 0
            await kube.delete(FLEETS, fleet)
            await _gone(kube, fleet)

        # fleet apply and delete (client certificate), verbose.
        cli = str(BIN / "fleet")
        apply = [cli, "-v", "apply", "--profile", "dgx-h100", "--nodes", "1", "--name", fleet]
        assert await _run(apply, cert_env, logs / "fleet-apply.log") == 0
        assert await _run([cli, "-v", "delete", "--name", fleet], cert_env, logs / "del.log") == 0

        # A token the API server refuses: the error paths must not echo it either.
        bogus = f"bogus-{secrets.token_hex(16)}"
        needles.append(bogus)
        refused = tmp_path / "refused.kubeconfig"
        refused.write_text(with_token.read_text().replace(token, bogus))
        bad_env = {**os.environ, "KUBECONFIG": str(refused)}
        bad_run = [sys.executable, "-c", LOADGEN_DEBUG, "--pods", "1", "-v"]
        bad_run += ["--output-dir", str(tmp_path / "refused-out")]
        assert await _run(bad_run, bad_env, logs / "loadgen-refused.log") == 1
        bad_apply = [cli, "-v", "apply", "--profile", "dgx-h100", "--nodes", "1", "--name", fleet]
        assert await _run(bad_apply, bad_env, logs / "fleet-refused.log") == 1

        files = [*logs.iterdir(), *out.iterdir()]
        assert (logs / "loadgen.log").read_text().count("DEBUG") > 0, "not at debug level"
        assert (logs / "extender.log").read_text().count("DEBUG") > 0, "not at debug level"
        # The search itself finds what it looks for: the kubeconfigs hold every credential.
        found = {n for _, n in leaks([with_token, with_cert], needles)}
        assert {token[:12], needles[1][:12], needles[2][:12]} <= found
        assert leaks(files, needles) == []
        print(f"searched {len(files)} files ({sum(f.stat().st_size for f in files)} bytes) "
              f"for {len(needles)} secret strings: none found")  # fmt: skip
    finally:
        await kube.delete(BINDINGS, f"leak-{suffix}")
        await kube.delete(r.NAMESPACES, ns)
        await _force_fleet_gone(kube, fleet)


async def _gone(kube: Kube, name: str, within: float = 120) -> None:
    """Wait (on a watch) until the Fleet object is gone: its finalizer ran."""

    async def watch() -> None:
        async for ev in informer(kube, FLEETS, field_selector=f"metadata.name={name}"):
            if (isinstance(ev, Snapshot) and not ev.items) or (
                isinstance(ev, Change) and ev.type == "DELETED"
            ):
                return

    await asyncio.wait_for(watch(), within)


async def _force_fleet_gone(kube: Kube, name: str) -> None:
    """After a failure: the Fleet object may still hold its finalizer with no service left."""
    with contextlib.suppress(errors.NotFound):
        await kube.patch(FLEETS, name, {"metadata": {"finalizers": None}})
        await kube.delete(FLEETS, name)
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "fleet"), "delete", "--name", name,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await asyncio.wait_for(proc.wait(), 120)
