import itertools
from pathlib import Path

import yaml

from testbed.cluster import binaries, local, paths


def test_create_command_uses_local_binaries_our_configs_and_loopback_only(tmp_path: Path) -> None:
    b = binaries.Binaries(tmp_path)
    config = local.ClusterConfig(name="x", home=tmp_path, apiserver_port=32001)
    cmd = local.create_command(config, b, tmp_path / "sched.yaml")
    args = dict(itertools.pairwise(cmd))
    assert cmd[:3] == [str(tmp_path / "kwokctl"), "create", "cluster"]
    assert args["--runtime"] == "binary"
    for flag, name in [
        ("--kube-apiserver-binary", "kube-apiserver"),
        ("--kube-controller-manager-binary", "kube-controller-manager"),
        ("--kube-scheduler-binary", "kube-scheduler"),
        ("--etcd-binary", "etcd"),
        ("--kwok-controller-binary", "kwok"),
    ]:
        assert args[flag] == str(tmp_path / name)
    assert args["--kube-scheduler-config"] == str(tmp_path / "sched.yaml")
    configs = [v for k, v in itertools.pairwise(cmd) if k == "--config"]
    kwok = paths.manifests_dir() / "kwok"
    assert configs == [str(kwok / "kwokctl.yaml"), str(kwok / "stages.yaml")]
    options = yaml.safe_load((kwok / "kwokctl.yaml").read_text())["options"]
    assert options["bindAddress"] == "127.0.0.1"
    assert args["--kube-apiserver-port"] == "32001"
    assert args["--kubeconfig"] == ""
    assert "--disable-qps-limits" in cmd


def test_the_shipped_scheduler_config_names_the_extender_as_the_issue_requires() -> None:
    doc = yaml.safe_load(
        (paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml").read_text()
    )
    (ext,) = doc["extenders"]
    assert ext["urlPrefix"] == "http://127.0.0.1:8888"
    assert ext["filterVerb"] == "filter" and ext["prioritizeVerb"] == "prioritize"
    assert ext["nodeCacheCapable"] is True and ext["ignorable"] is True
    assert doc["clientConnection"]["qps"] >= 200


def test_scheduler_config_without_extender_keeps_everything_else() -> None:
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    with_ext = yaml.safe_load(local.scheduler_config_text(source, extender=True))
    without = yaml.safe_load(local.scheduler_config_text(source, extender=False))
    assert "extenders" not in without
    with_ext.pop("extenders")
    assert with_ext == without


def test_stages_cover_node_and_pod_lifecycles_with_a_per_pod_job_delay() -> None:
    stages = list(yaml.safe_load_all((paths.manifests_dir() / "kwok" / "stages.yaml").read_text()))
    by_name = {s["metadata"]["name"]: s for s in stages}
    assert set(by_name) == {
        "node-initialize",
        "node-heartbeat-with-lease",
        "pod-ready",
        "pod-complete",
        "pod-delete",
    }
    assert "delay" not in by_name["pod-ready"]["spec"]  # Running at once
    complete = by_name["pod-complete"]["spec"]
    assert (
        "pod-complete.stage.kwok.x-k8s.io/delay"
        in complete["delay"]["durationFrom"]["expressionFrom"]
    )
    assert {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]} in (
        complete["selector"]["matchExpressions"]
    )


def test_port_in_use_detects_a_bound_port() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert local.port_in_use(s.getsockname()[1])


def test_the_extender_port_is_rewritten_only_for_the_loopback_extender() -> None:
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    doc = yaml.safe_load(local.scheduler_config_text(source, extender=True, extender_port=18888))
    assert [e["urlPrefix"] for e in doc["extenders"]] == ["http://127.0.0.1:18888"]
