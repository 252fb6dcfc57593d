"""The in-cluster second scheduler's configuration, built exactly as its pod builds it (the
`config` init container's program on the one KubeSchedulerConfiguration), is accepted by the
real kube-scheduler of the cluster's version, which then schedules a pod that names it.

Outside a pod there is no ServiceAccount, so the test adds the cluster's kubeconfig the way
kwokctl does for the local scheduler; everything else is the pod's configuration. The
extender entry (127.0.0.1:8888) is ignorable and may or may not answer on the shared machine;
either way the pod must be scheduled."""

from __future__ import annotations

import asyncio
import secrets
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.kube import resources as r
from testbed.kube.client import Kube
from tests.support import deploy as s
from tests.support import small_world as w
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def pod_config(tmp: Path, scheduler_name: str) -> tuple[Path, list[str]]:
    """Run the init container's program (its exact argv, our paths and a unique name);
    returns the written config and the kube-scheduler container's flags."""
    dep = next(
        o
        for o in s.render("base")
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "dra-testbed-scheduler"
    )
    spec = dep["spec"]["template"]["spec"]
    init = next(c for c in spec["initContainers"] if c["name"] == "config")
    out = tmp / "kube-scheduler-config.yaml"
    subprocess.run(
        [sys.executable, *init["command"][1:3], str(s.SCHEDULER_CONFIG), str(out), scheduler_name],
        check=True,
    )
    main = next(c for c in spec["containers"] if c["name"] == "kube-scheduler")
    flags = [f for f in main["command"][1:] if not f.startswith("--config=")]
    return out, flags


def wait_ready(port: int, proc: subprocess.Popen[bytes], log: Path, limit: float = 60) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # kube-scheduler's in-memory self-signed serving cert
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"kube-scheduler exited {proc.returncode}: {log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2
            ) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"kube-scheduler not ready in {limit}s: {log.read_text()[-3000:]}")


async def test_pod_config_runs_in_the_real_scheduler_and_schedules(
    kube: Kube, kubeconfig: str, tmp_path: Path
) -> None:
    name = f"dra-testbed-scheduler-{secrets.token_hex(3)}"
    config, flags = pod_config(tmp_path, name)
    doc: dict[str, Any] = yaml.safe_load(config.read_text())
    assert doc["extenders"] == yaml.safe_load(s.SCHEDULER_CONFIG.read_text())["extenders"]
    doc.setdefault("clientConnection", {})["kubeconfig"] = kubeconfig  # as kwokctl does
    config.write_text(yaml.safe_dump(doc))
    port = s.free_port()
    argv = [str(s.tool_dir() / "kube-scheduler"), f"--config={config}", *flags]
    argv += ["--bind-address=127.0.0.1", f"--secure-port={port}"]
    argv += [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    ]
    env = w.Env()
    await kube.create(r.NAMESPACES, {"metadata": {"name": env.namespace}})
    try:
        await kube.create(r.NODES, w.fake_node(env.node))
        await wait_for(kube, r.NODES, w.schedulable, name=env.node)
        with s.running(argv, tmp_path / "kube-scheduler.log") as proc:
            await asyncio.to_thread(wait_ready, port, proc, tmp_path / "kube-scheduler.log")
            body = w.pod(env, "opted-in", "unused")
            del body["spec"]["resourceClaims"]
            del body["spec"]["containers"][0]["resources"]
            body["spec"]["schedulerName"] = name
            await kube.create(r.PODS, body)
            event = await wait_for(
                kube,
                r.EVENTS,
                lambda e: (
                    e.get("reason") == "Scheduled" and e["involvedObject"]["name"] == "opted-in"
                ),
                namespace=env.namespace,
            )
        assert (event.get("reportingComponent") or event["source"]["component"]) == name
    finally:
        await kube.delete(r.NAMESPACES, env.namespace)
        await kube.delete(r.NODES, env.node)
