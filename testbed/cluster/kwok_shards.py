"""More than one kwok controller on the local cluster, each managing a share of the nodes.

One kwok controller keeps about 1k nodes healthy; a fleet labels its nodes
`testbed.dra.io/kwok-shard=0..N-1` (`spec.kwokShards`). With N shards the cluster runs:

- kwokctl's own controller as shard 0, told (through `kwokctl --extra-args`) to manage every
  node *not* labelled for shards 1..N-1: shard 0, unlabelled nodes (`kwokctl scale node`, a
  fleet without shards) and shards beyond N-1 (a fleet sharded wider than the cluster);
- one extra controller per shard 1..N-1 with `--manage-nodes-with-label-selector=
  testbed.dra.io/kwok-shard=<i>`, started from the same binary, kubeconfig, stages and
  KwokConfiguration as kwokctl's (read from the cluster's `kwok.yaml`), with its own server
  port, a pid file beside kwokctl's and a log beside kwokctl's logs.

The selectors are disjoint and together cover every node, so no node has two controllers
fighting over its status and lease, and none has none.

Pure parts (selectors, argv) here; `LocalCluster` starts and stops the processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed import vocab

CONTROLLER = "kwok-controller"
SHARD_PREFIX = f"{CONTROLLER}-shard-"

_SELECTOR_FLAG = "--manage-nodes-with-label-selector="
# Flags that say which nodes a controller manages or where it serves: replaced per shard.
_PER_CONTROLLER_FLAGS = (
    "--manage-all-nodes",
    "--manage-single-node",
    "--manage-nodes-with-annotation-selector",
    "--manage-nodes-with-label-selector",
    "--node-port",
    "--server-address",
)


def shard_name(shard: int) -> str:
    """Component name (pid and log file stem) of the extra controller for `shard` (>= 1)."""
    return f"{SHARD_PREFIX}{shard}"


def shard_selector(shard: int) -> str:
    return f"{vocab.LABEL_KWOK_SHARD}={shard}"


def default_selector(shards: int) -> str:
    """Nodes kwokctl's controller keeps when `shards` > 1: all but those of shards 1..N-1."""
    others = ",".join(str(i) for i in range(1, shards))
    return f"{vocab.LABEL_KWOK_SHARD} notin ({others})"


def kwokctl_extra_args(shards: int) -> list[str]:
    """`kwokctl --extra-args` values (`component=key=value`) that narrow kwokctl's controller
    to shard 0 (pure)."""
    if shards <= 1:
        return []
    return [
        f"{CONTROLLER}=manage-all-nodes=false",
        f"{CONTROLLER}=manage-nodes-with-label-selector={default_selector(shards)}",
    ]


def shards_of(default_args: list[str]) -> int:
    """How many shards a cluster was created with, from its default controller's arguments."""
    selectors = [
        a.removeprefix(_SELECTOR_FLAG) for a in default_args if a.startswith(_SELECTOR_FLAG)
    ]
    if not selectors:
        return 1
    m = re.fullmatch(re.escape(vocab.LABEL_KWOK_SHARD) + r" notin \(([\d,]+)\)", selectors[-1])
    return len(m.group(1).split(",")) + 1 if m else 1


@dataclass(frozen=True)
class Controller:
    """How kwokctl runs its kwok controller (from the cluster's saved configuration)."""

    binary: str
    args: list[str]
    work_dir: str


def default_controller(cluster_dir: Path) -> Controller | None:
    """kwokctl's kwok-controller component, as saved in `<cluster_dir>/kwok.yaml`."""
    try:
        docs = list(yaml.safe_load_all((cluster_dir / "kwok.yaml").read_text()))
    except (OSError, yaml.YAMLError):
        return None
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "KwokctlConfiguration":
            continue
        for comp in doc.get("components") or []:
            if comp.get("name") == CONTROLLER:
                return Controller(
                    binary=str(comp["binary"]),
                    args=[str(a) for a in comp.get("args") or []],
                    work_dir=str(comp.get("workDir") or cluster_dir),
                )
    return None


def shard_argv(base: Controller, shard: int, port: int) -> list[str]:
    """The extra controller for `shard`: kwokctl's, narrowed to the shard's label and served
    on its own loopback `port` (pure)."""
    keep = [a for a in base.args if not a.startswith(_PER_CONTROLLER_FLAGS)]
    return [
        base.binary,
        *keep,
        f"{_SELECTOR_FLAG}{shard_selector(shard)}",
        f"--node-port={port}",
        f"--server-address=127.0.0.1:{port}",
    ]
