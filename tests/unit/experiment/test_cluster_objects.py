"""What an existing cluster gets per variant, rendered from the shipped manifests."""

from __future__ import annotations

from typing import Any

import yaml

from experiment.sites import cluster_objects as co
from experiment.sites.site import SchedulerSetup
from testbed.cluster import paths

M = co.Manifests.load(paths.manifests_dir())
SHIPPED = SchedulerSetup()
KNOB = SchedulerSetup(extender=False, config={"percentageOfNodesToScore": 30})
WEIGHTS = SchedulerSetup(extender_args=("--weight-packing", "0"))


def render(setup: SchedulerSetup) -> tuple[dict[str, Any], dict[str, Any]]:
    return co.variant(M, setup, image="reg/dra-testbed:1", scheduler_image="reg/ks:v1")


def containers(dep: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = dep["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*spec.get("initContainers", ()), *spec["containers"]]}


def test_each_setup_gets_its_own_stable_names_labels_and_selector() -> None:
    names = {co.variant_name(s) for s in (SHIPPED, KNOB, WEIGHTS)}
    assert len(names) == 3
    assert co.variant_name(SchedulerSetup(config={"a": 1})) == co.variant_name(
        SchedulerSetup(config={"a": 1})
    )
    for setup in (SHIPPED, KNOB, WEIGHTS):
        cm, dep = render(setup)
        name = co.variant_name(setup)
        assert cm["metadata"]["name"] == dep["metadata"]["name"] == name
        assert len(name) <= 63
        selector = dep["spec"]["selector"]["matchLabels"]
        assert selector == {"app.kubernetes.io/name": name}
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= pod_labels.items()
        volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
        assert volumes["shared-config"]["configMap"]["name"] == name


def test_config_map_carries_the_overrides_under_the_variant_name() -> None:
    cm, dep = render(KNOB)
    cfg = yaml.safe_load(cm["data"][co.CONFIG_KEY])
    assert cfg["percentageOfNodesToScore"] == 30
    name = co.variant_name(KNOB)
    assert cfg["profiles"] == [
        {"schedulerName": name},
        {"schedulerName": f"{name}-gang", "percentageOfNodesToScore": 100},
    ]
    assert "extenders" not in cfg
    assert "kubeconfig" not in cfg["clientConnection"]
    assert cfg["clientConnection"]["qps"] == M.scheduler_config["clientConnection"]["qps"]
    assert "extender" not in containers(dep)
    assert containers(dep)["config"]["command"][-1] == co.variant_name(KNOB)


def test_overrides_replace_top_level_fields_as_on_the_local_site() -> None:
    cm, _ = render(SchedulerSetup(config={"clientConnection": {"qps": 7, "kubeconfig": "x"}}))
    cfg = yaml.safe_load(cm["data"][co.CONFIG_KEY])
    assert cfg["clientConnection"] == {"qps": 7}
    assert cfg["extenders"] == M.scheduler_config["extenders"]
    assert "kubeconfig" in M.scheduler_config["clientConnection"]  # the shipped one untouched


def test_extender_sidecar_takes_the_variant_flags_and_images_are_set() -> None:
    _, dep = render(WEIGHTS)
    c = containers(dep)
    assert c["extender"]["args"][-2:] == ["--weight-packing", "0"]
    assert c["extender"]["image"] == c["config"]["image"] == "reg/dra-testbed:1"
    assert c["kube-scheduler"]["image"] == "reg/ks:v1"
    shipped_args = containers(render(SHIPPED)[1])["extender"]["args"]
    assert shipped_args == containers(M.scheduler_deployment)["extender"]["args"]


def test_rendering_leaves_the_loaded_manifests_untouched() -> None:
    before = yaml.safe_dump(M.scheduler_deployment)
    render(WEIGHTS)
    render(KNOB)
    assert yaml.safe_dump(M.scheduler_deployment) == before


def test_kwok_objects_put_crds_first_and_pin_the_image() -> None:
    objs = co.kwok(M)
    kinds = [o["kind"] for o in objs]
    first_other = next(i for i, k in enumerate(kinds) if k != "CustomResourceDefinition")
    assert "CustomResourceDefinition" not in kinds[first_other:]
    assert "Stage" in kinds
    dep = next(o for o in objs if o["kind"] == "Deployment")
    assert containers(dep)["kwok-controller"]["image"].endswith(":v0.8.0")


def test_shared_objects_cover_namespace_device_classes_and_rbac() -> None:
    kinds = [(o["kind"], o["metadata"]["name"]) for o in co.shared(M)]
    assert kinds[0] == ("Namespace", co.NAMESPACE)
    assert ("DeviceClass", "gpu.nvidia.com") in kinds
    assert ("ServiceAccount", co.SCHEDULER) in kinds
    assert ("ClusterRole", "dra-testbed-extender") in kinds


def test_scheduler_image_follows_the_cluster_release() -> None:
    assert co.scheduler_image("v1.36.3") == "registry.k8s.io/kube-scheduler:v1.36.3"
    assert co.scheduler_image("v1.35.4+k3s1") == "registry.k8s.io/kube-scheduler:v1.35.4"
    assert co.scheduler_image("v1.34.2-gke.1000") == "registry.k8s.io/kube-scheduler:v1.34.2"


def test_pod_proxy_addresses_https_and_plain_ports() -> None:
    assert (
        co.pod_proxy("ns", "p", 10259, "/metrics", https=True)
        == "kube:/api/v1/namespaces/ns/pods/https:p:10259/proxy/metrics"
    )
    assert co.pod_proxy("ns", "p", 8888, "/metrics", https=False).endswith(
        "pods/p:8888/proxy/metrics"
    )


def test_feature_gates_reach_kube_scheduler_and_the_name() -> None:
    gates = {"DRAPartitionableDevices": True, "DRADeviceTaints": False}
    _, dep = co.variant(M, KNOB, image="i", scheduler_image="s", feature_gates=gates)
    flags = containers(dep)["kube-scheduler"]["command"]
    assert flags[-1] == "--feature-gates=DRADeviceTaints=false,DRAPartitionableDevices=true"
    assert dep["metadata"]["name"] == co.variant_name(KNOB, gates) != co.variant_name(KNOB)
    _, plain = render(KNOB)
    assert not any(
        f.startswith("--feature-gates") for f in containers(plain)["kube-scheduler"]["command"]
    )


def test_two_runs_of_one_setup_get_names_of_their_own() -> None:
    mine = co.variant(M, KNOB, image="i", scheduler_image="s", run="a1b2c3")
    theirs = co.variant(M, KNOB, image="i", scheduler_image="s", run="d4e5f6")
    names = {o["metadata"]["name"] for o in (*mine, *theirs)}
    assert names == {co.variant_name(KNOB, run="a1b2c3"), co.variant_name(KNOB, run="d4e5f6")}
    assert all(len(n) <= 63 for n in names)
    assert mine[1]["spec"]["selector"] != theirs[1]["spec"]["selector"]


def test_kwoks_cluster_wide_flow_schema_is_installed_only_when_asked() -> None:
    assert "FlowSchema" not in {o["kind"] for o in co.kwok(M)}
    assert "FlowSchema" in {o["kind"] for o in co.kwok(M, flow_control=True)}


def test_a_prioritize_only_variant_calls_the_extender_without_its_filter_verb() -> None:
    prio = SchedulerSetup(extender_filter="none")
    assert not prio.shipped
    assert co.variant_name(prio) not in {co.variant_name(s) for s in (SHIPPED, KNOB, WEIGHTS)}
    cm, dep = render(prio)
    (entry,) = yaml.safe_load(cm["data"][co.CONFIG_KEY])["extenders"]
    shipped = M.scheduler_config["extenders"]
    (scores,) = [e for e in shipped if "prioritizeVerb" in e]
    assert any("filterVerb" in e for e in shipped) and "filterVerb" not in entry
    assert entry == scores, "the filter's own entry is dropped, the scoring one kept whole"
    assert "extender" in containers(dep)  # the sidecar still answers prioritize
    assert SchedulerSetup(extender=False, extender_filter="none").extender_entries(shipped) == []
    both = {"urlPrefix": "u", "filterVerb": "filter", "prioritizeVerb": "prioritize"}
    assert SchedulerSetup(extender_filter="none").extender_entries([both]) == [
        {"urlPrefix": "u", "prioritizeVerb": "prioritize"}
    ]


def test_a_filter_every_pod_variant_drops_only_the_routing() -> None:
    every = SchedulerSetup(extender_filter="all")
    assert not every.shipped
    assert co.variant_name(every) != co.variant_name(SHIPPED)
    shipped = M.scheduler_config["extenders"]
    entries = every.extender_entries(shipped)
    assert len(entries) == len(shipped) and not any("managedResources" in e for e in entries)
    assert sum("filterVerb" in e for e in entries) == 1
