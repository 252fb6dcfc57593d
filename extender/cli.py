"""`extender serve`: the topology-aware kube-scheduler extender.

Only wires flags, logging and signals; the app lives in extender.app.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import ssl
import sys
from typing import Any

from extender import app as app_mod
from extender import config, fast_calls
from extender.cache import files
from testbed import cliconv, runtime, vocab
from testbed.kube import errors
from testbed.kube.client import ClientSettings, Kube

log = logging.getLogger("extender")

_DESCRIPTION = """\
A scheduler extender that scores nodes by GPU-NIC alignment (same PCIe root, else same NUMA
node), best-fit packing and job locality (rack, block), for pods whose devices come from DRA.
kube-scheduler calls POST /filter and POST /prioritize (nodeCacheCapable); GET /metrics,
/healthz, /readyz and /debug/decisions (each recent decision with its terms) are for people.

Pod annotations it honours:
  testbed.dra.io/require-alignment: pcie-root | numa   filter out nodes that provably cannot
                                                        give each GPU a NIC that close
  testbed.dra.io/require-locality:  rack | block       filter out nodes outside the racks
                                                        (blocks) where the job's pods run
"""

_WEIGHTS_HELP = """\
Scoring weights (config file keys weights.*, defaults in brackets): the score is the weighted
mean of the terms that apply to a pod, scaled to 0..10."""


def parser() -> argparse.ArgumentParser:
    """The `extender` command line (also checked against the manifests' commands by a test)."""
    p = cliconv.parser(
        prog="extender",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cliconv.add_version(p)
    cliconv.add_verbosity(p)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "serve",
        help="serve the extender",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    env = os.environ.get
    s.add_argument(
        "--address",
        default=env("EXTENDER_ADDRESS", "127.0.0.1"),
        help="address to listen on (env EXTENDER_ADDRESS) [127.0.0.1]",
    )
    s.add_argument(
        "--port",
        type=cliconv.listen_port,
        default=env("EXTENDER_PORT", str(vocab.EXTENDER_DEFAULT_PORT)),
        help=f"port, 0 for any free one (env EXTENDER_PORT) [{vocab.EXTENDER_DEFAULT_PORT}]",
    )
    s.add_argument(
        "--admin-port",
        type=cliconv.listen_port,
        default=env("EXTENDER_ADMIN_PORT"),
        help="serve /metrics and /debug/* on this port instead, apart from the scheduler's "
        "calls (env EXTENDER_ADMIN_PORT) [the main port]",
    )
    s.add_argument(
        "--admin-address",
        default=env("EXTENDER_ADMIN_ADDRESS", "127.0.0.1"),
        help="address of --admin-port (env EXTENDER_ADMIN_ADDRESS) [127.0.0.1]",
    )
    s.add_argument(
        "--debug",
        action="store_true",
        default=env("EXTENDER_DEBUG", "") == "true",
        help="serve /debug/* (recent decisions name every tenant's pods) (env "
        "EXTENDER_DEBUG=true) [off]",
    )
    s.add_argument("--tls-cert", default=env("EXTENDER_TLS_CERT"), help="serve HTTPS with this")
    s.add_argument("--tls-key", default=env("EXTENDER_TLS_KEY"), help="key for --tls-cert")
    s.add_argument(
        "--client-ca",
        default=env("EXTENDER_CLIENT_CA"),
        help="with --tls-cert: answer only clients presenting a certificate this CA bundle "
        "signed (mutual TLS; kube-scheduler's tlsConfig certData/keyData). Probes need one "
        "too, so give kubelet --admin-port (env EXTENDER_CLIENT_CA) [any client]",
    )
    cliconv.add_cluster_flags(s, serving=True)
    s.add_argument(
        "--from-files",
        nargs="+",
        metavar="PATH",
        help="offline: load Nodes, ResourceSlices, ResourceClaims, DeviceClasses from YAML/JSON "
        "files or directories (e.g. `fleet render` output) instead of watching a cluster; "
        "JSON lines (`fleet render --format json`) load ~10x faster than YAML at thousands "
        "of nodes",
    )
    s.add_argument("--config", help="settings file (YAML/JSON): weights, label keys, limits")
    w = s.add_argument_group("weights", _WEIGHTS_HELP)
    w.add_argument("--weight-alignment", type=float, help="GPU-NIC alignment [2.0]")
    w.add_argument("--weight-packing", type=float, help="best fit on devices [1.0]")
    w.add_argument("--weight-locality", type=float, help="job siblings' rack/block [1.0]")
    s.add_argument("--block-label", help=f"node label of the topology block [{vocab.LABEL_BLOCK}]")
    s.add_argument("--rack-label", help=f"node label of the rack [{vocab.LABEL_RACK}]")
    s.add_argument("--gang-label", help=f"pod label naming a gang [{vocab.LABEL_GANG}]")
    s.add_argument(
        "--fractional-capacity",
        choices=["true", "false"],
        default=env("EXTENDER_FRACTIONAL_CAPACITY"),
        help="judge capacity requests as the allocator does with DRAFractionalCapacityRange "
        "(1.37): request policies step in milli-units, so a share like compute: 250m fits "
        "(rounded up to a step) on shared GPUs (env EXTENDER_FRACTIONAL_CAPACITY, config key "
        "fractional_capacity) [read from the API server's feature gates at start]",
    )
    s.add_argument(
        "--log-level",
        default=env("EXTENDER_LOG_LEVEL", "info"),
        choices=["debug", "info", "warning", "error"],
        help="debug logs every decision (env EXTENDER_LOG_LEVEL) [info]; -v is debug, -q warning",
    )
    cliconv.add_verbosity(s)
    return p


def load_settings(ns: argparse.Namespace) -> config.Settings:
    """The settings `serve` runs with: the --config file (or the defaults) with the flags and
    their environment variables over it; `config.ConfigFileError` names what is wrong."""
    overrides: dict[str, Any] = {}
    if ns.debug:
        overrides["debug"] = True
    for flag, key in (
        ("weight_alignment", "weights.alignment"),
        ("weight_packing", "weights.packing"),
        ("weight_locality", "weights.locality"),
        ("block_label", "block_label"),
        ("rack_label", "rack_label"),
        ("gang_label", "gang_label"),
    ):
        value = getattr(ns, flag)
        if value is not None:
            overrides[key] = value
    fractional = ns.fractional_capacity
    if fractional is not None:
        if fractional not in ("true", "false"):  # from the environment, unchecked by argparse
            raise config.ConfigFileError(
                f"EXTENDER_FRACTIONAL_CAPACITY must be true or false, not {fractional[:20]!r}"
            )
        overrides["fractional_capacity"] = fractional == "true"
    return config.load(ns.config, overrides)


def _ssl(ns: argparse.Namespace) -> ssl.SSLContext | None:
    if not ns.tls_cert and not ns.tls_key:
        if ns.client_ca:
            raise config.ConfigFileError("--client-ca needs --tls-cert and --tls-key")
        return None
    if not (ns.tls_cert and ns.tls_key):
        raise config.ConfigFileError("--tls-cert and --tls-key go together")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(ns.tls_cert, ns.tls_key)
    except (OSError, ssl.SSLError) as e:
        raise config.ConfigFileError(f"cannot load TLS certificate/key: {e}") from e
    if ns.client_ca:
        try:
            ctx.load_verify_locations(cafile=ns.client_ca)
        except (OSError, ssl.SSLError) as e:
            raise config.ConfigFileError(f"cannot load --client-ca {ns.client_ca}: {e}") from e
        ctx.verify_mode = ssl.CERT_REQUIRED  # no certificate from that CA: no handshake
    return ctx


async def serve(ns: argparse.Namespace, settings: config.Settings) -> None:
    tls = _ssl(ns)
    kube: Kube | None = None
    if not ns.from_files:
        kube = await Kube.connect(
            kubeconfig=ns.kubeconfig,
            context=ns.context,
            settings=ClientSettings(
                user_agent="dra-testbed-extender",
                request_timeout=cliconv.long_run_timeout(ns),
            ),
        )
    try:
        separate = ns.admin_port is not None
        application = app_mod.build(
            settings,
            kube=kube,
            separate_admin=separate,
            api_timeout=cliconv.request_timeout(ns),
        )
        if ns.from_files:
            counts = files.load(application[app_mod.STORE], ns.from_files)
            log.info("offline mode: loaded %s", ", ".join(f"{k}={v}" for k, v in counts.items()))
        async with contextlib.AsyncExitStack() as stack:
            url = await stack.enter_async_context(
                runtime.listening(
                    application,
                    ns.address,
                    ns.port,
                    ssl_context=tls,
                    access_log=False,
                    backlog=settings.listen_backlog,
                    idle_timeout=settings.idle_timeout_seconds,
                    max_connections=settings.max_connections,
                    connection=fast_calls.connections(application),
                )
            )
            log.info("serving on %s", url)
            # The CEL sandbox's workers import the interpreter (~0.3 s): started now, so that
            # they are ready by the first scheduler call with a comprehension in a selector.
            application[app_mod.STORE].index.evaluator.sandbox.start(spare=True)
            if separate:
                admin = app_mod.admin(application)
                where = runtime.listening(
                    admin,
                    ns.admin_address,
                    ns.admin_port,
                    access_log=False,
                    idle_timeout=settings.idle_timeout_seconds,
                    max_connections=app_mod.ADMIN_MAX_CONNECTIONS,
                )
                log.info("metrics%s on %s", " and debug" if settings.debug else "",
                         await stack.enter_async_context(where))  # fmt: skip
            await runtime.until_signal()
            log.info("shutting down")
    finally:
        if kube is not None:
            await kube.close()


def main(argv: list[str] | None = None) -> None:
    with cliconv.exits():
        _main(argv)


def _main(argv: list[str] | None) -> None:
    ns = parser().parse_args(argv)
    cliconv.configure_logging(ns, getattr(logging, ns.log_level.upper()))
    try:
        settings = load_settings(ns)
        runtime.run(serve(ns, settings))
    except (config.ConfigFileError, files.FilesError, errors.ConfigError) as e:
        print(f"extender: error: {e}", file=sys.stderr)  # bad input: nothing served
        sys.exit(cliconv.EXIT_USAGE)
    except (errors.KubeError, runtime.ListenError) as e:
        print(f"extender: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
    sys.exit(0)
