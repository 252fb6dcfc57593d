"""`testbed up | down | status`: the embedded local control plane."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed.cluster import binaries as bins
from testbed.cluster import local

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="testbed",
        description=(
            "Run the dra-testbed local Kubernetes control plane (etcd, kube-apiserver, "
            "kube-controller-manager, kube-scheduler with the topology extender, kwok) on "
            "127.0.0.1, built from pinned Go modules."
        ),
        epilog="State lives in $DRA_TESTBED_HOME (default ~/.local/state/dra-testbed); "
        "DRA_TESTBED_BIN_DIR points at prebuilt binaries instead of building them.",
    )
    p.add_argument("--name", default=local.DEFAULT_NAME, help="cluster name (default %(default)s)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="build or reuse the binaries and start the cluster")
    up.add_argument(
        "--apiserver-port",
        type=int,
        default=0,
        metavar="PORT",
        help="loopback port for kube-apiserver (default: a free port)",
    )
    up.add_argument(
        "--no-extender",
        action="store_true",
        help="run kube-scheduler without the extender entry (for A/B comparisons)",
    )
    up.add_argument(
        "--scheduler-config",
        type=Path,
        metavar="FILE",
        help="KubeSchedulerConfiguration to use (default manifests/scheduler/...)",
    )
    up.add_argument(
        "--no-build",
        action="store_true",
        help="fail instead of building missing binaries",
    )
    sub.add_parser("down", help="stop the cluster and delete everything it made")
    sub.add_parser("status", help="show whether the cluster runs, its kubeconfig and components")
    return p


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if getattr(args, "apiserver_port", 0) and not 0 < args.apiserver_port < 65536:
        _fail(EXIT_USAGE, f"--apiserver-port {args.apiserver_port} is not a TCP port")
    config = local.ClusterConfig(
        name=args.name,
        apiserver_port=getattr(args, "apiserver_port", 0),
        extender=not getattr(args, "no_extender", False),
        scheduler_config=getattr(args, "scheduler_config", None),
    )
    cluster = local.LocalCluster(config)
    try:
        code = {"up": _up, "down": _down, "status": _status}[args.command](cluster, args)
    except (local.ClusterError, bins.BinariesError, FileNotFoundError) as e:
        _fail(EXIT_RUNTIME, str(e))
    except KeyboardInterrupt:
        _fail(130, "interrupted")
    sys.exit(code)


def _up(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    if args.scheduler_config and not args.scheduler_config.is_file():
        _fail(EXIT_USAGE, f"--scheduler-config {args.scheduler_config} does not exist")
    status, changed = cluster.up(build=not args.no_build)
    if not changed:
        print(f"cluster {cluster.config.name!r} is already running at {status.server}")
    else:
        print(f"cluster {cluster.config.name!r} is up at {status.server}")
    _print_usage(status)
    return EXIT_OK


def _down(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    if cluster.down():
        print(f"cluster {cluster.config.name!r} deleted")
    else:
        print(f"cluster {cluster.config.name!r} does not exist; nothing to do")
    return EXIT_OK


def _status(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    status = cluster.status()
    if not status.exists:
        print(f"cluster {cluster.config.name!r} does not exist (run: testbed up)")
        return EXIT_RUNTIME
    state = "running" if status.ready else "not ready"
    print(f"cluster {cluster.config.name!r}: {state} at {status.server}")
    print(f"kubeconfig: {status.kubeconfig}")
    for c in status.components:
        rss = f"{c.rss_bytes / 2**20:.0f} MiB" if c.rss_bytes is not None else "-"
        pid = str(c.pid) if c.pid else "not running"
        print(f"  {c.name:<24} pid {pid:<12} rss {rss}")
    return EXIT_OK if status.ready else EXIT_RUNTIME


def _print_usage(status: local.Status) -> None:
    print(f"kubeconfig: {status.kubeconfig}")
    print("use it with:")
    print(f"  export KUBECONFIG={status.kubeconfig}")
    print("  kubectl get nodes   # or: fleet apply --profile dgx-h100 --nodes 100")


def _fail(code: int, message: str) -> None:
    print(f"testbed: error: {message}", file=sys.stderr)
    sys.exit(code)
