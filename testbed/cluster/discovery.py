"""Which local cluster an API server address belongs to, and where its components serve
/metrics: so `loadgen` pointed at a local cluster (by any kubeconfig) samples kube-scheduler
and profiles it without being told where it listens.

    discovery.endpoints("https://127.0.0.1:34567")
    # {"apiserver": "kube:/metrics", "scheduler": "https://127.0.0.1:40123/metrics",
    #  "controller-manager": "https://127.0.0.1:40125/metrics",
    #  "etcd": "http://127.0.0.1:40126/metrics", "kwok": "http://127.0.0.1:40121/metrics",
    #  "extender": "http://127.0.0.1:8888/metrics"}

Read-only: it looks at the state directory's kubeconfigs and the components' command lines.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import yaml

from testbed.cluster import health, paths, supervision


def server_of(kubeconfig: Path) -> str | None:
    """The API server address of a kubeconfig's first cluster (None: unreadable)."""
    try:
        doc = yaml.safe_load(kubeconfig.read_text())
        return str(doc["clusters"][0]["cluster"]["server"]).rstrip("/")
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError):
        return None


def cluster_dir_of(server: str, home: Path | None = None) -> Path | None:
    """The directory of the local cluster whose API server is `server`; None: no local
    cluster of this machine's state directory serves there."""
    clusters = (home or paths.state_home()) / "kwok" / "clusters"
    try:
        candidates = sorted(clusters.iterdir())
    except OSError:
        return None
    wanted = server.rstrip("/")
    return next((d for d in candidates if server_of(d / "kubeconfig.yaml") == wanted), None)


def _flag(cluster_dir: Path, component: str, flag: str) -> str | None:
    pid = supervision.read_pid(cluster_dir / "pids" / f"{component}.pid")
    if pid is None:
        return None
    prefix = f"--{flag}="
    return next(
        (a.removeprefix(prefix) for a in supervision.argv(pid) if a.startswith(prefix)), None
    )


SCRAPED = {
    "scheduler": "kube-scheduler",
    "controller-manager": "kube-controller-manager",
    "etcd": "etcd",
    "kwok": "kwok-controller",
}
"""loadgen's name -> the component's: the whole control plane beside the API server, so a
restart of any of them is a fact of the run."""


def _metrics_url(cluster_dir: Path, component: str) -> str | None:
    """/metrics beside where the running `component` serves its health (`health.endpoint`)."""
    pid = supervision.read_pid(cluster_dir / "pids" / f"{component}.pid")
    where = health.endpoint(component, supervision.argv(pid)) if pid is not None else None
    if where is None:
        return None
    parts = urlsplit(where.url)
    return f"{parts.scheme}://{parts.netloc}/metrics"


def _extender_url(scheduler_config: Path) -> str | None:
    try:
        doc = yaml.safe_load(scheduler_config.read_text())
        prefix = str(doc["extenders"][0]["urlPrefix"]).rstrip("/")
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError):
        return None
    return prefix + "/metrics"


def endpoints(server: str, home: Path | None = None) -> dict[str, str]:
    """Component name -> /metrics URL as loadgen's `--scrape` takes them, for the local
    cluster at `server`; {} when `server` is no local cluster's."""
    cluster_dir = cluster_dir_of(server, home)
    if cluster_dir is None:
        return {}
    out = {"apiserver": "kube:/metrics"}
    for name, component in SCRAPED.items():
        if url := _metrics_url(cluster_dir, component):
            out[name] = url
    config = _flag(cluster_dir, "kube-scheduler", "config")
    extender = _extender_url(Path(config)) if config else None
    if extender:
        out["extender"] = extender
    return out
