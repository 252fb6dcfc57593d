"""One context of a kubeconfig, minified and flattened."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
import yaml

from testbed.kube import errors, kubeconfig

DOC = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "a",
    "clusters": [
        {"name": "ca", "cluster": {"server": "https://a", "certificate-authority": "ca.crt"}},
        {"name": "cb", "cluster": {"server": "https://b", "insecure-skip-tls-verify": True}},
    ],
    "users": [
        {"name": "ua", "user": {"client-certificate": "a.crt", "client-key": "/abs/a.key"}},
        {"name": "ub", "user": {"token": "t"}},
    ],
    "contexts": [
        {"name": "a", "context": {"cluster": "ca", "user": "ua"}},
        {"name": "b", "context": {"cluster": "cb", "user": "ub", "namespace": "x"}},
    ],
}


def read(name: str) -> bytes:
    return f"<{name}>".encode()


def test_current_context_is_kept_alone_with_files_inlined() -> None:
    out = kubeconfig.minified(DOC, None, read)
    assert out["current-context"] == "a"
    assert [c["name"] for c in out["contexts"]] == ["a"]
    cluster = out["clusters"][0]["cluster"]
    assert "certificate-authority" not in cluster
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"<ca.crt>"
    user = out["users"][0]["user"]
    assert base64.b64decode(user["client-key-data"]) == b"</abs/a.key>"
    assert set(user) == {"client-certificate-data", "client-key-data"}


def test_a_named_context_becomes_current_and_keeps_its_namespace() -> None:
    out = kubeconfig.minified(DOC, "b", read)
    assert out["current-context"] == "b"
    assert out["contexts"][0]["context"]["namespace"] == "x"
    assert out["users"] == [{"name": "ub", "user": {"token": "t"}}]
    assert out["clusters"] == [DOC["clusters"][1]]


def test_unknown_context_names_the_known_ones() -> None:
    with pytest.raises(errors.ConfigError, match=r"no context 'nope'.*a, b"):
        kubeconfig.minified(DOC, "nope", read)


def test_write_reads_files_relative_to_the_kubeconfig_and_is_private(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "a.crt").write_bytes(b"CERT")
    key = tmp_path / "a.key"
    key.write_bytes(b"KEY")
    doc = yaml.safe_load(yaml.safe_dump(DOC))
    doc["users"][0]["user"]["client-key"] = str(key)
    src = tmp_path / "config"
    src.write_text(yaml.safe_dump(doc))
    dest = kubeconfig.write_minified(src, None, tmp_path / "out" / "kubeconfig")
    out = yaml.safe_load(dest.read_text())
    cluster = out["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"CA"
    assert base64.b64decode(out["users"][0]["user"]["client-key-data"]) == b"KEY"
    assert os.stat(dest).st_mode & 0o077 == 0
    assert kubeconfig.current_context(dest) == "a"


def test_missing_file_or_named_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match="cannot read kubeconfig"):
        kubeconfig.write_minified(tmp_path / "absent", None, tmp_path / "out")
    src = tmp_path / "config"
    src.write_text(yaml.safe_dump(DOC))
    with pytest.raises(errors.ConfigError, match=r"ca\.crt"):
        kubeconfig.write_minified(src, "a", tmp_path / "out")
    assert not (tmp_path / "out").exists()
