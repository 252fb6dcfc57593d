"""`testbed up|down|status`: the local control plane on loopback, run by kwokctl.

Describe first, execute second (as kwokctl does): `create_command()` is a pure description of
the kwokctl call; `LocalCluster` runs it and inspects the result.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed import vocab
from testbed.cluster import binaries as bins
from testbed.cluster import paths

DEFAULT_NAME = "dra-testbed"
COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
)


class ClusterError(RuntimeError):
    """A one-line, user-facing reason the cluster could not be managed."""


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    name: str = DEFAULT_NAME
    """kwokctl cluster name; several testbeds can run side by side under different names."""
    home: Path = field(default_factory=paths.state_home)
    """State directory; kwokctl's work dir is `<home>/kwok`."""
    apiserver_port: int = 0
    """Loopback port of kube-apiserver; 0 lets kwokctl pick a free one."""
    extender: bool = True
    """Keep the extender entry of the scheduler configuration (False: plain kube-scheduler)."""
    extender_port: int = vocab.EXTENDER_DEFAULT_PORT
    """Loopback port the scheduler calls the extender on; distinct per side-by-side testbed."""
    scheduler_config: Path | None = None
    """KubeSchedulerConfiguration; default manifests/scheduler/kube-scheduler-config.yaml."""
    stages: Path | None = None
    """kwok Stages; default manifests/kwok/stages.yaml."""
    wait_seconds: int = 180
    """How long kwokctl may wait for the components to become ready."""

    @property
    def workdir(self) -> Path:
        return self.home / "kwok"

    @property
    def cluster_dir(self) -> Path:
        return self.workdir / "clusters" / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.cluster_dir / "kubeconfig.yaml"

    @property
    def log_file(self) -> Path:
        return self.home / f"{self.name}-kwokctl.log"


def scheduler_config_text(
    source: Path, *, extender: bool, extender_port: int = vocab.EXTENDER_DEFAULT_PORT
) -> str:
    """The scheduler configuration to run: without its extenders (A/B runs), or with the
    loopback extender called on `extender_port`."""
    doc = yaml.safe_load(source.read_text())
    if not extender:
        doc.pop("extenders", None)
    for entry in doc.get("extenders") or []:
        url = entry.get("urlPrefix", "")
        loopback = f"127.0.0.1:{vocab.EXTENDER_DEFAULT_PORT}"
        if loopback in url:
            entry["urlPrefix"] = url.replace(loopback, f"127.0.0.1:{extender_port}")
    return yaml.safe_dump(doc, sort_keys=False)


def create_command(config: ClusterConfig, b: bins.Binaries, scheduler_config: Path) -> list[str]:
    """The kwokctl call that creates the cluster (pure)."""
    kwok_dir = paths.manifests_dir() / "kwok"
    stages = config.stages or kwok_dir / "stages.yaml"
    cmd = [
        str(b["kwokctl"]),
        "create",
        "cluster",
        "--name",
        config.name,
        "--runtime",
        "binary",
        "--kube-apiserver-binary",
        str(b["kube-apiserver"]),
        "--kube-controller-manager-binary",
        str(b["kube-controller-manager"]),
        "--kube-scheduler-binary",
        str(b["kube-scheduler"]),
        "--etcd-binary",
        str(b["etcd"]),
        "--kwok-controller-binary",
        str(b["kwok"]),
        "--kube-scheduler-config",
        str(scheduler_config),
        "--config",
        str(kwok_dir / "kwokctl.yaml"),  # loopback only
        "--config",
        str(stages),
        # API server without inflight limits or APF, and client QPS 5000/burst 10000 for
        # kube-controller-manager and kwok (the CL2 DRA runs needed kcm >= 200/400).
        "--disable-qps-limits",
        # Leave the user's ~/.kube/config alone; ours is written in the cluster dir.
        "--kubeconfig",
        "",
        "--wait",
        f"{config.wait_seconds}s",
    ]
    if config.apiserver_port:
        cmd += ["--kube-apiserver-port", str(config.apiserver_port)]
    return cmd


def _env(config: ClusterConfig, b: bins.Binaries) -> dict[str, str]:
    env = dict(os.environ)
    env["KWOK_WORKDIR"] = str(config.workdir)
    env["KWOK_KUBECTL_BINARY"] = str(b["kubectl"])
    return env


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


@dataclass(frozen=True)
class ComponentState:
    name: str
    pid: int | None
    rss_bytes: int | None


@dataclass(frozen=True)
class Status:
    exists: bool
    ready: bool
    server: str | None
    kubeconfig: Path
    components: list[ComponentState]


