"""One context of a kubeconfig as a file of its own (`kubectl config view --minify --flatten`).

Child processes (fleet, loadgen) take KUBECONFIG but no context, so a run on `--context X`
hands them a kubeconfig holding only X, made its current context, with every file it names
(certificate authority, client certificate and key) inlined as `*-data`: it reads the same
from any working directory. `minified` is pure; `write_minified` is its thin I/O.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from testbed.kube import errors

Doc = dict[str, Any]

# Fields naming a file, and the inline field that carries its content instead.
_CLUSTER_FILES = {"certificate-authority": "certificate-authority-data"}
_USER_FILES = {"client-certificate": "client-certificate-data", "client-key": "client-key-data"}


def _named(doc: Mapping[str, Any], section: str, name: str, what: str) -> Doc:
    for entry in doc.get(section) or ():
        if entry.get("name") == name:
            return dict(entry.get(what) or {})
    raise errors.ConfigError(f"kubeconfig names {what} {name!r}, which it does not define")


def _inlined(fields: Doc, files: Mapping[str, str], read: Callable[[str], bytes]) -> Doc:
    out = dict(fields)
    for path_field, data_field in files.items():
        if path_field in out:
            out[data_field] = base64.b64encode(read(str(out.pop(path_field)))).decode()
    return out


def contexts(doc: Mapping[str, Any]) -> list[str]:
    return [str(c.get("name")) for c in doc.get("contexts") or ()]


def minified(doc: Mapping[str, Any], context: str | None, read: Callable[[str], bytes]) -> Doc:
    """`doc` reduced to `context` (None: its current context), files inlined through `read`
    (which gets each path as written in the kubeconfig). `errors.ConfigError` for a context
    it does not have."""
    name = context or doc.get("current-context")
    if not name:
        raise errors.ConfigError("kubeconfig has no current context; give --context")
    if name not in contexts(doc):
        known = ", ".join(contexts(doc)) or "none"
        raise errors.ConfigError(f"no context {name!r} in the kubeconfig (it has: {known})")
    ctx = _named(doc, "contexts", name, "context")
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if not cluster_name:
        raise errors.ConfigError(f"context {name!r} names no cluster")
    cluster = _inlined(_named(doc, "clusters", cluster_name, "cluster"), _CLUSTER_FILES, read)
    users = []
    if user_name:
        user = _inlined(_named(doc, "users", user_name, "user"), _USER_FILES, read)
        users = [{"name": user_name, "user": user}]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": users,
        "contexts": [{"name": name, "context": ctx}],
        "current-context": name,
    }


def source(kubeconfig: str | Path | None) -> Path:
    """The kubeconfig file a client would load: `kubeconfig`, else the first of $KUBECONFIG,
    else ~/.kube/config (as `Kube.connect` does)."""
    path = str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG", "")
    first = path.split(os.pathsep)[0] if path else ""
    return Path(first) if first else Path.home() / ".kube" / "config"


def write_minified(kubeconfig: str | Path | None, context: str | None, dest: Path) -> Path:
    """Write `context` of the kubeconfig (see `source`) to `dest`, readable by its owner only
    (it carries credentials). `errors.ConfigError` when the file or the context is missing."""
    path = source(kubeconfig)
    doc = load(path)

    def read(name: str) -> bytes:
        target = path.parent / Path(name).expanduser()  # relative paths: from the file's dir
        try:
            return target.read_bytes()
        except OSError as e:
            raise errors.ConfigError(f"kubeconfig {path} names {target}: {e.strerror}") from e

    text = yaml.safe_dump(minified(doc, context, read), sort_keys=False)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return dest


def load(path: Path) -> Doc:
    """The kubeconfig at `path`; `errors.ConfigError` in one line when it cannot be read or is
    not UTF-8 YAML of a mapping: bad input, never the client loader's traceback."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise errors.ConfigError(f"cannot read kubeconfig {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise errors.ConfigError(f"kubeconfig {path} is not UTF-8 text ({e.reason})") from e
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        what = getattr(e, "problem", None) or "does not parse"
        raise errors.ConfigError(f"kubeconfig {path} is not YAML{at}: {what}") from e
    if doc is None:
        raise errors.ConfigError(f"kubeconfig {path} is empty")
    if not isinstance(doc, dict):
        raise errors.ConfigError(f"kubeconfig {path} is not a kubeconfig (not a mapping)")
    return doc


def check_context(path: Path, context: str) -> None:
    """`errors.ConfigError` in one line naming the contexts the kubeconfig at `path` has,
    unless it has `context` (or the file does not load, `load`)."""
    doc = load(path)
    if context in contexts(doc):
        return
    known = ", ".join(contexts(doc)) or "none"
    raise errors.ConfigError(f"no context {context!r} in kubeconfig {path} (it has: {known})")


def current_context(path: Path) -> str:
    """The current context of the kubeconfig file at `path` ("" if it names none)."""
    doc = yaml.safe_load(path.read_text()) or {}
    return str(doc.get("current-context") or "") if isinstance(doc, dict) else ""
