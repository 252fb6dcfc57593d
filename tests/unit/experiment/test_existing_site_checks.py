"""What the existing-cluster site refuses before it talks to any cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiment.sites import existing_site as es


def test_an_experiment_needing_several_clusters_is_refused() -> None:
    keys: list[es.ClusterKey] = [("1.35", ()), ("1.36", ())]
    with pytest.raises(es.SiteUsageError, match=r"one Kubernetes release.*1\.35, 1\.36"):
        es.opener(keys, kubeconfig_path=None, context=None)


def test_one_cluster_key_gives_an_opener_without_connecting() -> None:
    open_site = es.opener(
        [("1.36", (("DRADeviceTaints", True),))], kubeconfig_path="x", context=None
    )
    assert callable(open_site)


def test_release_comparison_is_by_minor_version() -> None:
    assert es.minor_release("v1.36.3") == es.minor_release("1.36") == "1.36"
    assert es.minor_release("v1.35.4+k3s1") == "1.35"


def test_preflight_of_a_missing_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(es.SiteUsageError, match="cannot read kubeconfig"):
        es.preflight(tmp_path / "absent")
    assert list(tmp_path.iterdir()) == []
