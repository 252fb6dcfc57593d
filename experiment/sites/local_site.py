"""The local site: an experiment's variants on the embedded local cluster.

`opened` brings up the cluster a stage needs (its Kubernetes release and feature gates),
starts the extender the cluster's own scheduler calls, and yields a `LocalSite`; afterwards
it tears the cluster down if it created it. The site realizes each variant's scheduler as a
process: the cluster's own kube-scheduler for the shipped set-up, otherwise a second
kube-scheduler of the cluster's release with the variant's configuration, calling no
extender, the shipped one, or an extender of its own started with the variant's flags.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from experiment.measure import fault_plan
from experiment.sites.children import tool
from experiment.sites.site import Scheduler, SchedulerSetup
from testbed import cliconv
from testbed.cluster import (
    holds,
    local,
    paths,
    ports,
    processes,
    prometheus,
    second_scheduler,
    supervision,
)

DEFAULT_SCHEDULER = "default-scheduler"


def extender(
    env: dict[str, str],
    log: Path,
    port: int,
    args: tuple[str, ...] = (),
    source: str | None = None,
) -> contextlib.AbstractContextManager[Any]:
    """`extender serve` on a loopback port (the one a scheduler configuration calls): the
    installed one, or the one of the source tree `source`."""
    if source is None:
        argv = [tool("extender"), "serve", "--port", str(port), *args]
        return processes.service("the extender", argv, port, log=log, env=env)
    # -P: no current directory ahead of PYTHONPATH, which `-c` would otherwise put first (a
    # run started from a checkout would run that checkout's extender in every variant).
    argv = [sys.executable, "-P", "-c", _FROM_SOURCE, "serve", "--port", str(port), *args]
    env = {**env, "PYTHONPATH": source}
    return processes.service(f"the extender of {source}", argv, port, log=log, env=env)


_FROM_SOURCE = "import sys; from extender.cli import main; sys.argv[0] = 'extender'; main()"


@contextlib.contextmanager
def fleet_service(env: dict[str, str], log: Path, port: int | None) -> Iterator[bool]:
    """`fleet serve` on the port the cluster's Prometheus scrapes it on, when the cluster has
    a Prometheus, so the dashboard's fleet row shows the fleets applied through it; one that
    already answers there is used as it is. False: the fleet goes through `fleet apply`
    alone (no Prometheus, or the port is held by something else)."""
    if port is None:
        yield False
        return
    if ports.in_use(port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                yield r.status == 200
        except OSError:
            yield False
        return
    argv = [tool("fleet"), "serve", "--install-crd", "--port", str(port)]
    with processes.service("the fleet service", argv, port, log=log, env=env):
        yield True


def extender_entries(port: int) -> list[dict[str, Any]]:
    """The shipped configuration's extender entries, calling loopback `port` (pure)."""
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    doc = yaml.safe_load(local.scheduler_config_text(source, extender=True, extender_port=port))
    return list(doc.get("extenders") or [])