@dataclass
class LocalCluster:
    config: ClusterConfig = field(default_factory=ClusterConfig)
    _found: bins.Binaries | None = field(default=None, init=False, repr=False)

    def _binaries(self, *, build: bool = False) -> bins.Binaries:
        """The binaries, looked up (or built) once: readiness polls ask twice a second."""
        if self._found is None:
            self._found = bins.ensure(build=build)
        return self._found

    def status(self) -> Status:
        cfg = self.config
        exists = cfg.kubeconfig.is_file()
        server = _server_of(cfg.kubeconfig) if exists else None
        ready = exists and self._ready()
        return Status(exists, ready, server, cfg.kubeconfig, self._components() if exists else [])

    def up(self, *, build: bool = True) -> tuple[Status, bool]:
        """Create (or restart) the cluster; returns its status and whether anything changed."""
        cfg = self.config
        current = self.status()
        if current.ready:
            return current, False
        b = self._binaries(build=build)
        cfg.home.mkdir(parents=True, exist_ok=True)
        if current.exists:
            # Left over from a reboot or a crash: try to start it again, else recreate.
            started = self._run([str(b["kwokctl"]), "start", "cluster", "--name", cfg.name], b)
            if started == 0 and self._wait_ready(cfg.wait_seconds):
                return self.status(), True
            self._run([str(b["kwokctl"]), "delete", "cluster", "--name", cfg.name], b)
        if cfg.apiserver_port and port_in_use(cfg.apiserver_port):
            raise ClusterError(f"port {cfg.apiserver_port} on 127.0.0.1 is already in use")
        source = (
            cfg.scheduler_config
            or paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
        )
        sched = cfg.home / f"{cfg.name}-scheduler.yaml"
        sched.write_text(
            scheduler_config_text(source, extender=cfg.extender, extender_port=cfg.extender_port)
        )
        if self._run(create_command(cfg, b, sched), b) != 0:
            raise self._failed("create")
        if not self._wait_ready(cfg.wait_seconds):
            raise ClusterError(
                f"the API server did not become ready in {cfg.wait_seconds}s (log: {cfg.log_file})"
            )
        return self.status(), True

    def down(self) -> bool:
        """Delete the cluster and everything kwokctl made for it; False if there was none."""
        cfg = self.config
        if not cfg.cluster_dir.exists():
            return False
        b = self._binaries()
        if self._run([str(b["kwokctl"]), "delete", "cluster", "--name", cfg.name], b) != 0:
            raise self._failed("delete")
        shutil.rmtree(cfg.cluster_dir, ignore_errors=True)
        for leftover in (cfg.home / f"{cfg.name}-scheduler.yaml",):
            leftover.unlink(missing_ok=True)
        return True

    def component_flag(self, name: str, flag: str) -> str | None:
        """The value of `--flag=value` on a running component's command line."""
        pid = _read_pid(self.config.cluster_dir / "pids" / f"{name}.pid")
        if pid is None:
            return None
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            return None
        prefix = f"--{flag}="
        return next((a.removeprefix(prefix) for a in argv if a.startswith(prefix)), None)

    def restart_component(
        self, name: str, *, down_seconds: float = 0.0, grace_seconds: float = 5.0
    ) -> int:
        """Stop one component (SIGTERM, SIGKILL after `grace_seconds`) and start it again.

        For fault tests: the process is re-executed as kwokctl started it (arguments,
        environment, working directory, log file); returns the new pid.
        """
        if name not in COMPONENTS:
            raise ClusterError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
        pid_file = self.config.cluster_dir / "pids" / f"{name}.pid"
        pid = _read_pid(pid_file)
        if pid is None or _rss_bytes(pid) is None:
            raise ClusterError(f"{name} is not running")
        proc_dir = Path(f"/proc/{pid}")
        argv = [a.decode() for a in proc_dir.joinpath("cmdline").read_bytes().split(b"\0") if a]
        env = dict(
            kv.decode().split("=", 1)
            for kv in proc_dir.joinpath("environ").read_bytes().split(b"\0")
            if b"=" in kv
        )
        cwd = os.readlink(proc_dir / "cwd")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while _rss_bytes(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if _rss_bytes(pid) is not None:
            os.kill(pid, signal.SIGKILL)
        time.sleep(down_seconds)
        with (self.config.cluster_dir / "logs" / f"{name}.log").open("a") as log:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        pid_file.write_text(str(proc.pid))
        return proc.pid

    # -- helpers -------------------------------------------------------------------------

    def _run(self, cmd: list[str], b: bins.Binaries) -> int:
        cfg = self.config
        cfg.home.mkdir(parents=True, exist_ok=True)
        with cfg.log_file.open("a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.run(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=_env(cfg, b), check=False
            )
        return proc.returncode

    def _failed(self, verb: str) -> ClusterError:
        log = self.config.log_file
        return ClusterError(
            f"kwokctl could not {verb} the cluster: {self._last_log_line()} (log: {log})"
        )

    def _last_log_line(self) -> str:
        try:
            lines = [ln for ln in self.config.log_file.read_text().splitlines() if ln.strip()]
        except OSError:
            return "no output"
        return lines[-1][-300:] if lines else "no output"

    def _ready(self) -> bool:
        """The API server answers /readyz with the cluster's kubeconfig credentials."""
        try:
            b = self._binaries()
        except bins.BinariesError:
            return False
        proc = subprocess.run(
            [
                str(b["kubectl"]),
                "--kubeconfig",
                str(self.config.kubeconfig),
                "get",
                "--raw",
                "/readyz",
                "--request-timeout=5s",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.returncode == 0 and proc.stdout.strip() == "ok"

    def _wait_ready(self, seconds: int) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._ready():
                return True
            time.sleep(0.5)
        return False

    def _components(self) -> list[ComponentState]:
        pids_dir = self.config.cluster_dir / "pids"
        out = []
        for name in COMPONENTS:
            pid = _read_pid(pids_dir / f"{name}.pid")
            rss = _rss_bytes(pid) if pid else None
            out.append(ComponentState(name, pid if rss is not None else None, rss))
        return out


def _server_of(kubeconfig: Path) -> str | None:
    try:
        doc = yaml.safe_load(kubeconfig.read_text())
        return str(doc["clusters"][0]["cluster"]["server"])
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError):
        return None


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
