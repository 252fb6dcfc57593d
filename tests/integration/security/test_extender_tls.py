"""The extender over HTTPS with the real kube-scheduler (`enableHTTPS` + `tlsConfig.caData`).

The test makes its own CA and a server certificate for 127.0.0.1 (openssl), serves the
extender with them, and starts a second kube-scheduler whose only extender entry is that
HTTPS URL. A pod asking for that scheduler and a GPU is scheduled, and the extender counted
the scheduler's filter and prioritize calls. With a CA that did not sign the certificate the
scheduler's calls fail the handshake: the entry is ignorable, so the pod still schedules, and
the extender answered nothing. With `--client-ca` (mutual TLS) the same holds of a scheduler
presenting no client certificate, while one presenting a certificate that CA signed
(`tlsConfig.certData`/`keyData`) is answered.
"""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from loadgen.report import document
from testbed import vocab
from testbed.cluster import ports, processes, second_scheduler
from testbed.kube.client import Kube
from tests.support import certs
from tests.support.private_fleet import Fleet, make_fleet, namespace_gone, remove_fleet

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BIN = Path(sys.executable).parent
PODS = 2
SKIPPED = "Skipping extender as it returned error and has ignorable flag set"


def make_server_cert(d: Path, ca: certs.Pair) -> certs.Pair:
    """A leaf for IP 127.0.0.1 (Go checks IP SANs, never the CN), signed by `ca`."""
    ext = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"
    return certs.leaf(d, ca, "tls", cn="127.0.0.1", extensions=ext)


def make_client_cert(d: Path, ca: certs.Pair) -> certs.Pair:
    """A client leaf (kube-scheduler's, for mutual TLS), signed by `ca`."""
    return certs.leaf(
        d, ca, "client", cn="kube-scheduler", extensions="extendedKeyUsage=clientAuth"
    )


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def extender_entry(
    port: int, ca_cert: Path, client: tuple[Path, Path] | None = None
) -> dict[str, Any]:
    tls = {"caData": _b64(ca_cert)}
    if client is not None:
        tls |= {"certData": _b64(client[0]), "keyData": _b64(client[1])}
    return {
        "urlPrefix": f"https://127.0.0.1:{port}",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "nodeCacheCapable": True,
        "ignorable": True,
        "enableHTTPS": True,
        "tlsConfig": tls,
        "httpTimeout": "5s",
    }


def ok_calls(port: int, ca_cert: Path | None) -> dict[str, float]:
    """extender_requests_total{outcome="ok"} by verb, read over verified HTTPS (plain HTTP
    without `ca_cert`: an admin port)."""
    if ca_cert is None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    else:
        trust = ssl.create_default_context(cafile=str(ca_cert))
        url = f"https://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10, context=trust) as resp:
            text = resp.read().decode()
    out: dict[str, float] = {"filter": 0.0, "prioritize": 0.0}
    for line in text.splitlines():
        if line.startswith("extender_requests_total{") and 'outcome="ok"' in line:
            verb = line.split('verb="')[1].split('"')[0]
            out[verb] = float(line.rsplit(" ", 1)[1])
    return out


async def loadgen(env: dict[str, str], fleet: Fleet, scheduler: str, out: Path) -> None:
    run_id = f"tls-{secrets.token_hex(3)}"
    fleet.run_ids.append(run_id)
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "loadgen"), "run", "pods", f"pods={PODS}", "gpus=1",
        "--node-selector", f"{vocab.LABEL_FLEET}={fleet.suffix}", "--scheduler-name", scheduler,
        "--timeout", "2m", "--run-id", run_id, "--output-dir", str(out), "-q",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode()
    doc = document.load(out / "result.json")
    assert doc.counts.pods_running == PODS
    return None