class LocalSite:
    """A running local cluster with the shipped extender beside it."""

    def __init__(self, cluster: local.LocalCluster, server: str) -> None:
        self.cluster = cluster
        self._server = server
        self.env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        self.fleet_service = False
        """`fleet serve` runs for the site (see `fleet_service`)."""
        self.stack = contextlib.ExitStack()
        """What runs beside the cluster for the site's life (`opened` closes it)."""
        self.workdir = Path()
        self.shipped_extender: subprocess.Popen[bytes] | None = None
        """The extender the cluster's own scheduler calls (`opened` starts it)."""
        self._extender_starts = 0

    @property
    def fleet_flags(self) -> tuple[str, ...]:
        return ("--through-service",) if self.fleet_service else ()

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.config.kubeconfig

    @property
    def schedulers_per_arm(self) -> bool:
        return True

    @property
    def description(self) -> str:
        # A preview's arms ran with a scheduler newer than its API server: said beside them.
        skew = self.cluster.version_skew()
        return (
            f"local cluster {self.cluster.config.name!r}, Kubernetes {self.cluster.release()}, "
            f"at {self._server}" + (f" ({skew})" if skew else "")
        )

    @property
    def extender_metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.cluster.config.extender_port}/metrics"

    def processes_cpu(self) -> dict[str, float]:
        """The cluster's components (from their pid files)."""
        out = {}
        for c in self.cluster.status().components:
            used = supervision.cpu_seconds(c.pid) if c.pid is not None else None
            if used is not None:
                out[c.name] = used
        return out

    def start_extender(self) -> None:
        """The shipped extender on the cluster's extender port, until the site closes; each
        start logs to a file of its own."""
        self._extender_starts += 1
        n = self._extender_starts
        log = self.workdir / ("extender.log" if n == 1 else f"extender-{n}.log")
        self.shipped_extender = self.stack.enter_context(
            extender(self.env, log, self.cluster.config.extender_port)
        )

    def kill(self, component: str) -> float | None:
        if component == fault_plan.EXTENDER:
            proc = self.shipped_extender
            if proc is None or proc.poll() is not None:
                raise local.ClusterError("the shipped extender is not running")
            proc.kill()
            proc.wait()
            return None  # its CPU is read from its /metrics, over its processes
        pid = supervision.read_pid(self.cluster.config.cluster_dir / "pids" / f"{component}.pid")
        used = supervision.cpu_seconds(pid) if pid is not None else None
        if pid is None or used is None:
            raise local.ClusterError(f"{component} is not running")
        os.kill(pid, signal.SIGKILL)
        # Until it has exited it holds its ports, and `up` would take it for running.
        supervision.wait_exited(pid)
        return used

    def repair(self, component: str) -> None:
        if component == fault_plan.EXTENDER:
            self.start_extender()
        else:
            self.cluster.up(build=False)

    @contextlib.contextmanager
    def scheduler(self, setup: SchedulerSetup, workdir: Path) -> Iterator[Scheduler]:
        """The scheduler `setup` asks for; a second one is named after `workdir`."""
        cfg = self.cluster.config
        if setup.shipped:
            secure = self.cluster.component_flag("kube-scheduler", "secure-port")
            yield Scheduler(
                name=DEFAULT_SCHEDULER,
                metrics_url=f"https://127.0.0.1:{secure}/metrics",
                extender_metrics_url=self.extender_metrics_url,
                log=cfg.cluster_dir / "logs" / "kube-scheduler.log",
            )
            return
        name = workdir.name
        with contextlib.ExitStack() as stack:
            extenders: list[dict[str, Any]] = []
            # Off, the shipped extender is still scraped: it watches the same pods and claims,
            # so the difference in its CPU is what answering the scheduler costs.
            extender_metrics = self.extender_metrics_url
            if setup.extender:
                port = cfg.extender_port
                if setup.extender_args or setup.extender_source:
                    port = ports.free_port()
                    workdir.mkdir(parents=True, exist_ok=True)
                    log = workdir / "extender.log"
                    stack.enter_context(
                        extender(self.env, log, port, setup.extender_args, setup.extender_source)
                    )
                    stack.enter_context(
                        prometheus.scraped(cfg.cluster_dir, prometheus.EXTENDER_JOB, port)
                    )
                    extender_metrics = f"http://127.0.0.1:{port}/metrics"
                extenders = setup.extender_entries(extender_entries(port))
            second = stack.enter_context(
                second_scheduler.running(
                    self.kubeconfig,
                    workdir,
                    scheduler_name=name,
                    extenders=extenders,
                    extra_gates=cfg.feature_gates,
                    release=self.cluster.release(),
                    overrides=setup.config,
                )
            )
            stack.enter_context(
                prometheus.scraped(cfg.cluster_dir, prometheus.SECOND_SCHEDULER_JOB, second.port)
            )
            yield Scheduler(
                name=second.name,
                metrics_url=second.metrics_url,
                extender_metrics_url=extender_metrics,
                idle_extender_metrics_url=(
                    self.extender_metrics_url
                    if extender_metrics != self.extender_metrics_url
                    else None
                ),
                log=workdir / f"{name}.log",
            )


