"""The manifests as rendered by kustomize, checked without a cluster: shape, security,
RBAC scope, the one scheduler configuration, the kind overlay, the kwok overlay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender import runs
from extender.cache.store import KINDS
from tests.support import deploy as s

pytestmark = pytest.mark.timeout(120)

Obj = dict[str, Any]
IMAGE = "dra-testbed"


def objects(*names: str) -> list[Obj]:
    return [o for n in names for o in s.render(n)]


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    for o in objs:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    raise AssertionError(f"no {kind} {name} in the rendered manifests")


def containers(spec: Obj) -> list[Obj]:
    return [*(spec.get("initContainers") or []), *spec["containers"]]


@pytest.mark.parametrize("name", s.KUSTOMIZATIONS)
def test_kustomization_renders_and_labels_everything(name: str) -> None:
    objs = s.render(name)
    assert objs
    for o in objs:
        labels = o["metadata"].get("labels") or {}
        assert labels.get("app.kubernetes.io/part-of") == "dra-testbed", s.origin(o)


@pytest.mark.parametrize("name", s.KUSTOMIZATIONS)
def test_workloads_are_restricted_and_bounded(name: str) -> None:
    for o in s.render(name):
        spec = s.pod_spec(o)
        if spec is None:
            continue
        where = s.origin(o)
        psc = spec.get("securityContext") or {}
        assert psc.get("runAsNonRoot") is True, f"{where}: runAsNonRoot"
        assert psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", where
        for c in containers(spec):
            csc = c.get("securityContext") or {}
            assert csc.get("allowPrivilegeEscalation") is False, f"{where} {c['name']}"
            assert csc.get("readOnlyRootFilesystem") is True, f"{where} {c['name']}"
            assert csc.get("capabilities", {}).get("drop") == ["ALL"], f"{where} {c['name']}"
            res = c.get("resources") or {}
            assert res.get("requests", {}).get("cpu"), f"{where} {c['name']}: cpu request"
            assert res.get("requests", {}).get("memory"), f"{where} {c['name']}: memory request"
            assert res.get("limits", {}).get("memory"), f"{where} {c['name']}: memory limit"
            long_running = o["kind"] != "Job" and (
                c in spec["containers"] or c.get("restartPolicy") == "Always"
            )
            if long_running:
                assert c.get("livenessProbe"), f"{where} {c['name']}: liveness probe"
                assert c.get("readinessProbe") or c.get("startupProbe"), f"{where} {c['name']}"


def test_no_admission_policy_reads_a_param() -> None:
    """kube-apiserver stops watching a built-in paramKind for good once no binding names it
    for a second (kubernetes/kubernetes#130887, in 1.37.2): a policy reading a ConfigMap
    would then judge by a stale copy or deny for want of it. Grants are RBAC checks here."""
    loose = [d for d in yaml.safe_load_all(s.ADMIN_ACCESS_GRANT.read_text()) if d]
    for obj in [*objects(*s.KUSTOMIZATIONS), *loose]:
        if obj["kind"] in ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"):
            assert "paramKind" not in obj["spec"], s.origin(obj)


def test_extender_runs_two_replicas_behind_a_service_with_a_pdb() -> None:
    objs = s.render("base")
    dep = find(objs, "Deployment", "dra-testbed-extender")
    assert dep["spec"]["replicas"] == 2
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    svc = find(objs, "Service", "dra-testbed-extender")
    pdb = find(objs, "PodDisruptionBudget", "dra-testbed-extender")
    for selector in (svc["spec"]["selector"], pdb["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= pod_labels.items()
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["image"].startswith(IMAGE)
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "dra-testbed-extender"


def extender_rules() -> list[Obj]:
    role = find(s.render("base"), "ClusterRole", "dra-testbed-extender")
    return list(role["rules"])


def test_extender_role_reads_and_only_patches_pods() -> None:
    for rule in extender_rules():
        if rule["verbs"] == ["patch"]:  # the gang placer's release of gated pods
            assert rule["apiGroups"] == [""], rule
            assert rule["resources"] == ["pods", "pods/status"], rule
            continue
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
        if "nonResourceURLs" in rule:  # the API server's gates, read at start
            assert rule["nonResourceURLs"] == ["/metrics"] and rule["verbs"] == ["get"], rule
            continue
        assert "*" not in rule["resources"] and "*" not in rule["apiGroups"], rule


def test_extender_role_covers_exactly_what_it_watches() -> None:
    granted = {
        (group, res)
        for rule in extender_rules()
        for group in rule.get("apiGroups", ())
        for res in rule["resources"]
        if {"list", "watch"} <= set(rule["verbs"])
    }
    watched = {(r.group, r.plural) for r in [*KINDS.values(), runs.RESOURCE]}
    assert granted == watched, (
        f"granted-but-unused {granted - watched}, missing {watched - granted}"
    )


# -- who may connect ------------------------------------------------------------------------


def network_policies() -> list[Obj]:
    return [o for o in s.render("base") if o["kind"] == "NetworkPolicy"]


def served_ports(spec: Obj) -> list[Obj]:
    """The container ports of a pod spec (sidecars included)."""
    return [p for c in containers(spec) for p in c.get("ports") or []]


def test_network_policies_choose_namespaces_by_the_name_only_the_api_server_sets() -> None:
    """A pod label is anyone's to set who may create a pod; a namespace's
    kubernetes.io/metadata.name only the API server sets. Every peer names its namespaces so
    (a podSelector alone would select pods of the policy's own namespace: named too)."""
    policies = network_policies()
    assert policies
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            assert rule.get("from"), f"{s.origin(policy)}: a rule with no peers admits anyone"
            assert rule.get("ports"), f"{s.origin(policy)}: a rule with no ports admits all"
            for peer in rule["from"]:
                names = peer.get("namespaceSelector") or {}
                by_name = names.get("matchLabels", {}).get("kubernetes.io/metadata.name") or [
                    e["values"]
                    for e in names.get("matchExpressions", [])
                    if e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "In"
                ]
                assert by_name, f"{s.origin(policy)}: peer {peer} not chosen by namespace name"
                assert "ipBlock" not in peer, s.origin(policy)


def test_extender_admits_schedulers_to_the_scheduler_port_and_prometheus_to_the_admin_port() -> (
    None
):
    """A scrape flood on the scheduler's port delayed /filter past kube-scheduler's 5 s:
    Prometheus reaches the admin port (/metrics) only, schedulers the scheduler port only."""
    (policy,) = [p for p in network_policies() if p["metadata"]["name"] == "dra-testbed-extender"]
    ports_by_peer = {
        "prometheus" if any(peer.get("podSelector") for peer in rule["from"]) else "schedulers": {
            port["port"] for port in rule["ports"]
        }
        for rule in policy["spec"]["ingress"]
    }
    assert ports_by_peer == {"schedulers": {8888}, "prometheus": {9888}}


def test_every_served_port_of_every_pod_has_a_network_policy() -> None:
    """Each port a pod of the base serves on its network (not host network) is named by an
    ingress rule of a policy selecting that pod, so nothing it serves is open to all."""
    policies = network_policies()
    for o in s.render("base"):
        spec = s.pod_spec(o)
        if spec is None or spec.get("hostNetwork"):
            continue
        labels = o["spec"]["template"]["metadata"]["labels"]
        mine = [
            p
            for p in policies
            if p["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
            and "Ingress" in p["spec"]["policyTypes"]
        ]
        admitted = {
            port["port"] for p in mine for rule in p["spec"]["ingress"] for port in rule["ports"]
        }
        for port in served_ports(spec):
            assert {port["containerPort"], port.get("name")} & admitted, (
                f"{s.origin(o)}: port {port} has no NetworkPolicy"
            )


def test_an_extender_whose_only_caller_shares_its_network_serves_it_on_loopback() -> None:
    """A sidecar beside kube-scheduler, or an extender on the host network of a control-plane
    node, is called over loopback only: its scheduler port listens on 127.0.0.1, so nothing
    else on the pod's or node's network reaches /filter (probes and /metrics are on the admin
    port). Only the extender Deployment, called over the network, listens on all addresses."""
    local = set()
    for o in (o for name in ("base", "kind") for o in s.render(name)):  # kind includes base
        spec = s.pod_spec(o)
        if spec is None:
            continue
        names = {c["name"] for c in containers(spec)}
        for c in containers(spec):
            argv = [*(c.get("command") or []), *(c.get("args") or [])]
            if argv[:2] != ["extender", "serve"]:
                continue
            address = argv[argv.index("--address") + 1]
            if "kube-scheduler" in names or spec.get("hostNetwork"):
                assert address == "127.0.0.1", f"{s.origin(o)}: {c['name']} on {address}"
                local.add(o["metadata"]["name"])
            else:
                assert o["metadata"]["name"] == "dra-testbed-extender", s.origin(o)
    assert local == {"dra-testbed-scheduler", "dra-testbed-extender-node"}


def test_every_service_targets_a_port_its_pods_serve() -> None:
    objs = s.render("base")
    for svc in (o for o in objs if o["kind"] == "Service"):
        selector = svc["spec"]["selector"]
        pods = [
            spec
            for o in objs
            if (spec := s.pod_spec(o)) is not None
            and selector.items() <= o["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert pods, f"{s.origin(svc)}: selects no pod"
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            for spec in pods:
                served = [(p["containerPort"], p.get("name")) for p in served_ports(spec)]
                assert any(target in pair for pair in served), (
                    f"{s.origin(svc)}: port {port['name']} targets {target}, which no "
                    f"container serves ({served})"
                )


def scheduler_config() -> Obj:
    cfg: Obj = yaml.safe_load(s.SCHEDULER_CONFIG.read_text())
    return cfg


def test_scheduler_configmap_is_the_one_file_verbatim() -> None:
    objs = s.render("base")
    (cm,) = [o for o in objs if o["metadata"]["name"].startswith("dra-testbed-scheduler-config")]
    assert cm["data"] == {s.SCHEDULER_CONFIG.name: s.SCHEDULER_CONFIG.read_text()}


def second_scheduler() -> Obj:
    dep = find(s.render("base"), "Deployment", "dra-testbed-scheduler")
    spec: Obj = dep["spec"]["template"]["spec"]
    return spec


def test_second_scheduler_config_step_renames_the_profile_and_nothing_else(tmp_path: Path) -> None:
    spec = second_scheduler()
    init = next(c for c in spec["initContainers"] if c["name"] == "config")
    argv = list(init["command"])
    assert argv[0] == "python"
    src, dst, name = argv[3:]
    # Run the exact init-container program on the one file.
    out = tmp_path / "out.yaml"
    subprocess.run(
        [sys.executable, *argv[1:3], str(s.SCHEDULER_CONFIG), str(out), name], check=True
    )
    got, want = yaml.safe_load(out.read_text()), scheduler_config()
    assert name == "dra-testbed-scheduler"
    # Every pod's profile and the gang profile, under its own name (scheduler_profiles).
    assert [p["schedulerName"] for p in got["profiles"]] == [name, f"{name}-gang"]
    assert "kubeconfig" not in got.get("clientConnection", {}), "in-cluster ServiceAccount"
    for cfg in (got, want):
        for p in cfg["profiles"]:
            p.pop("schedulerName", None)
        cfg.get("clientConnection", {}).pop("kubeconfig", None)
    assert got == want, "the second scheduler must run the shared file, changed in name only"
    # The paths the program reads and writes are the ones the pod mounts.
    mounts = {m["name"]: m["mountPath"] for c in containers(spec) for m in c["volumeMounts"]}
    assert Path(src).parent == Path(mounts["shared-config"])
    assert Path(dst).parent == Path(mounts["config"])
    main = next(c for c in spec["containers"] if c["name"] == "kube-scheduler")
    assert f"--config={dst}" in main["command"]


def test_second_scheduler_reaches_its_extender_on_loopback() -> None:
    (url,) = {e["urlPrefix"] for e in scheduler_config()["extenders"]}
    assert url == "http://127.0.0.1:8888"
    spec = second_scheduler()
    sidecar = next(c for c in spec["initContainers"] if c["name"] == "extender")
    assert sidecar["restartPolicy"] == "Always", "a native sidecar, up before the scheduler"
    assert sidecar["startupProbe"]["httpGet"]["path"] == "/readyz"
    args = sidecar["args"]
    assert args[:2] == ["extender", "serve"]
    assert args[args.index("--port") + 1] == "8888"
    assert not spec.get("hostNetwork"), "loopback is the pod's own"


def test_second_scheduler_runs_the_clusters_kube_scheduler_version() -> None:
    main = next(c for c in second_scheduler()["containers"] if c["name"] == "kube-scheduler")
    version = s.pinned("kubernetes", "k8s.io/kubernetes")
    assert main["image"] == f"registry.k8s.io/kube-scheduler:{version}"


def test_second_scheduler_is_single_active() -> None:
    dep = find(s.render("base"), "Deployment", "dra-testbed-scheduler")
    if not scheduler_config().get("leaderElection", {}).get("leaderElect", True):
        assert dep["spec"]["replicas"] == 1
        assert dep["spec"]["strategy"]["type"] == "Recreate"


# -- kind ---------------------------------------------------------------------------------

KIND_CONFIG = s.MANIFESTS / "kind" / "kind-config.yaml"
KUBEADM_SCHEDULER_KUBECONFIG = "/etc/kubernetes/scheduler.conf"


def kind_scheduler() -> tuple[Obj, Obj]:
    cfg = yaml.safe_load(KIND_CONFIG.read_text())
    (cp,) = [n for n in cfg["nodes"] if n["role"] == "control-plane"]
    patches = [yaml.safe_load(p) for p in cfg["kubeadmConfigPatches"]]
    (cluster,) = [p for p in patches if p["kind"] == "ClusterConfiguration"]
    return cp, cluster["scheduler"]


def test_kind_default_scheduler_runs_the_one_scheduler_configuration() -> None:
    cp, scheduler = kind_scheduler()
    args = {a["name"]: a["value"] for a in scheduler["extraArgs"]}
    config_in_pod = args["config"]
    (vol,) = [v for v in scheduler["extraVolumes"] if v["mountPath"] == config_in_pod]
    (mount,) = [m for m in cp["extraMounts"] if m["containerPath"] == vol["hostPath"]]
    # kind resolves a relative hostPath from where it runs: the repository root.
    assert (s.REPO / mount["hostPath"]).resolve() == s.SCHEDULER_CONFIG.resolve()
    assert mount.get("readOnly") is True and vol.get("readOnly") is True


def test_kind_scheduler_profile_is_the_default_one() -> None:
    names = [p.get("schedulerName", "default-scheduler") for p in scheduler_config()["profiles"]]
    assert "default-scheduler" in names


def test_one_scheduler_configuration_names_the_kubeadm_kubeconfig() -> None:
    """With --config, kube-scheduler ignores --kubeconfig (only leader-election flags still
    apply), and a static pod has no ServiceAccount token for in-cluster config: on kind the
    file itself must name kubeadm's scheduler.conf. kwokctl overwrites the field for the local
    cluster, and the second scheduler's config step drops it."""
    kubeconfig = scheduler_config().get("clientConnection", {}).get("kubeconfig")
    assert kubeconfig == KUBEADM_SCHEDULER_KUBECONFIG, (
        f"{s.SCHEDULER_CONFIG.relative_to(s.REPO)}: clientConnection.kubeconfig is "
        f"{kubeconfig!r}; kind's kube-scheduler needs {KUBEADM_SCHEDULER_KUBECONFIG!r}"
    )


def test_kind_overlay_runs_the_extender_on_the_control_plane_loopback() -> None:
    ds = find(s.render("kind"), "DaemonSet", "dra-testbed-extender-node")
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    assert "node-role.kubernetes.io/control-plane" in spec["nodeSelector"]
    assert any(t["key"] == "node-role.kubernetes.io/control-plane" for t in spec["tolerations"])
    (c,) = spec["containers"]
    (url,) = {e["urlPrefix"] for e in scheduler_config()["extenders"]}
    port = url.rsplit(":", 1)[1]
    assert c["args"][c["args"].index("--port") + 1] == port
    assert c["args"][c["args"].index("--address") + 1] in ("0.0.0.0", "127.0.0.1")
    assert spec["serviceAccountName"] == "dra-testbed-extender", "the read-only identity"


# -- kwok ---------------------------------------------------------------------------------


def test_kwok_overlay_is_the_release_the_local_cluster_runs_and_fetches_nothing() -> None:
    k = yaml.safe_load((s.MANIFESTS / "kwok" / "kustomization.yaml").read_text())
    version = s.pinned("kwok", "sigs.k8s.io/kwok")
    assert k["resources"] == ["kwok-release.yaml", "stages.yaml"], "local files only"
    release = (s.MANIFESTS / "kwok" / "kwok-release.yaml").read_text()
    assert f"from sigs.k8s.io/kwok@{version} kustomize/kwok" in release.splitlines()[0]
    # The generated file is what the pinned module renders today (no hand edits, no drift).
    check = subprocess.run(
        [str(s.REPO / "tools/k8s/kwok-manifests.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert {"name": "registry.k8s.io/kwok/kwok", "newTag": version} in k["images"]
    for doc in yaml.safe_load_all((s.MANIFESTS / "kwok" / "stages.yaml").read_text()):
        assert doc["apiVersion"] == "kwok.x-k8s.io/v1alpha1" and doc["kind"] == "Stage"


# -- the commands the manifests give our image ----------------------------------------------


def parsers() -> dict[str, Any]:
    """The real argument parsers of the console scripts (the extender's and fleet's are
    module-private; a renamed flag must break this test, not a pod)."""
    from extender import cli as extender_cli
    from fleet import cli as fleet_cli
    from loadgen import cli as loadgen_cli

    return {
        "extender": extender_cli.parser(),
        "fleet": fleet_cli.parser(),
        "loadgen": loadgen_cli.parser(),
    }


def image_commands() -> list[tuple[str, list[str]]]:
    found = []
    for name in s.KUSTOMIZATIONS:
        for o in s.render(name):
            spec = s.pod_spec(o)
            for c in containers(spec) if spec else []:
                if c["image"].split(":")[0] != IMAGE:
                    continue
                argv = list(c.get("command") or []) + list(c.get("args") or [])
                if argv and argv[0] in ("extender", "fleet", "loadgen"):
                    found.append((f"{s.origin(o)} container {c['name']}", argv))
    return found


def test_every_command_given_to_the_image_parses_with_its_cli() -> None:
    commands = image_commands()
    assert {argv[0] for _, argv in commands} == {"extender", "fleet", "loadgen"}
    cli = parsers()
    for where, argv in commands:
        try:
            cli[argv[0]].parse_args(argv[1:])
        except SystemExit as e:
            raise AssertionError(f"{where}: {' '.join(argv)} does not parse") from e


def test_services_listen_on_all_interfaces_in_pods() -> None:
    """Probes need the pod IP: the port they use listens on all interfaces. Every extender
    serves its probes and /metrics on the admin port, apart from the scheduler's calls (2,000
    concurrent scrapes on the scheduler's port delayed /filter past its 5 s timeout)."""
    for where, argv in image_commands():
        if argv[:2] in (["extender", "serve"], ["fleet", "serve"]):
            flag = "--host"
            if argv[0] == "extender":
                assert "--admin-port" in argv, f"{where}: /metrics on the scheduler's port"
                assert argv[argv.index("--admin-port") + 1] != argv[argv.index("--port") + 1]
                flag = "--admin-address"
            assert argv[argv.index(flag) + 1] == "0.0.0.0", f"{where}: probes need the pod IP"


def test_extender_metrics_ports_are_the_admin_ports() -> None:
    """The Service ports Prometheus scrapes (http-metrics) and the probes of an extender
    container name its admin port, never the port the scheduler calls."""
    rendered = [o for name in s.KUSTOMIZATIONS for o in s.render(name)]
    admin_pods = set()
    for o in rendered:
        spec = s.pod_spec(o)
        for c in containers(spec) if spec else []:
            argv = list(c.get("command") or []) + list(c.get("args") or [])
            if argv[:2] != ["extender", "serve"]:
                continue
            admin = int(argv[argv.index("--admin-port") + 1])
            names = {p.get("name"): p["containerPort"] for p in c.get("ports") or []}
            assert names.get("admin") == admin, c["name"]
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                if probe in c:
                    assert c[probe]["httpGet"]["port"] == "admin", (c["name"], probe)
            admin_pods.add(o["metadata"]["name"])
    assert admin_pods
    scraped = [
        p
        for o in rendered
        if o.get("kind") == "Service" and o["metadata"]["name"] != "dra-testbed-fleet"
        for p in o["spec"].get("ports") or []
        if p.get("name") == "http-metrics"
    ]
    assert scraped and all(p.get("targetPort") == "admin" for p in scraped), scraped
