"""`testbed up | down | status`: the embedded local control plane, and the commands that
applications above the floor add to `testbed` (`testbed demo`, from the `experiment` package).

The floor never imports an application: each registers its commands under the entry-point
group `testbed.commands` (pyproject.toml), and `testbed` loads them when it builds its parser.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from testbed import cliconv, vocab
from testbed.cluster import binaries as bins
from testbed.cluster import feature_gates as fg
from testbed.cluster import local

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = cliconv.EXIT_OK, cliconv.EXIT_FAILURE, cliconv.EXIT_USAGE
COMMANDS_GROUP = "testbed.commands"

Command = Callable[[local.LocalCluster, argparse.Namespace], int]
"""Runs one subcommand on the cluster `--name`/`--extender-port` describe; returns the exit code."""
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], Command]
"""An application's entry point: adds its subcommand's parser and returns what runs it."""


class UsageError(cliconv.UsageError):
    """Bad input to a command: exit 2 with the message, nothing changed."""


class CommandError(cliconv.Failure):
    """A command failed at run time: exit 1 with the message."""


def _application_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> dict[str, Command]:
    """The subcommands installed applications register (an application that fails to load is
    reported and skipped, so the floor's own commands always work)."""
    commands: dict[str, Command] = {}
    for entry in sorted(metadata.entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            register: Register = entry.load()
            commands[entry.name] = register(sub)
        except Exception as e:  # an application's bug must not take `testbed down` with it
            print(f"testbed: warning: command {entry.name!r} unavailable: {e}", file=sys.stderr)
    return commands


def parser() -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """The `testbed` command line, with the commands installed applications register (also
    parsed by the flags' fuzz test)."""
    p = cliconv.parser(
        prog="testbed",
        description=(
            "Run the dra-testbed local Kubernetes control plane (etcd, kube-apiserver, "
            "kube-controller-manager, kube-scheduler with the topology extender, kwok) on "
            "127.0.0.1, built from pinned Go modules."
        ),
        epilog="State lives in $DRA_TESTBED_HOME (default ~/.local/state/dra-testbed); "
        "DRA_TESTBED_BIN_DIR points at prebuilt binaries instead of building them.",
    )
    cliconv.add_version(p)
    cliconv.add_verbosity(p)
    p.add_argument("--name", default=local.DEFAULT_NAME, help="cluster name (default %(default)s)")
    p.add_argument(
        "--extender-port",
        type=cliconv.port,
        default=vocab.EXTENDER_DEFAULT_PORT,
        metavar="PORT",
        help="loopback port kube-scheduler calls the extender on, set when the cluster is "
        "created; give each side-by-side testbed its own (default %(default)s)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="build or reuse the binaries and start the cluster")
    up.add_argument(
        "--apiserver-port",
        type=cliconv.port,
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
        f"default {bins.DEFAULT_RELEASE}; 1.38-beta: the preview, 1.38.0-beta.0's "
        "kube-scheduler on 1.37's control plane, outside the supported version skew); built "
        "once into the cache on first use; fixed when the cluster is created",
    )
    up.add_argument(
        "--feature-gates",
        metavar="A=true,B=false",
        help="feature gates for kube-apiserver, kube-controller-manager and kube-scheduler, "
        "on top of the DRA gates that are always on (e.g. DRADeviceTaintRules=true); fixed "
        "when the cluster is created",
    )
    up.add_argument(
        "--prometheus-port",
        type=cliconv.port,
        metavar="PORT",
        help="also run a Prometheus (the `prometheus` on PATH, Debian's package) on this "
        "loopback port, scraping the control plane, kwok, the extender and the fleet service "
        "with the alert rules loaded; it stays until `down`",
    )
    up.add_argument(
        "--fleet-port",
        type=cliconv.port,
        default=vocab.FLEET_SERVICE_DEFAULT_PORT,
        metavar="PORT",
        help="loopback port that Prometheus scrapes the fleet service on (`fleet serve "
        "--port`; default %(default)s)",
    )
    up.add_argument(
        "--no-build",
        action="store_true",
        help="fail instead of building missing binaries",
    )
    down = sub.add_parser("down", help="stop the cluster and delete everything it made")
    down.add_argument(
        "--force",
        action="store_true",
        help="delete it even while live loadgen runs, experiments or test sessions use it",
    )
    status = sub.add_parser(
        "status", help="show whether the cluster runs, its kubeconfig and components"
    )
    cliconv.add_output(status)
    commands: dict[str, Command] = {"up": _up, "down": _down, "status": _status}
    applications = _application_commands(sub)
    cliconv.add_verbosity_everywhere(p)
    return p, {**applications, **commands}


def main(argv: list[str] | None = None) -> None:
    with cliconv.exits():
        _main(argv)


def _main(argv: list[str] | None) -> None:
    p, commands = parser()
    args = p.parse_args(argv)
    cliconv.configure_logging(args)
    shards = getattr(args, "kwok_shards", None)
    if shards is not None and not 1 <= shards <= local.MAX_KWOK_SHARDS:
        _fail(EXIT_USAGE, f"--kwok-shards {shards}: must be 1..{local.MAX_KWOK_SHARDS}")
    release = getattr(args, "kubernetes", None)
    try:
        if release is not None:
            release = bins.check_release(release)
        gates = fg.parse(getattr(args, "feature_gates", None) or "")
        fg.check(release or bins.DEFAULT_RELEASE, gates, fg.known(release or bins.DEFAULT_RELEASE))
    except (bins.UnknownRelease, fg.GateError) as e:
        flag = "--kubernetes" if isinstance(e, bins.UnknownRelease) else "--feature-gates"
        _fail(EXIT_USAGE, f"{flag}: {e}")
    try:
        config = local.ClusterConfig(
            kubernetes=release,
            feature_gates=gates,
            name=args.name,
            apiserver_port=getattr(args, "apiserver_port", 0),
            extender=not getattr(args, "no_extender", False),
            extender_port=args.extender_port,
            scheduler_config=getattr(args, "scheduler_config", None),
            kwok_shards=shards,
            prometheus_port=getattr(args, "prometheus_port", None),
            fleet_port=getattr(args, "fleet_port", vocab.FLEET_SERVICE_DEFAULT_PORT),
        )
    except local.ClusterError as e:
        _fail(EXIT_USAGE, f"--name: {e}")
    cluster = local.LocalCluster(config)
    received = [signal.SIGINT]

    def terminated(signum: int, frame: object) -> None:
        # SIGTERM unwinds like Ctrl-C: a long command (the demo) stops its children and tears
        # down first.
        received[0] = signal.Signals(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    try:
        code = commands[args.command](cluster, args)
    except cliconv.UsageError as e:
        _fail(EXIT_USAGE, str(e))
    except BrokenPipeError:
        raise  # the reader went away: cliconv.exits ends quietly
    except (cliconv.Failure, local.ClusterError, bins.BinariesError, OSError) as e:
        _fail(EXIT_RUNTIME, str(e))
    except KeyboardInterrupt:
        _fail(128 + received[0], f"interrupted by {received[0].name}")
    sys.exit(code)


def _up(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    if args.scheduler_config and not args.scheduler_config.is_file():
        _fail(EXIT_USAGE, f"--scheduler-config {args.scheduler_config} does not exist")
    notify = (lambda _m: None) if cliconv.quiet(args) else _note
    status, changed = cluster.up(build=not args.no_build, notify=notify)
    if not changed:
        print(f"cluster {cluster.config.name!r} is already running at {status.server}")
    else:
        print(f"cluster {cluster.config.name!r} is up at {status.server}, every component healthy")
    _print_usage(status)
    return EXIT_OK


def _down(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    if cluster.down(force=args.force):
        print(f"cluster {cluster.config.name!r} deleted")
    else:
        print(f"cluster {cluster.config.name!r} does not exist; nothing to do")
    return EXIT_OK


def _status(cluster: local.LocalCluster, args: argparse.Namespace) -> int:
    status = cluster.status()
    code = EXIT_OK if status.healthy else EXIT_RUNTIME
    name = cluster.config.name
    state = (
        "absent"
        if not status.exists
        else "running"
        if status.healthy
        else "not ready"
        if not status.ready
        else "degraded"
    )
    doc = {
        "name": name,
        "state": state,
        "healthy": status.healthy,
        "server": status.server,
        "kubeconfig": str(status.kubeconfig) if status.exists else None,
        "prometheus": status.prometheus,
        "kubernetes": status.release,
        "preview": list(status.preview),
        "version_skew": status.skew,
        "components": [
            {
                "name": c.name,
                "pid": c.pid,
                "rss_bytes": c.rss_bytes,
                "healthy": c.healthy,
                "problem": c.problem,
            }
            for c in status.components
        ],
    }

    def table() -> None:
        if not status.exists:
            print(f"cluster {name!r} does not exist (run: testbed up)")
            return
        print(f"cluster {name!r}: {state} at {status.server}")
        print(f"kubeconfig: {status.kubeconfig}")
        if status.prometheus:
            print(f"prometheus: {status.prometheus}")
        if status.release:
            print(f"kubernetes: {status.release}")
        for line in status.preview:
            print(f"  preview: {line}")
        if status.skew:
            print(status.skew)
        for c in status.components:
            rss = f"{c.rss_bytes / 2**20:.0f} MiB" if c.rss_bytes is not None else "-"
            pid = str(c.pid) if c.pid else "not running"
            health = "healthy" if c.healthy else (c.problem or "") if c.pid else ""
            print(f"  {c.name:<24} pid {pid:<12} rss {rss:<9} {health}")
        if not status.healthy:
            print(
                f"to repair: testbed --name {name} up (starts what is not running); "
                f"if that fails: testbed --name {name} down, then up again"
            )

    cliconv.emit(doc, args.output, table)
    return code


def _print_usage(status: local.Status) -> None:
    print(f"kubeconfig: {status.kubeconfig}")
    if status.prometheus:
        print(f"prometheus: {status.prometheus}")
    print("use it with:")
    print(f"  export KUBECONFIG={status.kubeconfig}")
    print("  kubectl get nodes   # or: fleet apply --profile dgx-h100 --nodes 100")


def _note(message: str) -> None:
    print(f"testbed: {message}", file=sys.stderr, flush=True)


def _fail(code: int, message: str) -> None:
    print(f"testbed: error: {message}", file=sys.stderr)
    sys.exit(code)
