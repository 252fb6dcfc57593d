"""What a local cluster is, before anything runs: its configuration, the kwokctl call that
creates it (a pure description, as kwokctl's components are described before a runtime
executes them) and its status as plain data. `local.LocalCluster` executes and inspects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed import vocab
from testbed.cluster import binaries as bins
from testbed.cluster import feature_gates as fg
from testbed.cluster import kwok_shards, paths, prometheus

DEFAULT_NAME = "dra-testbed"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
MAX_KWOK_SHARDS = 16
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
    kwok_shards: int | None = None
    """kwok controllers sharing the nodes by their `testbed.dra.io/kwok-shard` label (see
    `kwok_shards`); None: 1 for a new cluster, what it was created with for an existing one."""
    kubernetes: str | None = None
    """Kubernetes release (`1.NN`, one with a pinned module); None: the default release for
    a new cluster, the one it runs for an existing one."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    """Gates set on every component on top of `feature_gates.NEEDED` (which are always on);
    fixed when the cluster is created."""
    prometheus_port: int | None = None
    """Loopback port of a Prometheus scraping the cluster (see `prometheus`); None: keep
    whatever the cluster has (none for a new one). Once added it stays until `down`."""
    fleet_port: int = vocab.FLEET_SERVICE_DEFAULT_PORT
    """Loopback port the Prometheus scrapes the fleet service on (`fleet serve --port`)."""

    def __post_init__(self) -> None:
        # The name becomes a directory that `down` deletes: never a path, never "..".
        if not _NAME.fullmatch(self.name):
            raise ClusterError(
                f"cluster name {self.name!r} is not a DNS label (lowercase letters, digits "
                "and '-', at most 63)"
            )

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
    def prometheus(self) -> prometheus.Layout:
        return prometheus.Layout(self.cluster_dir / "prometheus")

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


def kwokctl_config_text(chosen_ports: Mapping[str, int]) -> str:
    """manifests/kwok/kwokctl.yaml with the cluster's reserved ports (see `ports`; pure)."""
    doc = yaml.safe_load((paths.manifests_dir() / "kwok" / "kwokctl.yaml").read_text())
    doc["options"] = {**doc.get("options", {}), **chosen_ports}
    return yaml.safe_dump(doc, sort_keys=False)


def create_command(
    config: ClusterConfig,
    b: bins.Binaries,
    scheduler_config: Path,
    kwokctl_config: Path | None = None,
) -> list[str]:
    """The kwokctl call that creates the cluster (pure). `kwokctl_config` carries the ports
    `up` reserved (default: manifests/kwok/kwokctl.yaml, kwokctl picks them)."""
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
        str(kwokctl_config or kwok_dir / "kwokctl.yaml"),  # loopback only
        "--config",
        str(kwok_dir / "kwok-controller.yaml"),  # kwok's worker counts
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
    # kwokctl passes these to kube-apiserver, kube-controller-manager and kube-scheduler.
    release = config.kubernetes or bins.DEFAULT_RELEASE
    gates = fg.for_release(release, config.feature_gates)
    cmd += ["--kube-feature-gates", fg.flag_value(gates)]
    if apis := fg.runtime_config(release, gates):
        cmd += ["--kube-runtime-config", ",".join(apis)]
    extra = [
        # No TTL controller: it patches every node once, and all of them again each time the
        # node count crosses 100, 500, 1000 and 2000 (thousands of writes while a fleet grows);
        # its annotation only tunes a real kubelet's ConfigMap cache, and kwok has no kubelet.
        "kube-controller-manager=controllers=*,-ttl",
        # One kcm, nothing to elect; and with election an API server outage past the lease's
        # renew deadline (10 s: a restart, or a stall under load) makes kcm exit for good, as
        # no kubelet runs it here to bring it back.
        "kube-controller-manager=leader-elect=false",
        # Let the scheduler check client certificates and ask the API server, so the admin
        # kubeconfig may read /debug/pprof (kwokctl leaves it anonymous: 403), as the second
        # scheduler does.
        f"kube-scheduler=authentication-kubeconfig={config.kubeconfig}",
        f"kube-scheduler=authorization-kubeconfig={config.kubeconfig}",
        *kwok_shards.kwokctl_extra_args(config.kwok_shards or 1),
    ]
    for value in _first_of_each_component_first(extra):
        cmd += ["--extra-args", value]
    return cmd


def _first_of_each_component_first(extra_args: list[str]) -> list[str]:
    """`--extra-args` values reordered so every component's first value comes before any
    component's second (order within a component kept).

    kwokctl v0.8.0 files a component's later values under the patch at the *flag position* of
    its first value, which is only its patch's index while all first values lead; otherwise
    `kwokctl create cluster` panics (index out of range).
    """
    by_component: dict[str, list[str]] = {}
    for value in extra_args:
        by_component.setdefault(value.split("=", 1)[0], []).append(value)
    rounds = max((len(v) for v in by_component.values()), default=0)
    return [vs[i] for i in range(rounds) for vs in by_component.values() if i < len(vs)]


def kwokctl_env(config: ClusterConfig, b: bins.Binaries) -> dict[str, str]:
    """The environment kwokctl runs in: its work directory and kubectl are the cluster's."""
    env = dict(os.environ)
    env["KWOK_WORKDIR"] = str(config.workdir)
    env["KWOK_KUBECTL_BINARY"] = str(b["kubectl"])
    return env


@dataclass(frozen=True)
class ComponentState:
    name: str
    pid: int | None
    rss_bytes: int | None
    problem: str | None = None
    """Why it is not healthy (None: running, listening on its port and answering)."""

    @property
    def healthy(self) -> bool:
        return self.pid is not None and self.problem is None


@dataclass(frozen=True)
class Status:
    exists: bool
    ready: bool
    """The API server answers /readyz."""
    server: str | None
    kubeconfig: Path
    components: list[ComponentState]
    prometheus: str | None = None
    """Base URL of the cluster's Prometheus (None: it has none)."""
    release: str | None = None
    """The Kubernetes release it was created with (None: not from the binary cache)."""
    preview: tuple[str, ...] = ()
    """What a preview release runs instead of the release (`Binaries.preview`)."""
    skew: str | None = None
    """Why its kube-scheduler is outside the supported version skew (`versions.skew`)."""

    @property
    def healthy(self) -> bool:
        """Every component runs, listens on its own port and answers its health check."""
        return self.exists and self.ready and all(c.healthy for c in self.components)

    def problems(self) -> str:
        """What is wrong, one clause per unhealthy component (empty if nothing)."""
        out = [f"{c.name} {c.problem or 'not running'}" for c in self.components if not c.healthy]
        if self.exists and not self.ready and not out:
            out.append("kube-apiserver is not ready")
        return "; ".join(out)
