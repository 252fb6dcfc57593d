"""The supported version skew between kube-apiserver and kube-scheduler, said in one sentence
wherever a cluster runs outside it (a preview's newer scheduler)."""

from __future__ import annotations

import pytest

from testbed import versions


@pytest.mark.parametrize(
    ("apiserver", "scheduler", "says"),
    [
        (
            "v1.37.2",
            "v1.38.0-beta.0",
            "kube-scheduler v1.38.0-beta.0 is newer than kube-apiserver v1.37.2",
        ),
        ("v1.37.2", "v1.35.8", "is more than one minor release older than kube-apiserver v1.37.2"),
        ("v1.37.2", "v1.37.2", None),
        ("v1.37.2", "v1.36.4", None),  # one minor older: supported
        ("v1.38.0", "v1.38.0-beta.0", None),
        ("", "v1.38.0-beta.0", None),  # unknown: nothing claimed
    ],
)
def test_skew_is_said_only_outside_the_supported_range(
    apiserver: str, scheduler: str, says: str | None
) -> None:
    found = versions.skew(apiserver, scheduler)
    if says is None:
        assert found is None
    else:
        assert found is not None and says in found and "outside" in found
