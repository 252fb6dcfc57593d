"""Local processes standing in for a second-scheduler pod on a kwok cluster.

kwok fakes every pod (Running and Ready, doing nothing), so on the local cluster used as an
existing cluster the scheduler Deployment's pod schedules nothing. This stand-in runs what
that pod would run, taken from the objects as the cluster holds them: the `config` init
container's own program on the ConfigMap's file, the extender sidecar's args, the
kube-scheduler container's flags. Only what a pod gets from its surroundings differs: a
kubeconfig instead of a ServiceAccount, and free loopback ports instead of the pod's own
network namespace (the extender entry's 127.0.0.1:8888 is rewritten to the sidecar's port).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from experiment.sites import cluster_objects as co
from experiment.sites.site import Scheduler
from testbed.cluster import binaries, processes
from tests.support.deploy import free_port

Obj = dict[str, Any]
EXTENDER = str(Path(sys.executable).parent / "extender")


def _by_name(deployment: Obj) -> dict[str, Obj]:
    spec = deployment["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*spec.get("initContainers", ()), *spec["containers"]]}


def _local_flags(args: list[str], port: int, admin_port: int) -> list[str]:
    """The sidecar's `extender serve` args with its listen addresses and ports made local."""
    out = list(args)
    for flag, value in (
        ("--address", "127.0.0.1"),
        ("--port", str(port)),
        ("--admin-address", "127.0.0.1"),
        ("--admin-port", str(admin_port)),
    ):
        if flag in out:
            out[out.index(flag) + 1] = value
    return out


class LocalPods:
    """A `PodStandIn` (experiment.sites.existing_site) running the pod's containers locally."""

    def __init__(self) -> None:
        self.started: list[str] = []
        """The schedulerName of each scheduler it ran, in order."""

    @contextlib.contextmanager
    def scheduler(
        self, config_map: Obj, deployment: Obj, kubeconfig: Path, workdir: Path
    ) -> Iterator[Scheduler]:
        workdir.mkdir(parents=True, exist_ok=True)
        containers = _by_name(deployment)
        init = containers["config"]
        name = init["command"][-1]
        src, dst = workdir / "mounted.yaml", workdir / f"{name}.yaml"
        src.write_text(config_map["data"][co.CONFIG_KEY])
        program = init["command"][:3]  # python -c PROGRAM; then src, dst, name
        subprocess.run([sys.executable, *program[1:], str(src), str(dst), name], check=True)
        cfg = yaml.safe_load(dst.read_text())
        cfg.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
        extender_port = free_port()
        for entry in cfg.get("extenders") or ():
            entry["urlPrefix"] = entry["urlPrefix"].replace(
                f"127.0.0.1:{co.EXTENDER_PORT}", f"127.0.0.1:{extender_port}"
            )
        dst.write_text(yaml.safe_dump(cfg, sort_keys=False))
        main = containers["kube-scheduler"]
        port = free_port()
        argv = [str(binaries.ensure(build=False)["kube-scheduler"]), f"--config={dst}"]
        argv += [f for f in main["command"][1:] if not f.startswith("--config=")]
        argv += ["--bind-address=127.0.0.1", f"--secure-port={port}"]
        argv += [f"--authentication-kubeconfig={kubeconfig}"]
        argv += [f"--authorization-kubeconfig={kubeconfig}"]
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        with contextlib.ExitStack() as stack:
            extender_url = None
            if "extender" in containers:
                sidecar = containers["extender"]["args"]
                assert sidecar[:2] == ["extender", "serve"], sidecar
                admin_port = free_port() if "--admin-port" in sidecar else extender_port
                stack.enter_context(
                    processes.service(
                        f"the stand-in extender of {name}",
                        [EXTENDER, *_local_flags(sidecar[1:], extender_port, admin_port)],
                        admin_port,
                        log=workdir / "extender.log",
                        env=env,
                    )
                )
                extender_url = f"http://127.0.0.1:{admin_port}/metrics"
            log = workdir / "kube-scheduler.log"
            stack.enter_context(
                processes.running(
                    f"the stand-in kube-scheduler {name}",
                    argv,
                    log=log,
                    health_url=f"https://127.0.0.1:{port}/healthz",
                    timeout=120,
                    env=env,
                )
            )
            self.started.append(name)
            yield Scheduler(
                name=name,
                metrics_url=f"https://127.0.0.1:{port}/metrics",
                extender_metrics_url=extender_url,
                log=log,
            )