async def test_the_real_scheduler_calls_the_extender_over_https_and_only_with_the_right_ca(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    ca = certs.ca(tmp_path, "test-ca")
    wrong_ca, _ = certs.ca(tmp_path, "wrong-ca")
    cert, key = make_server_cert(tmp_path, ca)
    port = ports.free_port()
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    serve = [str(BIN / "extender"), "serve", "--port", str(port)]
    serve += ["--tls-cert", str(cert), "--tls-key", str(key)]
    fleet = await make_fleet(kube, kubeconfig, nodes=2)  # two nodes: prioritize is called too
    try:
        with processes.running(
            "the TLS extender",
            serve,
            log=tmp_path / "extender.log",
            health_url=f"https://127.0.0.1:{port}/readyz",
            timeout=120,
            env=env,
        ):
            before = ok_calls(port, ca[0])
            name = f"tls-{secrets.token_hex(3)}"
            with second_scheduler.running(
                Path(kubeconfig),
                tmp_path / "right",
                scheduler_name=name,
                extenders=[extender_entry(port, ca[0])],
            ):
                await loadgen(env, fleet, name, tmp_path / "right-run")
            right = ok_calls(port, ca[0])
            assert right["filter"] - before["filter"] >= PODS, (before, right)
            assert right["prioritize"] - before["prioritize"] >= 1, (before, right)
            sched_log = (tmp_path / "right" / f"{name}.log").read_text()
            assert SKIPPED not in sched_log

            name = f"wrong-{secrets.token_hex(3)}"
            with second_scheduler.running(
                Path(kubeconfig),
                tmp_path / "wrong",
                scheduler_name=name,
                extenders=[extender_entry(port, wrong_ca)],
            ):
                await loadgen(env, fleet, name, tmp_path / "wrong-run")
            assert ok_calls(port, ca[0]) == right  # not one call got through
            sched_log = (tmp_path / "wrong" / f"{name}.log").read_text()
            skipped = [ln for ln in sched_log.splitlines() if SKIPPED in ln]
            assert len(skipped) >= PODS
            assert all("x509" in ln or "certificate" in ln for ln in skipped), skipped[:2]
        print(f"over TLS: {right}; wrong CA: {len(skipped)} filter calls refused")
        for run_id in fleet.run_ids:
            await namespace_gone(kube, run_id)
    finally:
        await remove_fleet(kube, kubeconfig, fleet)


async def test_with_a_client_ca_the_real_scheduler_gets_answers_only_with_its_certificate(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    """Mutual TLS (`--client-ca`): a scheduler presenting a certificate the client CA signed
    (`tlsConfig.certData`/`keyData`) is answered; one presenting none fails the handshake
    (ignorable: its pods still schedule, and the extender answered nothing)."""
    ca = certs.ca(tmp_path, "server-ca")
    client_ca = certs.ca(tmp_path, "client-ca")
    cert, key = make_server_cert(tmp_path, ca)
    client = make_client_cert(tmp_path, client_ca)
    port, admin = ports.free_port(), ports.free_port()
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    serve = [str(BIN / "extender"), "serve", "--port", str(port), "--admin-port", str(admin)]
    serve += ["--tls-cert", str(cert), "--tls-key", str(key), "--client-ca", str(client_ca[0])]
    fleet = await make_fleet(kube, kubeconfig, nodes=2)
    try:
        with processes.running(
            "the mutual-TLS extender",
            serve,
            log=tmp_path / "extender.log",
            health_url=f"http://127.0.0.1:{admin}/readyz",  # probes cannot present a certificate
            timeout=120,
            env=env,
        ):
            before = ok_calls(admin, None)
            name = f"mtls-{secrets.token_hex(3)}"
            with second_scheduler.running(
                Path(kubeconfig),
                tmp_path / "right",
                scheduler_name=name,
                extenders=[extender_entry(port, ca[0], client)],
            ):
                await loadgen(env, fleet, name, tmp_path / "right-run")
            right = ok_calls(admin, None)
            assert right["filter"] - before["filter"] >= PODS, (before, right)
            assert right["prioritize"] - before["prioritize"] >= 1, (before, right)
            assert SKIPPED not in (tmp_path / "right" / f"{name}.log").read_text()

            name = f"nocert-{secrets.token_hex(3)}"
            with second_scheduler.running(
                Path(kubeconfig),
                tmp_path / "nocert",
                scheduler_name=name,
                extenders=[extender_entry(port, ca[0])],
            ):
                await loadgen(env, fleet, name, tmp_path / "nocert-run")
            assert ok_calls(admin, None) == right  # not one call got through
            sched_log = (tmp_path / "nocert" / f"{name}.log").read_text()
            skipped = [ln for ln in sched_log.splitlines() if SKIPPED in ln]
            assert len(skipped) >= PODS
            assert all("certificate" in ln or "tls" in ln for ln in skipped), skipped[:2]
        print(f"mutual TLS: {right}; no client certificate: {len(skipped)} calls refused")
        for run_id in fleet.run_ids:
            await namespace_gone(kube, run_id)
    finally:
        await remove_fleet(kube, kubeconfig, fleet)
