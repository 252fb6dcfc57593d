"""`testbed up|down|status`: the local control plane on loopback, run by kwokctl.

Describe first, execute second (as kwokctl does): `description` holds what a cluster is and
the pure description of the kwokctl call; `LocalCluster` runs it, starts what kwokctl does not
run (`companions`: the kwok shards, Prometheus) and inspects the result.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testbed import versions as vs
from testbed.cluster import binaries as bins
from testbed.cluster import (
    companions,
    description,
    discovery,
    health,
    holds,
    in_use,
    kwok_leases,
    kwok_shards,
    locks,
    paths,
    ports,
    prometheus,
    supervision,
)
from testbed.cluster import feature_gates as fg

# What a cluster is (its configuration, the kwokctl call, its status) lives in `description`;
# named here too, as every caller knows them as `local.*`.
from testbed.cluster.description import (
    COMPONENTS,
    DEFAULT_NAME,
    MAX_KWOK_SHARDS,
    ClusterConfig,
    ClusterError,
    ComponentState,
    Status,
    create_command,
    kwokctl_config_text,
    scheduler_config_text,
)

__all__ = [
    "COMPONENTS",
    "DEFAULT_NAME",
    "MAX_KWOK_SHARDS",
    "ClusterConfig",
    "ClusterError",
    "ComponentState",
    "LocalCluster",
    "Status",
    "create_command",
    "kwokctl_config_text",
    "scheduler_config_text",
]


class _Unhealthy(ClusterError):
    """`up` started components that did not all become healthy (they are then stopped)."""


def _quiet(message: str) -> None:
    """The default `notify`: say nothing."""


@dataclass
class LocalCluster:
    config: ClusterConfig = field(default_factory=ClusterConfig)
    _found: bins.Binaries | None = field(default=None, init=False, repr=False)

    def binaries(self, *, build: bool = False) -> bins.Binaries:
        """The binaries, looked up (or built) once: readiness polls ask twice a second."""
        if self._found is None:
            self._found = bins.ensure(build=build, release=self.release())
        return self._found

    def release(self) -> str:
        """The Kubernetes release this cluster runs (or will run)."""
        return self.config.kubernetes or self._created_release() or bins.DEFAULT_RELEASE

    def _created_release(self) -> str | None:
        """The release an existing cluster was created with: kwokctl links each component's
        binary from our versioned cache into the cluster's bin/."""
        try:
            target = os.readlink(self.config.cluster_dir / "bin" / "kube-apiserver")
        except OSError:
            return None
        return bins.release_of(target)

    def _check_unchanged(self) -> None:
        """An existing cluster keeps the release and gates it was created with: asking for
        others is an error that says how to get them."""
        cfg = self.config
        have = self._created_release()
        if cfg.kubernetes and have and bins.check_release(cfg.kubernetes) != have:
            raise ClusterError(
                f"cluster {cfg.name!r} runs Kubernetes {have}; `testbed --name {cfg.name} "
                f"down` it first to recreate it with {cfg.kubernetes}"
            )
        flag = self.component_flag("kube-apiserver", "feature-gates")
        if cfg.feature_gates and flag is not None:
            running = fg.parse(flag)
            differ = {k: v for k, v in cfg.feature_gates.items() if running.get(k) != v}
            if differ:
                raise ClusterError(
                    f"cluster {cfg.name!r} runs without {fg.flag_value(differ)}; "
                    f"`testbed --name {cfg.name} down` it first to recreate it with them"
                )

    def status(self) -> Status:
        cfg = self.config
        exists = cfg.kubeconfig.is_file()
        server = discovery.server_of(cfg.kubeconfig) if exists else None
        ready = exists and self._ready()
        port = cfg.prometheus.port() if exists else None
        return Status(
            exists,
            ready,
            server,
            cfg.kubeconfig,
            self._components(ready) if exists else [],
            prometheus.url(port) if port is not None else None,
            *(self._created_versions() if exists else (None, (), None)),
        )

    def _created_versions(self) -> tuple[str | None, tuple[str, ...], str | None]:
        """The release an existing cluster was created with, what a preview runs instead of
        it, and its version skew (from the versions in its binaries' cache directory)."""
        try:
            target = Path(os.readlink(self.config.cluster_dir / "bin" / "kube-scheduler"))
        except OSError:
            return None, (), None
        found = bins.Binaries(target.parent)
        return bins.release_of(str(target)), tuple(found.preview()), self._skew_of(target)

    def version_skew(self) -> str | None:
        """Why its kube-scheduler is outside the supported version skew (`versions.skew`), from
        the binaries it runs or will run; None inside it, or binaries outside the cache."""
        try:
            target = Path(os.readlink(self.config.cluster_dir / "bin" / "kube-scheduler"))
        except OSError:
            target = self.binaries()["kube-scheduler"]
        return self._skew_of(target)

    @staticmethod
    def _skew_of(scheduler: Path) -> str | None:
        versions = bins.versions_of(str(scheduler))
        return vs.skew(versions.apiserver, versions.scheduler) if versions else None

    def up(
        self, *, build: bool = True, notify: Callable[[str], None] = _quiet
    ) -> tuple[Status, bool]:
        """Create the cluster, or repair it (start what is not running); returns its status,
        healthy, and whether anything changed. Raises ClusterError naming every component
        that is not healthy, and how to recover, otherwise.

        Safe to run concurrently: start-ups on one machine take turns (see `locks`);
        `notify` hears about waits and repairs."""
        cfg = self.config
        if cfg.kwok_shards is not None and not 1 <= cfg.kwok_shards <= MAX_KWOK_SHARDS:
            raise ClusterError(f"kwok shards must be 1..{MAX_KWOK_SHARDS}, not {cfg.kwok_shards}")
        with self._cluster_lock(notify):
            current = self.status()
            if current.exists:
                self._check_unchanged()
            if current.exists and cfg.kwok_shards is not None:
                have = self.kwok_shards()
                if have != cfg.kwok_shards:
                    raise ClusterError(
                        f"cluster {cfg.name!r} runs {have} kwok shard(s); `testbed down` it "
                        f"first to recreate it with {cfg.kwok_shards}"
                    )
            add_prometheus = self._check_prometheus(current.exists)
            if current.healthy and not add_prometheus:
                return current, False
            b = self.binaries(build=build)  # a first build takes minutes: before our turn
            cfg.home.mkdir(parents=True, exist_ok=True)
            with self._start_lock(notify):
                try:
                    status = self._repair(b, notify) if current.exists else self._create(b)
                    if add_prometheus:
                        self._add_prometheus()
                        status = self._healthy_or_raise()
                    return status, True
                except _Unhealthy as e:
                    # Never leave half a cluster running: an API server whose etcd died keeps
                    # retrying its port, and once another cluster's etcd takes that port it
                    # serves (and its controllers act on) the other cluster's data.
                    self._stop(b)
                    raise ClusterError(
                        f"{e}; stopped what was running of it (logs: {cfg.cluster_dir / 'logs'}); "
                        f"{self._recovery()}"
                    ) from None

    def _check_prometheus(self, exists: bool) -> bool:
        """Whether `up` must add a Prometheus; raises ClusterError if it cannot (another
        port asked of a cluster that has one, no binary, a busy port)."""
        cfg = self.config
        want = cfg.prometheus_port
        have = cfg.prometheus.port() if exists else None
        if want is None or have == want:
            return False
        if have is not None:
            raise ClusterError(
                f"cluster {cfg.name!r} runs Prometheus on port {have}; `testbed --name "
                f"{cfg.name} down` it first to recreate it with --prometheus-port {want}"
            )
        try:
            prometheus.binary()
        except prometheus.PrometheusError as e:
            raise ClusterError(str(e)) from None
        if ports.in_use(want) or want in ports.reserved_elsewhere(cfg.cluster_dir):
            raise ClusterError(f"port {want} on 127.0.0.1 is already in use")
        return True

    def _add_prometheus(self) -> None:
        """Write the cluster's Prometheus configuration (from its running components' command
        lines) and start it."""
        cfg = self.config
        assert cfg.prometheus_port is not None
        pids_dir = cfg.cluster_dir / "pids"
        argvs = {
            name: supervision.argv(pid)
            for name in self._component_names()
            if (pid := self._own(pids_dir / f"{name}.pid")) is not None
        }
        config = prometheus.scrape_config(
            argvs,
            pki=cfg.cluster_dir / "pki",
            extender_port=cfg.extender_port,
            fleet_port=cfg.fleet_port,
            targets=cfg.prometheus.targets,
        )
        prometheus.write(cfg.prometheus, config, cfg.prometheus_port)
        ports.add(cfg.cluster_dir, cfg.prometheus_port)
        try:
            companions.start_prometheus(self.config)
        except ClusterError:
            shutil.rmtree(cfg.prometheus.directory, ignore_errors=True)  # as it was
            raise

    def _create(self, b: bins.Binaries) -> Status:
        cfg = self.config
        if cfg.cluster_dir.exists():
            raise ClusterError(
                f"cluster {cfg.name!r} was left half-created (no kubeconfig in "
                f"{cfg.cluster_dir}); {self._recovery()}"
            )
        if cfg.apiserver_port and ports.in_use(cfg.apiserver_port):
            raise ClusterError(f"port {cfg.apiserver_port} on 127.0.0.1 is already in use")
        source = (
            cfg.scheduler_config
            or paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
        )
        sched = cfg.home / f"{cfg.name}-scheduler.yaml"
        sched.write_text(
            scheduler_config_text(source, extender=cfg.extender, extender_port=cfg.extender_port)
        )
        fixed = {"kubeApiserverPort": cfg.apiserver_port} if cfg.apiserver_port else {}
        kwokctl_config = cfg.home / f"{cfg.name}-kwokctl.yaml"
        kwokctl_config.write_text(
            kwokctl_config_text(ports.reserve(cfg.cluster_dir, fixed, ports.in_use))
        )
        if self._run(create_command(cfg, b, sched, kwokctl_config), b) != 0:
            raise _Unhealthy(str(self._failed("create")))
        self._after_kwokctl()
        try:
            return self._healthy_or_raise()
        except _Unhealthy:
            if not self._transient_exits():
                raise
            return self._repair(b, _quiet)

    def _after_kwokctl(self) -> None:
        """Once kwokctl has created or started the cluster: wait for its API server, then
        start what kwokctl does not run (the kwok shards, Prometheus)."""
        wait = self.config.wait_seconds
        if not self.wait_ready(wait):
            raise self._unhealthy(self.status(), f"the API server was not ready in {wait}s")
        companions.start_shards(self.config)
        companions.start_prometheus(self.config)

    def _transient_exits(self) -> list[str]:
        """The components not running that exited for a reason starting again can cure."""
        logs = self.config.cluster_dir / "logs"
        return [
            c.name
            for c in self.status().components
            if c.pid is None and supervision.exited_transiently(logs / f"{c.name}.log")
        ]

    def _repair(self, b: bins.Binaries, notify: Callable[[str], None], attempts: int = 4) -> Status:
        """Start the components that are not running (kwokctl leaves running ones alone).

        A port can be busy for a moment (another cluster's kwokctl probes candidate ports by
        binding them), and on a loaded machine kube-controller-manager can give up on an API
        server still running its start-up hooks: a component that exited for such a
        transient reason is started again a few times before its failure counts. When the API
        server and etcd are both running, it must answer /healthz before the others start
        again: kube-controller-manager gives up on that check after 10 s, so on a loaded
        machine starting it sooner only repeats the exit. With either of them stopped,
        /healthz cannot pass until they start, so nothing waits for it."""
        cfg = self.config
        for attempt in range(1, attempts + 1):
            current = self.status()  # again: a concurrent `up` may have repaired it meanwhile
            if current.healthy:
                return current
            stopped = [c.name for c in current.components if c.pid is None]
            if stopped:
                notify(f"cluster {cfg.name!r}: starting {', '.join(stopped)} again")
                # kwokctl skips a component whose pid file names a process that exists, and
                # a killed one lingers as a zombie until init reaps it: drop its pid file.
                for name in stopped:
                    (cfg.cluster_dir / "pids" / f"{name}.pid").unlink(missing_ok=True)
                if not {"kube-apiserver", "etcd"} & set(stopped):
                    notify(f"cluster {cfg.name!r}: waiting for the API server's /healthz first")
                    self.wait_ready(cfg.wait_seconds, "/healthz")
                    self._release_kwok_leases(b, stopped, notify)
                self._run([str(b["kwokctl"]), "start", "cluster", "--name", cfg.name], b)
                self._after_kwokctl()
            try:
                return self._healthy_or_raise()
            except _Unhealthy:
                if not self._transient_exits() or attempt == attempts:
                    raise
                time.sleep(2.0 * attempt)
        raise AssertionError("unreachable")

    def _release_kwok_leases(
        self, b: bins.Binaries, stopped: list[str], notify: Callable[[str], None]
    ) -> None:
        """Delete the stopped kwok controllers' node leases (`kwok_leases`)."""
        dead = kwok_leases.identities(self.config.cluster_dir / "logs", stopped)
        if dead and (n := kwok_leases.release(b["kubectl"], self.config.kubeconfig, dead)):
            notify(f"cluster {self.config.name!r}: released {n} node leases of the stopped kwok")

    def _healthy_or_raise(self, timeout: float = 90.0) -> Status:
        """Wait until every component is healthy; a component that is not running a few
        seconds after its start has exited, and will not become healthy by waiting."""
        start = time.monotonic()
        while True:
            status = self.status()
            if status.healthy:
                return status
            waited = time.monotonic() - start
            if waited > timeout or (waited > 5 and any(c.pid is None for c in status.components)):
                raise self._unhealthy(status)
            time.sleep(0.5)

    def _unhealthy(self, status: Status, why: str = "") -> _Unhealthy:
        cfg = self.config
        logs = cfg.cluster_dir / "logs"
        parts = [why] if why else []
        for c in status.components:
            if c.pid is None:
                parts.append(
                    f"{c.name} is not running ({supervision.exit_reason(logs / f'{c.name}.log')})"
                )
            elif c.problem:
                parts.append(f"{c.name} {c.problem}")
        detail = "; ".join(parts) or status.problems() or "not healthy"
        return _Unhealthy(f"cluster {cfg.name!r} is not healthy: {detail}")

    def _stop(self, b: bins.Binaries) -> None:
        """Stop every component (kwokctl's, the shard controllers, Prometheus), keeping the
        files."""
        companions.stop_shards(self.config)
        companions.stop_prometheus(self.config)
        self._run([str(b["kwokctl"]), "stop", "cluster", "--name", self.config.name], b)

    def _recovery(self) -> str:
        return f"to recover run `testbed --name {self.config.name} down`, then `up` again"

    @contextlib.contextmanager
    def _cluster_lock(self, notify: Callable[[str], None]) -> Iterator[None]:
        cfg = self.config
        try:
            with locks.held(
                cfg.home / f"{cfg.name}.lock",
                holder=f"testbed up/down of cluster {cfg.name!r}",
                # A first `up` may be building the binaries for minutes meanwhile.
                timeout=1800,
                on_wait=lambda who: notify(f"waiting for {who} to finish"),
            ):
                yield
        except locks.LockTimeout as e:
            raise ClusterError(str(e)) from None

    @contextlib.contextmanager
    def _start_lock(self, notify: Callable[[str], None]) -> Iterator[None]:
        try:
            with locks.held(
                locks.machine_lock_path(),
                holder=f"testbed up of cluster {self.config.name!r}",
                timeout=900,
                on_wait=lambda who: notify(
                    f"waiting for {who} to finish starting its cluster (start-ups take turns)"
                ),
            ):
                yield
        except locks.LockTimeout as e:
            raise ClusterError(str(e)) from None

    def users(self) -> list[str]:
        """Who still uses this cluster (live experiments, test sessions, loadgen runs)."""
        cfg = self.config
        try:
            kubectl: Path | None = self.binaries()["kubectl"]
        except bins.BinariesError:
            kubectl = None
        return in_use.users(cfg.home, cfg.name, cfg.kubeconfig, kubectl)

    def down(self, *, force: bool = False) -> bool:
        """Delete the cluster and everything kwokctl made for it; False if there was none.
        Raises ClusterError, naming them, if others still use it (unless `force`)."""
        cfg = self.config
        if not cfg.cluster_dir.exists():
            return False
        with self._cluster_lock(_quiet):
            if not cfg.cluster_dir.exists():  # a concurrent `down` did it
                return False
            if not force and (users := self.users()):
                raise ClusterError(
                    f"cluster {cfg.name!r} is in use by {'; '.join(users)}; "
                    f"`testbed --name {cfg.name} down --force` deletes it anyway"
                )
            b = self.binaries()
            companions.stop_shards(self.config)
            companions.stop_prometheus(self.config)
            if self._run([str(b["kwokctl"]), "delete", "cluster", "--name", cfg.name], b) != 0:
                raise self._failed("delete")
            shutil.rmtree(cfg.cluster_dir, ignore_errors=True)
            ports.release(cfg.cluster_dir)
            holds.release_all(cfg.home, cfg.name)
            for leftover in (
                cfg.home / f"{cfg.name}-scheduler.yaml",
                cfg.home / f"{cfg.name}-kwokctl.yaml",
            ):
                leftover.unlink(missing_ok=True)
        return True

    def component_flag(self, name: str, flag: str) -> str | None:
        """The value of `--flag=value` on a running component's command line."""
        pid = supervision.read_pid(self.config.cluster_dir / "pids" / f"{name}.pid")
        if pid is None:
            return None
        argv = supervision.argv(pid)
        prefix = f"--{flag}="
        return next((a.removeprefix(prefix) for a in argv if a.startswith(prefix)), None)

    def restart_component(
        self, name: str, *, down_seconds: float = 0.0, grace_seconds: float = 5.0
    ) -> int:
        """Stop one component (SIGTERM, SIGKILL after `grace_seconds`) and start it again.

        For fault tests: the process is re-executed as kwokctl started it (arguments,
        environment, working directory, log file); returns the new pid. A start that exits at
        once for a transient reason (its port bound for a moment by another cluster's kwokctl
        probing candidate ports) is tried again a few times.
        """
        known = self._component_names()
        if name not in known:
            raise ClusterError(f"unknown component {name!r}; one of {', '.join(known)}")
        pid_file = self.config.cluster_dir / "pids" / f"{name}.pid"
        pid = supervision.read_pid(pid_file)
        if pid is None or supervision.rss_bytes(pid) is None:
            raise ClusterError(f"{name} is not running")
        launch = supervision.launch_of(pid)
        supervision.stop([pid], grace_seconds=grace_seconds)
        supervision.wait_exited(pid)
        time.sleep(down_seconds)
        log = self.config.cluster_dir / "logs" / f"{name}.log"
        attempts = 3
        for attempt in range(1, attempts + 1):
            proc = supervision.start_detached(launch.argv, log=log, cwd=launch.cwd, env=launch.env)
            pid_file.write_text(str(proc.pid))
            try:
                proc.wait(timeout=2.0)  # a failed bind ends the process within milliseconds
            except subprocess.TimeoutExpired:
                break  # running
            if attempt == attempts or not supervision.exited_transiently(log):
                break  # exited: the caller's health checks say why
            time.sleep(attempt)
        return proc.pid

    def kwok_shards(self) -> int:
        """How many kwok controllers share this cluster's nodes (1 if it does not exist)."""
        base = kwok_shards.default_controller(self.config.cluster_dir)
        return kwok_shards.shards_of(base.args) if base else 1

    def _own(self, pid_file: Path) -> int | None:
        return companions.own_pid(self.config.cluster_dir, pid_file)

    def _component_names(self) -> list[str]:
        shards = [kwok_shards.shard_name(i) for i in range(1, self.kwok_shards())]
        extra = [prometheus.COMPONENT] if self.config.prometheus.configured() else []
        return [*COMPONENTS, *shards, *extra]

    # -- helpers -------------------------------------------------------------------------

    def _run(self, cmd: list[str], b: bins.Binaries) -> int:
        cfg = self.config
        cfg.home.mkdir(parents=True, exist_ok=True)
        with cfg.log_file.open("a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.run(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=description.kwokctl_env(cfg, b),
                check=False,
            )
        return proc.returncode

    def _failed(self, verb: str) -> ClusterError:
        log = self.config.log_file
        return ClusterError(
            f"kwokctl could not {verb} the cluster: {self._last_log_line()} (log: {log})"
        )

    def _last_log_line(self) -> str:
        return supervision.last_line(self.config.log_file)

    def _ready(self, path: str = "/readyz") -> bool:
        """The API server answers `path` (/readyz, /healthz) "ok" with the cluster's kubeconfig
        credentials."""
        try:
            b = self.binaries()
        except bins.BinariesError:
            return False
        proc = subprocess.run(
            [
                str(b["kubectl"]),
                "--kubeconfig",
                str(self.config.kubeconfig),
                "get",
                "--raw",
                path,
                "--request-timeout=5s",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.returncode == 0 and proc.stdout.strip() == "ok"

    def wait_ready(self, seconds: int, path: str = "/readyz") -> bool:
        """Wait (at most `seconds`) until the API server answers `path`; False if it did not."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._ready(path):
                return True
            time.sleep(0.5)
        return False

    def _components(self, ready: bool) -> list[ComponentState]:
        pids_dir = self.config.cluster_dir / "pids"
        etcd_port: int | None = None
        out = []
        for name in self._component_names():
            pid = self._own(pids_dir / f"{name}.pid")
            rss = supervision.rss_bytes(pid) if pid else None
            if pid is None or rss is None:
                out.append(ComponentState(name, None, None, "not running"))
                continue
            argv = supervision.argv(pid)
            problem = None
            where = health.endpoint(name, argv)
            if where is None:
                problem = "has no port on its command line to check"
            elif where.port not in health.listening_ports(pid):
                taken = "" if not ports.in_use(where.port) else ", another process has it"
                problem = f"does not listen on its port {where.port}{taken}"
            elif name == "kube-apiserver":
                problem = None if ready else "is not ready (/readyz)"
                etcd = health.flags(argv).get("etcd-servers", "")
                if etcd_port is not None and f":{etcd_port}" not in etcd:
                    problem = f"uses etcd at {etcd}, not its own on port {etcd_port}"
            else:
                problem = health.probe(where.url)
            if name == "etcd" and where is not None:
                etcd_port = where.port
            out.append(ComponentState(name, pid, rss, problem))
        return out
