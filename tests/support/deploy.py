"""Helpers for the deploy checks: render kustomizations, find an object's source file, read
the Dockerfile, pull metric names out of PromQL, run a service process and wait for it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from testbed.cluster import ports

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
DOCKERFILE = REPO / "Dockerfile"
# Kustomizations rendered offline; kwok/ references kwok's remote base (see test_kwok_overlay).
KUSTOMIZATIONS = ("base", "kind", "monitoring", "loadgen")
ADMIN_ACCESS_GRANT = MANIFESTS / "loadgen" / "admin-access-grant.yaml"
"""An admin's grant applied on its own (not in a kustomization)."""
SCHEDULER_CONFIG = MANIFESTS / "scheduler" / "kube-scheduler-config.yaml"
ALERT_RULES = MANIFESTS / "monitoring" / "alerts.rules.yaml"
DASHBOARDS = sorted((MANIFESTS / "monitoring" / "dashboards").glob("*.json"))

Obj = dict[str, Any]


@cache
def tool_dir() -> Path:
    out = subprocess.run(
        [str(REPO / "tools/k8s/build.sh"), "--print-dir"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def kubectl() -> str:
    path = tool_dir() / "kubectl"
    assert path.is_file(), f"{path} missing: run tools/k8s/build.sh (it builds kubectl too)"
    return str(path)


@cache
def _render(directory: Path) -> tuple[str, ...]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, f"kubectl kustomize {directory.relative_to(REPO)}: {out.stderr}"
    return tuple(yaml.safe_dump(d) for d in yaml.safe_load_all(out.stdout) if d)


def render(name: str) -> list[Obj]:
    """Objects of manifests/<name> as kustomize renders them (fresh dicts per call)."""
    return [yaml.safe_load(d) for d in _render(MANIFESTS / name)]


def describe(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {ns}{meta.get('name')}"


@cache
def _sources() -> dict[tuple[str, str], str]:
    """(kind, name) -> the repo file that defines it, for objects written out in manifests/,
    and the kustomization for generated ConfigMaps."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        rel = str(path.relative_to(REPO))
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "Kustomization":
                for gen in doc.get("configMapGenerator") or []:
                    found.setdefault(("ConfigMap", gen["name"]), rel)
            elif isinstance(doc.get("metadata"), dict) and "name" in doc["metadata"]:
                found.setdefault((doc.get("kind", ""), doc["metadata"]["name"]), rel)
    return found


def origin(obj: Obj) -> str:
    """'<file>: <Kind> <ns>/<name>' for failure messages."""
    kind, name = obj.get("kind", ""), (obj.get("metadata") or {}).get("name", "")
    sources = _sources()
    src = sources.get((kind, name))
    if src is None and kind == "ConfigMap":  # generated: name-<hash>
        src = sources.get((kind, name.rsplit("-", 1)[0]))
    return f"{src or '(unknown file)'}: {describe(obj)}"


def pod_spec(obj: Obj) -> Obj | None:
    spec = obj.get("spec") or {}
    if obj.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return dict(spec["template"]["spec"])
    return None


# -- Dockerfile ---------------------------------------------------------------------------


@dataclass
class Stage:
    base: str
    alias: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def last(self, keyword: str) -> str | None:
        found = [arg for kw, arg in self.instructions if kw == keyword]
        return found[-1] if found else None

    def all(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.instructions if kw == keyword]

    def env(self) -> dict[str, str]:
        """ENV key=value pairs (the only form this Dockerfile uses), later ones winning."""
        out: dict[str, str] = {}
        for arg in self.all("ENV"):
            for word in shlex.split(arg):
                key, _, value = word.partition("=")
                out[key] = value
        return out


def dockerfile_stages(path: Path = DOCKERFILE) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages, with continuation lines joined, comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        if not pending and raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append((pending + raw).strip())
        pending = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in filter(None, lines):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), words[0])
            alias = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, alias))
        elif keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif stages:
            stages[-1].instructions.append((keyword, rest))
    return args, stages


def exec_form(arg: str | None) -> list[str]:
    """A CMD/ENTRYPOINT in JSON exec form as a list ([] when absent)."""
    if arg is None:
        return []
    import json

    value = json.loads(arg)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arg
    return value


def image_command() -> tuple[list[str], dict[str, str]]:
    """The final stage's ENTRYPOINT + CMD, and its ENV with the image's venv bin replaced by
    this checkout's venv (the same console scripts, installed from the same sources)."""
    _, stages = dockerfile_stages()
    final = stages[-1]
    argv = exec_form(final.last("ENTRYPOINT")) + exec_form(final.last("CMD"))
    env = final.env()
    venv_bin = str(REPO / ".venv" / "bin")
    if "PATH" in env:
        parts = env["PATH"].split(":")
        env["PATH"] = ":".join(
            [venv_bin if p.endswith("/bin") and p.startswith("/opt/") else p for p in parts]
        ).replace("$PATH", os.environ.get("PATH", ""))
    return argv, env


# -- PromQL -------------------------------------------------------------------------------

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or"}
    | {"unless", "offset", "inf", "nan"}
)


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects: identifiers that are not functions (followed
    by '('), keywords, label names (inside {...} or by/without/on/ignoring (...)) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text
    )  # grouping label lists
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\(|\s+(?:by|without)\b)?", text):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in _KEYWORDS:
            continue
        names.add(word)
    return names


def family(name: str, known: set[str]) -> str | None:
    """The metric family `name` belongs to (histogram suffixes stripped), if known."""
    if name in known:
        return name
    for suffix in ("_bucket", "_sum", "_count", "_created"):
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return name[: -len(suffix)]
    return None


@dataclass(frozen=True)
class Query:
    where: str
    """'<file>: panel "<title>" target A' or '<file>: alert <name>'."""
    expr: str


def dashboard_queries() -> list[Query]:
    """Every panel target's and Prometheus annotation's expression."""
    import json

    out = []
    for path in DASHBOARDS:
        rel = path.relative_to(REPO)
        board = json.loads(path.read_text())
        for panel in _panels(board.get("panels") or []):
            for target in panel.get("targets") or []:
                out.append(
                    Query(
                        f'{rel}: panel "{panel["title"]}" target {target["refId"]}', target["expr"]
                    )
                )
        for annotation in (board.get("annotations") or {}).get("list") or []:
            if "expr" in annotation:  # Prometheus's (Grafana's built-in ones have none)
                out.append(Query(f'{rel}: annotation "{annotation["name"]}"', annotation["expr"]))
    return out


def _panels(panels: list[Obj]) -> Iterator[Obj]:
    for p in panels:
        yield p
        yield from _panels(p.get("panels") or [])


def alert_queries() -> list[Query]:
    rel = ALERT_RULES.relative_to(REPO)
    rules = yaml.safe_load(ALERT_RULES.read_text())
    return [
        Query(
            f"{rel}: {'alert' if 'alert' in r else 'record'} {r.get('alert') or r.get('record')}",
            r["expr"],
        )
        for g in rules["groups"]
        for r in g["rules"]
    ]


DASHBOARD_VARIABLES = ("job", "scheduler")
"""The dashboard's own variables; "All" stands for the regex `.*` (their allValue)."""


def grafana_to_promql(expr: str, rate_interval: str = "1m", time_range: str = "1h") -> str:
    """Grafana's built-in interval and range variables, and the dashboard's variables set to
    All, as Prometheus would see them."""
    for var in ("$__rate_interval", "${__rate_interval}", "$__interval", "${__interval}"):
        expr = expr.replace(var, rate_interval)
    for var in ("$__range", "${__range}"):
        expr = expr.replace(var, time_range)
    for name in DASHBOARD_VARIABLES:
        expr = expr.replace(f"${{{name}}}", ".*").replace(f"${name}", ".*")
    return expr


# -- processes ----------------------------------------------------------------------------


def http_get(url: str, timeout: float = 2.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def wait_http(
    url: str, proc: subprocess.Popen[bytes], *, want: int = 200, limit: float = 60
) -> str:
    """Poll `url` until it answers `want` (bounded); fail with the process's output if it dies."""
    deadline = time.monotonic() + limit
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args!r} exited {proc.returncode}: {_output(proc)}")
        try:
            status, body = http_get(url)
            if status == want:
                return body
            last = f"{status} {body[:200]}"
        except OSError as e:
            last = str(e)
        time.sleep(0.2)
    raise AssertionError(f"{url} never answered {want} within {limit}s (last: {last})")


def _output(proc: subprocess.Popen[bytes]) -> str:
    log = getattr(proc, "log_path", None)
    if log is not None and Path(log).exists():
        return Path(log).read_text(errors="replace")[-3000:]
    return "(no log)"


@contextlib.contextmanager
def running(
    argv: list[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A service process, its output in `log`; SIGTERM (then SIGKILL) on the way out."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=dict(env or os.environ)
        )
    proc.log_path = log  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def venv_env() -> dict[str, str]:
    """The environment with this checkout's console scripts first on PATH."""
    return {**os.environ, "PATH": f"{REPO / '.venv/bin'}:{os.environ.get('PATH', '')}"}


@contextlib.contextmanager
def serving_extender(kubeconfig: str, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`extender serve` watching the cluster on loopback `port`, once its /readyz answers."""
    argv = ["extender", "serve", "--kubeconfig", kubeconfig]
    argv += ["--address", "127.0.0.1", "--port", str(port)]
    with running(argv, log, venv_env()) as proc:
        wait_http(f"http://127.0.0.1:{port}/readyz", proc, limit=120)
        yield proc


@contextlib.contextmanager
def serving_prometheus(config: Obj, workdir: Path) -> Iterator[str]:
    """Debian's Prometheus with `config` on a free loopback port, once ready: its base URL."""
    prom = shutil.which("prometheus")
    assert prom, "prometheus missing: run hack/install-test-deps.sh (Debian package prometheus)"
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{free_port()}"
    argv = [
        prom,
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ]
    with running(argv, workdir / "prometheus.log") as proc:
        wait_http(f"{url}/-/ready", proc, limit=60)
        yield url


def prometheus_query(url: str, expr: str) -> tuple[str | None, list[Obj]]:
    """An instant query: (None, result) or (the error Prometheus gave, [])."""
    status, body = http_get(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}", 10)
    reply = json.loads(body)
    if status != 200 or reply.get("status") != "success":
        return f"{reply.get('errorType')}: {reply.get('error')}", []
    return None, list(reply["data"]["result"])


# -- what the components export -----------------------------------------------------------


def exported_families() -> dict[str, set[str]]:
    """Metric families the extender and the fleet service register, by component, read from
    their own registries (the same code the services run)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from extender import app
    from extender.config import Settings
    from fleet.metrics import FleetMetrics

    extender_app = app.build(Settings())
    fleet_registry = CollectorRegistry()
    FleetMetrics(fleet_registry)
    out = {}
    for component, registry in (
        ("extender", extender_app[app.REGISTRY]),
        ("fleet", fleet_registry),
    ):
        text = generate_latest(registry).decode()
        out[component] = {ln.split()[2] for ln in text.splitlines() if ln.startswith("# TYPE ")}
    return out


def pinned(go_mod: str, module: str) -> str:
    """The version of `module` a wrapper module in tools/k8s requires."""
    text = (REPO / "tools/k8s" / go_mod / "go.mod").read_text()
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", text, re.M)
    assert m, f"{module} not in tools/k8s/{go_mod}/go.mod"
    return m.group(1)


free_port = ports.free_port
