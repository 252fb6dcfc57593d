"""`testbed up | down | status`: the embedded local control plane."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from testbed import vocab
from testbed.cluster import binaries as bins
from testbed.cluster import feature_gates as fg
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
    p.add_argument(
        "--extender-port",
        type=int,
        default=vocab.EXTENDER_DEFAULT_PORT,
        metavar="PORT",
        help="loopback port kube-scheduler calls the extender on, set when the cluster is "
        "created; give each side-by-side testbed its own (default %(default)s)",
    )
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
        "--kwok-shards",
        type=int,
        metavar="N",
        help="run N kwok controllers, each managing the nodes labelled "
        f"{vocab.LABEL_KWOK_SHARD}=<i> (a fleet's spec.kwokShards; unlabelled nodes go to the "
        "first); fixed when the cluster is created (default 1)",
    )
    up.add_argument(
        "--kubernetes",
        metavar="RELEASE",
        help="Kubernetes release to run, one with a pinned module in tools/k8s (e.g. 1.35; "
        f"default {bins.DEFAULT_RELEASE}); built once into the cache on first use; fixed "
        "when the cluster is created",
    )
    up.add_argument(
        "--feature-gates",
        metavar="A=true,B=false",
        help="feature gates for kube-apiserver, kube-controller-manager and kube-scheduler, "
        "on top of the DRA gates that are always on (e.g. DRADeviceTaintRules=true); fixed "
        "when the cluster is created",
    )
    up.add_argument(
        "--no-build",
        action="store_true",
        help="fail instead of building missing binaries",
    )
    demo = sub.add_parser(
        "demo",
        help="the main job: cluster, extender, fleet, workloads, side-by-side report",
        description=(
            "Bring the local cluster up (building binaries if needed), start the extender "
            "and a second plain scheduler, provision a mixed fleet, run each comparison's "
            "arms alternately on it (extender on/off, placement, fragmentation, DRA vs device "
            "plugin), print the side-by-side table and write demo.json and index.html."
        ),
    )
    demo.add_argument("--nodes", type=int, default=1000, help="fleet size (default %(default)s)")
    demo.add_argument(
        "--pods",
        type=int,
        default=1000,
        help="pods per arm of the throughput comparisons (default %(default)s)",
    )
    demo.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each comparison's pair, order alternating (default %(default)s)",
    )
    demo.add_argument(
        "--comparisons",
        default="extender,placement,fragmentation,dra",
        help="comma-separated, from %(default)s and the opt-in 'scale' (the same --pods on "
        "--nodes and on --scale-nodes nodes; e.g. --pods 10000 --comparisons scale) "
        "(default %(default)s)",
    )
    demo.add_argument(
        "--scale-nodes",
        type=int,
        metavar="N",
        help="fleet size of the scale comparison's large arm (default 5x --nodes)",
    )
    demo.add_argument(
        "--qps", type=float, default=100.0, help="pod creation rate (default %(default)s)"
    )
    demo.add_argument(
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="where reports go (default results/demo-<time>)",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the fleet and the cluster running afterwards",
    )
    sub.add_parser("down", help="stop the cluster and delete everything it made")
    sub.add_parser("status", help="show whether the cluster runs, its kubeconfig and components")
    return p


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if getattr(args, "apiserver_port", 0) and not 0 < args.apiserver_port < 65536:
        _fail(EXIT_USAGE, f"--apiserver-port {args.apiserver_port} is not a TCP port")
    if not 0 < args.extender_port < 65536:
        _fail(EXIT_USAGE, f"--extender-port {args.extender_port} is not a TCP port")
    shards = getattr(args, "kwok_shards", None)
    if shards is not None and not 1 <= shards <= local.MAX_KWOK_SHARDS:
        _fail(EXIT_USAGE, f"--kwok-shards {shards}: must be 1..{local.MAX_KWOK_SHARDS}")
    release = getattr(args, "kubernetes", None)
    try:
        if release is not None:
            release = bins.check_release(release)
        gates = fg.parse(getattr(args, "feature_gates", None) or "")
    except (bins.UnknownRelease, fg.GateError) as e:
        flag = "--kubernetes" if isinstance(e, bins.UnknownRelease) else "--feature-gates"
        _fail(EXIT_USAGE, f"{flag}: {e}")
    config = local.ClusterConfig(
        kubernetes=release,
        feature_gates=gates,
        name=args.name,
        apiserver_port=getattr(args, "apiserver_port", 0),
        extender=not getattr(args, "no_extender", False),
        extender_port=args.extender_port,
        scheduler_config=getattr(args, "scheduler_config", None),
        kwok_shards=shards,
    )
    cluster = local.LocalCluster(config)
    received = [signal.SIGINT]

    def terminated(signum: int, frame: object) -> None:
        # SIGTERM unwinds like Ctrl-C: the demo stops its children and tears down first.
        received[0] = signal.Signals(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    try:
        code = {"up": _up, "down": _down, "status": _status, "demo": _demo}[args.command](
            cluster, args
        )
    except BrokenPipeError:  # e.g. `testbed status | head -1`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + signal.SIGPIPE)
    except (local.ClusterError, bins.BinariesError, OSError) as e:
        _fail(EXIT_RUNTIME, str(e))
    except KeyboardInterrupt:
        _fail(128 + received[0], f"interrupted by {received[0].name}")
    sys.exit(code)


def _up(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    if args.scheduler_config and not args.scheduler_config.is_file():
        _fail(EXIT_USAGE, f"--scheduler-config {args.scheduler_config} does not exist")
    status, changed = cluster.up(build=not args.no_build, notify=_note)
    if not changed:
        print(f"cluster {cluster.config.name!r} is already running at {status.server}")
    else:
        print(f"cluster {cluster.config.name!r} is up at {status.server}, every component healthy")
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
    state = "running" if status.healthy else "not ready" if not status.ready else "degraded"
    print(f"cluster {cluster.config.name!r}: {state} at {status.server}")
    print(f"kubeconfig: {status.kubeconfig}")
    for c in status.components:
        rss = f"{c.rss_bytes / 2**20:.0f} MiB" if c.rss_bytes is not None else "-"
        pid = str(c.pid) if c.pid else "not running"
        health = "healthy" if c.healthy else (c.problem or "") if c.pid else ""
        print(f"  {c.name:<24} pid {pid:<12} rss {rss:<9} {health}")
    if not status.healthy:
        name = cluster.config.name
        print(
            f"to repair: testbed --name {name} up (starts what is not running); "
            f"if that fails: testbed --name {name} down, then up again"
        )
    return EXIT_OK if status.healthy else EXIT_RUNTIME


def _demo(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    from testbed import demo
    from testbed.cluster import processes
    from testbed.demo import plan

    if args.nodes < 10:
        _fail(EXIT_USAGE, f"--nodes {args.nodes}: the demo needs at least 10 nodes")
    if args.pods < 1 or args.repeat < 1 or args.qps <= 0:
        _fail(EXIT_USAGE, "--pods, --repeat and --qps must be positive")
    comparisons = tuple(c.strip() for c in args.comparisons.split(",") if c.strip())
    if not comparisons or not set(comparisons) <= set(plan.ALL_COMPARISONS):
        _fail(EXIT_USAGE, f"--comparisons takes a subset of {', '.join(plan.ALL_COMPARISONS)}")
    scale_nodes = args.scale_nodes if args.scale_nodes is not None else 5 * args.nodes
    if scale_nodes <= args.nodes:
        _fail(EXIT_USAGE, f"--scale-nodes {scale_nodes} must be larger than --nodes {args.nodes}")
    out = args.output_dir or Path("results") / time.strftime("demo-%Y%m%d-%H%M%S")
    config = demo.DemoConfig(
        nodes=args.nodes,
        workload=plan.Workload(
            pods=args.pods, repeat=args.repeat, comparisons=comparisons, scale_nodes=scale_nodes
        ),
        output_dir=out,
        keep=args.keep,
        qps=args.qps,
        cluster=cluster.config,
    )
    try:
        return demo.run(config, Console())
    except (demo.DemoError, processes.ProcessError) as e:
        _fail(EXIT_RUNTIME, str(e))
    return EXIT_RUNTIME


def _print_usage(status: local.Status) -> None:
    print(f"kubeconfig: {status.kubeconfig}")
    print("use it with:")
    print(f"  export KUBECONFIG={status.kubeconfig}")
    print("  kubectl get nodes   # or: fleet apply --profile dgx-h100 --nodes 100")


def _note(message: str) -> None:
    print(f"testbed: {message}", file=sys.stderr, flush=True)


def _fail(code: int, message: str) -> None:
    print(f"testbed: error: {message}", file=sys.stderr)
    sys.exit(code)
