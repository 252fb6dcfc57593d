"""`fleet render|apply|status|delete|serve`: flags in, then hand over to `fleet.commands`.

Exit codes (testbed.cliconv): 0 ok, 1 runtime failure (cluster unreachable, writes failed,
not Ready in time), 2 bad usage or a bad spec (nothing is created). Errors are one line,
never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from fleet import commands
from fleet.profiles import ProfileError
from fleet.reconcile import ReconcileError
from fleet.spec import DEFAULT_NAME, SpecError
from testbed import cliconv, runtime, vocab
from testbed.kube import errors

EXIT_RUNTIME = cliconv.EXIT_FAILURE
EXIT_USAGE = cliconv.EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> None:
    with cliconv.exits():
        _main(argv)


def _main(argv: Sequence[str] | None) -> None:
    args = parser().parse_args(argv)
    cliconv.configure_logging(args)
    try:
        code = args.func(args)
    except (cliconv.UsageError, SpecError, ProfileError, errors.ConfigError) as e:
        _fail(str(e), EXIT_USAGE)
    except (ReconcileError, errors.KubeError) as e:
        _fail(_kube_message(e), EXIT_RUNTIME)
    except BrokenPipeError:
        raise  # the reader went away: cliconv.exits ends quietly
    except OSError as e:
        _fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e), EXIT_RUNTIME)
    except KeyboardInterrupt:
        _fail("interrupted; objects already written stay (re-run to continue)", 130)
    sys.exit(code)


def _fail(message: str, code: int) -> NoReturn:
    print(f"fleet: error: {message}", file=sys.stderr)
    sys.exit(code)


def _kube_message(e: Exception) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return first


def parser() -> argparse.ArgumentParser:
    """The `fleet` command line (also checked against the manifests' commands by a test)."""
    p = cliconv.parser(
        prog="fleet",
        description="Thousands of kwok fake nodes with GPU and RDMA-NIC ResourceSlices, "
        "published as the NVIDIA GPU DRA driver and DRANet would.",
    )
    cliconv.add_version(p)
    cliconv.add_verbosity(p)
    p.set_defaults(func=lambda _a: _usage(p))
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    cluster = argparse.ArgumentParser(add_help=False)
    g = cluster.add_argument_group("cluster")
    cliconv.add_cluster_flags(g)
    g.add_argument(
        "--qps", type=runtime.positive_float, default=500.0, help="client-side QPS limit (500)"
    )
    g.add_argument(
        "--burst", type=runtime.positive_int, default=1000, help="client-side burst (1000)"
    )
    g.add_argument(
        "--concurrency", type=runtime.positive_int, default=64, help="nodes written at once (64)"
    )

    # `--name` of the commands that act on one fleet already in the cluster.
    named = argparse.ArgumentParser(add_help=False)
    named.add_argument("--name", help=f"fleet name (default {DEFAULT_NAME!r})")

    spec = argparse.ArgumentParser(add_help=False)
    s = spec.add_argument_group("fleet spec (a file, or one pool from flags)")
    s.add_argument(
        "-f", "--filename", metavar="SPEC", help="fleet spec file (YAML/JSON, - = stdin)"
    )
    s.add_argument("--profile", help="hardware profile of a one-pool fleet (see `fleet profiles`)")
    s.add_argument(
        "--nodes", type=runtime.non_negative_int, help="node count of the one-pool fleet"
    )
    s.add_argument(
        "--seed", type=runtime.non_negative_int, default=None, help="seed of the one-pool fleet"
    )
    s.add_argument(
        "--kwok-shards",
        type=runtime.positive_int,
        default=None,
        metavar="N",
        help="label the one-pool fleet's nodes for N kwok controllers (spec.kwokShards)",
    )
    s.add_argument(
        "--profiles",
        action="append",
        default=[],
        metavar="PATH",
        help="extra profile files or directories (repeatable)",
    )
    s.add_argument("--name", help=f"fleet name (default: the spec's, else {DEFAULT_NAME!r})")

    r = sub.add_parser(
        "render",
        parents=[spec],
        help="print all objects as YAML (no cluster needed)",
        description="Write the fleet's DeviceClasses, Nodes and ResourceSlices as YAML (to "
        "stdout, or one file per kind in a directory) for `kubectl apply`. Slices carry no "
        "ownerReferences here: a Node's uid exists only once the API server made it.",
    )
    r.add_argument("--output-dir", metavar="DIR", help="write one file per kind into DIR")
    r.add_argument(
        "-o",
        "--output",
        "--format",
        dest="format",
        choices=["yaml", "json"],
        default="yaml",
        help="yaml (default) or json lines",
    )
    r.set_defaults(func=commands.render)

    a = sub.add_parser(
        "apply",
        parents=[spec, cluster],
        help="create/update/delete until the cluster holds exactly the fleet",
        description="Reconcile the fleet: create what is missing, update what differs, delete "
        "what the fleet no longer has, then wait until kwok reports every node Ready.",
    )
    a.add_argument("--no-wait", action="store_true", help="do not wait for nodes to be Ready")
    a.add_argument(
        "--through-service",
        action="store_true",
        help="write the fleet as a Fleet object for a running `fleet serve` to reconcile, and "
        "wait until it reports the fleet Ready (its metrics then show the work)",
    )
    cliconv.add_wait_timeout(a, "--timeout", default=600.0, waits_for="for Ready")
    a.set_defaults(func=commands.apply)

    st = sub.add_parser(
        "status", parents=[cluster, named], help="desired, created and Ready nodes per pool"
    )
    st.add_argument("--all", action="store_true", help="every fleet in the cluster")
    cliconv.add_output(st)
    st.set_defaults(func=commands.status)

    d = sub.add_parser(
        "delete",
        parents=[cluster, named],
        help="remove every node and slice the fleet made, nothing else",
        description="Delete the fleet's Nodes, ResourceSlices and its record ConfigMap, found "
        "by its labels. DeviceClasses stay: other fleets and claims share them. A fleet that "
        "has a Fleet object (`fleet serve`'s) is deleted through it: the object goes, and the "
        "service removes the fleet's objects first.",
    )
    cliconv.add_wait_timeout(d, "--timeout", default=300.0, waits_for="until gone")
    d.set_defaults(func=commands.delete)

    t = sub.add_parser(
        "taint",
        parents=[cluster, named],
        help="taint a share of a fleet's GPUs (simulated failures), or clear such taints",
        description="Add (or with --clear remove) a device taint on a share of the fleet's "
        "physical GPUs: every device of a chosen GPU (whole, MIG partitions, shared) carries "
        "it. NoSchedule keeps new claims off those devices; NoExecute also evicts pods whose "
        "claims use them. This edits the fleet's recorded spec (spec.deviceTaints) and "
        "applies it, rewriting only the affected slices; the same spec and seed always pick "
        "the same GPUs. Re-applying the original spec file removes the taint again.",
    )
    t.add_argument("--share", type=runtime.share, help="fraction of the GPUs in scope, e.g. 0.05")
    t.add_argument("--effect", choices=["NoSchedule", "NoExecute", "None"], default="NoSchedule")
    t.add_argument("--key", default=vocab.DEVICE_TAINT_KEY, help="taint key (%(default)s)")
    t.add_argument("--value", default="", help="taint value (none)")
    t.add_argument(
        "--pool", action="append", default=[], help="only GPUs of this pool (repeatable)"
    )
    t.add_argument("--clear", action="store_true", help="remove the taints with --key")
    t.set_defaults(func=commands.taint)

    pr = sub.add_parser("profiles", parents=[spec], help="list the known hardware profiles")
    cliconv.add_output(pr)
    pr.set_defaults(func=commands.profiles)

    sv = sub.add_parser(
        "serve",
        parents=[cluster],
        help="run the reconciler as a service watching Fleet objects",
        description="Watch Fleet custom resources and reconcile each one; report progress in "
        "its status. Serves /metrics, /healthz and /readyz.",
    )
    sv.add_argument("--host", default="127.0.0.1", help="listen address (127.0.0.1)")
    sv.add_argument(
        "--port",
        type=cliconv.port,
        default=vocab.FLEET_SERVICE_DEFAULT_PORT,
        help="listen port",
    )
    sv.add_argument("--install-crd", action="store_true", help="create the Fleet CRD if missing")
    cliconv.add_wait_timeout(sv, "--ready-timeout", default=600.0, waits_for="for nodes Ready")
    sv.set_defaults(func=commands.serve)
    for command in sub.choices.values():  # `fleet -v apply` and `fleet apply -v` alike
        cliconv.add_verbosity(command)
    return p


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return EXIT_USAGE