@contextlib.contextmanager
def opened(
    config: local.ClusterConfig, workdir: Path, console: Console, *, keep: bool = False
) -> Iterator[LocalSite]:
    """The cluster `config` describes, up (built and created if needed), with the shipped
    extender running; torn down afterwards if this created it (unless `keep`)."""
    cluster = local.LocalCluster(config)
    release = config.kubernetes or cluster.release()
    cliconv.rule(console, f"control plane: Kubernetes {release}")
    status, created = cluster.up()
    state = "started" if created else "already running"
    console.print(f"cluster {config.name!r} ({release}) {state} at {status.server}")
    try:
        site = LocalSite(cluster, status.server or "")
        workdir.mkdir(parents=True, exist_ok=True)
        # Held while it runs: `testbed down` of this cluster says so instead of pulling it.
        fleet_port = prometheus.service_port(config.prometheus, prometheus.FLEET_JOB)
        site.workdir = workdir
        with (
            site.stack,
            holds.hold(config.home, config.name, f"experiment writing to {workdir}"),
            fleet_service(site.env, workdir / "fleet-serve.log", fleet_port) as site.fleet_service,
        ):
            site.start_extender()
            if site.fleet_service:
                console.print(
                    f"fleet: applied through `fleet serve` on 127.0.0.1:{fleet_port}, which the "
                    "cluster's Prometheus scrapes"
                )
            yield site
    finally:
        if created and not keep:
            try:
                cluster.down()
            except local.ClusterError as e:  # someone else started using it meanwhile
                console.print(f"left cluster {config.name!r} up: {e}")


def cluster_config(
    base: local.ClusterConfig,
    key: tuple[str, tuple[tuple[str, bool], ...]],
    keys: list[tuple[str, tuple[tuple[str, bool], ...]]],
    *,
    explicit_release: bool,
) -> local.ClusterConfig:
    """The cluster for one of an experiment's cluster keys (pure). One key: the user's own
    cluster (`--name`), on the release the file asks for, if it asks. Several: one cluster
    each, named after the base and the release (and a gate digest), each calling its own
    extender port, brought up in turn."""
    release, gates = key
    if len(keys) == 1:
        return dataclasses.replace(
            base,
            kubernetes=release if explicit_release else base.kubernetes,
            feature_gates={**base.feature_gates, **dict(gates)},
        )
    suffix = "k" + release.replace(".", "")
    if gates:
        suffix += "-" + hashlib.sha256(repr(gates).encode()).hexdigest()[:6]
    return dataclasses.replace(
        base,
        name=f"{base.name}-{suffix}",
        apiserver_port=0,
        extender_port=base.extender_port + 1 + keys.index(key),
        kubernetes=release,
        feature_gates={**base.feature_gates, **dict(gates)},
    )


def opener(
    base: local.ClusterConfig,
    keys: list[tuple[str, tuple[tuple[str, bool], ...]]],
    console: Console,
    *,
    explicit_release: bool,
    keep: bool = False,
) -> Callable[[tuple[str, tuple[tuple[str, bool], ...]], Path], AbstractContextManager[LocalSite]]:
    """The runner's `SiteOpener` for the local cluster(s) of an experiment's cluster keys."""

    def open_site(
        key: tuple[str, tuple[tuple[str, bool], ...]], workdir: Path
    ) -> AbstractContextManager[LocalSite]:
        config = cluster_config(base, key, keys, explicit_release=explicit_release)
        return opened(config, workdir, console, keep=keep)

    return open_site
