"""The local clusters of older releases that tests share by name."""

from __future__ import annotations

import os

from testbed import vocab
from testbed.cluster import local

OLDER = ("1.36", "1.35")
"""The pinned releases before 1.37."""


def config(release: str) -> local.ClusterConfig:
    """The cluster of an older `release` (`<test cluster>-r1NN`, kube-scheduler without the
    extender, the Workload API gates that release names on): one per release, whichever
    module makes it first."""
    base = os.environ.get("DRA_TESTBED_TEST_CLUSTER", local.DEFAULT_NAME)
    gates = dict.fromkeys(vocab.WORKLOAD_GATES[release], True)
    name = f"{base}-r{release.replace('.', '')}"
    return local.ClusterConfig(name=name, extender=False, kubernetes=release, feature_gates=gates)
