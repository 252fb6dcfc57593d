"""The processes a local cluster runs beside kwokctl's components, which kwokctl knows nothing
of: the extra kwok controllers that share the nodes (`kwok_shards`) and the cluster's
Prometheus (`prometheus`). Started detached, like kwokctl's, with their pid files and logs in
the cluster's directory; a pid file counts only while it names one of this cluster's
processes (not a reused pid).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from testbed.cluster import kwok_shards, ports, prometheus, supervision
from testbed.cluster.description import ClusterConfig, ClusterError


def own_pid(cluster_dir: Path, pid_file: Path) -> int | None:
    """The live process in `pid_file` if it is one of the cluster's in `cluster_dir`."""
    pid = supervision.read_pid(pid_file)
    if pid is None or supervision.rss_bytes(pid) is None:
        return None
    cmdline = "\0".join(supervision.argv(pid))
    return pid if str(cluster_dir) in cmdline else None


# -- kwok shard controllers --------------------------------------------------------------------


def start_shards(cfg: ClusterConfig, timeout: float = 60.0) -> int:
    """Start the extra kwok controllers that are not running; returns how many started."""
    base = kwok_shards.default_controller(cfg.cluster_dir)
    if base is None:
        return 0
    pids_dir, logs_dir = cfg.cluster_dir / "pids", cfg.cluster_dir / "logs"
    pids_dir.mkdir(parents=True, exist_ok=True)
    logs_dir.mkdir(parents=True, exist_ok=True)
    started: list[tuple[str, subprocess.Popen[bytes], int]] = []
    for shard in range(1, kwok_shards.shards_of(base.args)):
        name = kwok_shards.shard_name(shard)
        if own_pid(cfg.cluster_dir, pids_dir / f"{name}.pid") is not None:
            continue
        port = ports.free_port()
        proc = supervision.start_detached(
            kwok_shards.shard_argv(base, shard, port),
            log=logs_dir / f"{name}.log",
            cwd=base.work_dir,  # like kwokctl's: outlives `testbed up`
        )
        (pids_dir / f"{name}.pid").write_text(str(proc.pid))
        started.append((name, proc, port))
    deadline = time.monotonic() + timeout
    for name, proc, port in started:
        while not supervision.answers(f"http://127.0.0.1:{port}/healthz"):
            if proc.poll() is not None or time.monotonic() > deadline:
                log_path = logs_dir / f"{name}.log"
                raise ClusterError(
                    f"{name} did not become healthy: {supervision.last_line(log_path)} "
                    f"(log: {log_path})"
                )
            time.sleep(0.2)
    return len(started)


def stop_shards(cfg: ClusterConfig, grace_seconds: float = 5.0) -> None:
    """Stop every extra kwok controller of the cluster (SIGTERM, then SIGKILL)."""
    pids_dir = cfg.cluster_dir / "pids"
    pid_files = sorted(pids_dir.glob(f"{kwok_shards.SHARD_PREFIX}*.pid"))
    running = [pid for f in pid_files if (pid := own_pid(cfg.cluster_dir, f)) is not None]
    supervision.stop(running, grace_seconds=grace_seconds)
    for f in pid_files:
        f.unlink(missing_ok=True)


# -- Prometheus --------------------------------------------------------------------------------


def start_prometheus(cfg: ClusterConfig, timeout: float = 60.0) -> None:
    """Start the cluster's Prometheus if it has one and it is not running."""
    layout, port = cfg.prometheus, cfg.prometheus.port()
    pid_file = cfg.cluster_dir / "pids" / f"{prometheus.COMPONENT}.pid"
    if port is None or not layout.configured() or own_pid(cfg.cluster_dir, pid_file) is not None:
        return
    try:
        argv = prometheus.argv(prometheus.binary(), layout, port)
    except prometheus.PrometheusError as e:
        raise ClusterError(str(e)) from None
    log_path = cfg.cluster_dir / "logs" / f"{prometheus.COMPONENT}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    proc = supervision.start_detached(argv, log=log_path, cwd=layout.directory)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while not supervision.answers(f"{prometheus.url(port)}/-/ready"):
        if proc.poll() is not None or time.monotonic() > deadline:
            # A plain ClusterError: the control plane itself is fine and stays up.
            stop_prometheus(cfg)
            raise ClusterError(
                f"prometheus did not become ready: {supervision.exit_reason(log_path)} "
                f"(log: {log_path})"
            )
        time.sleep(0.2)


def stop_prometheus(cfg: ClusterConfig, grace_seconds: float = 10.0) -> None:
    pid_file = cfg.cluster_dir / "pids" / f"{prometheus.COMPONENT}.pid"
    pid = own_pid(cfg.cluster_dir, pid_file)
    if pid is not None:
        supervision.stop([pid], grace_seconds=grace_seconds)
    pid_file.unlink(missing_ok=True)
