import itertools
from pathlib import Path

import pytest
import yaml

from testbed import cli, vocab
from testbed.cluster import binaries, kwok_shards, local, paths, ports


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
    assert configs == [
        str(kwok / "kwokctl.yaml"),
        str(kwok / "kwok-controller.yaml"),
        str(kwok / "stages.yaml"),
    ]
    options = yaml.safe_load((kwok / "kwokctl.yaml").read_text())["options"]
    assert options["bindAddress"] == "127.0.0.1"
    assert args["--kube-apiserver-port"] == "32001"
    assert args["--kubeconfig"] == ""
    assert "--disable-qps-limits" in cmd
    extra = [v for k, v in itertools.pairwise(cmd) if k == "--extra-args"]
    kubeconfig = config.kubeconfig
    assert extra == [  # kwok: all nodes, 1 controller; each component's first value leads
        "kube-controller-manager=controllers=*,-ttl",
        f"kube-scheduler=authentication-kubeconfig={kubeconfig}",
        "kube-controller-manager=leader-elect=false",
        f"kube-scheduler=authorization-kubeconfig={kubeconfig}",
    ]


def test_kwok_controller_options_raise_the_node_workers_above_kwoks_default_of_4() -> None:
    (doc,) = yaml.safe_load_all(
        (paths.manifests_dir() / "kwok" / "kwok-controller.yaml").read_text()
    )
    assert doc["kind"] == "KwokConfiguration"
    assert doc["options"]["nodePlayStageParallelism"] > 4
    assert doc["options"]["nodeLeaseParallelism"] > 4


def test_sharded_cluster_narrows_kwokctls_controller_to_nodes_no_shard_controller_takes(
    tmp_path: Path,
) -> None:
    b = binaries.Binaries(tmp_path)
    config = local.ClusterConfig(name="x", home=tmp_path, kwok_shards=3)
    cmd = local.create_command(config, b, tmp_path / "sched.yaml")
    extra = [v for k, v in itertools.pairwise(cmd) if k == "--extra-args"]
    # kwokctl v0.8.0 panics unless every component's first value leads (see create_command).
    components = [v.split("=", 1)[0] for v in extra]
    firsts = list(dict.fromkeys(components))
    assert components[: len(firsts)] == firsts
    assert [v for v in extra if v.startswith("kwok-controller=")] == [
        "kwok-controller=manage-all-nodes=false",
        "kwok-controller=manage-nodes-with-label-selector=testbed.dra.io/kwok-shard notin (1,2)",
    ]


def test_shard_count_is_read_back_from_the_default_controllers_arguments() -> None:
    for shards in (1, 2, 5):
        args = ["--manage-all-nodes=true", "--kubeconfig=k"]
        args += ["--" + a.split("=", 1)[1] for a in kwok_shards.kwokctl_extra_args(shards)]
        assert kwok_shards.shards_of(args) == shards
    assert kwok_shards.shards_of(["--manage-nodes-with-label-selector=team=a"]) == 1


def test_shard_controller_is_kwokctls_narrowed_to_its_label_on_its_own_port() -> None:
    base = kwok_shards.Controller(
        binary="/c/bin/kwok-controller",
        args=[
            "--manage-all-nodes=true",
            "--kubeconfig=/c/kubeconfig.yaml",
            "--config=/c/kwok.yaml",
            "--node-port=32763",
            "--server-address=127.0.0.1:32763",
            "--node-lease-duration-seconds=200",
            "--manage-all-nodes=false",
            "--manage-nodes-with-label-selector=testbed.dra.io/kwok-shard notin (1)",
        ],
        work_dir="/c",
    )
    argv = kwok_shards.shard_argv(base, 1, 40001)
    assert argv == [
        "/c/bin/kwok-controller",
        "--kubeconfig=/c/kubeconfig.yaml",
        "--config=/c/kwok.yaml",
        "--node-lease-duration-seconds=200",
        "--manage-nodes-with-label-selector=testbed.dra.io/kwok-shard=1",
        "--node-port=40001",
        "--server-address=127.0.0.1:40001",
    ]


def test_kwokctls_saved_controller_is_found_in_the_cluster_config(tmp_path: Path) -> None:
    docs = [
        {
            "kind": "KwokctlConfiguration",
            "components": [
                {"name": "etcd", "binary": "/e", "args": []},
                {"name": "kwok-controller", "binary": "/k", "args": ["--a=1"], "workDir": "/w"},
            ],
        },
        {"kind": "Stage", "metadata": {"name": "node-initialize"}},
    ]
    (tmp_path / "kwok.yaml").write_text(yaml.safe_dump_all(docs))
    assert kwok_shards.default_controller(tmp_path) == kwok_shards.Controller("/k", ["--a=1"], "/w")
    assert kwok_shards.default_controller(tmp_path / "missing") is None


def test_the_shipped_scheduler_config_names_the_extender_as_the_issue_requires() -> None:
    doc = yaml.safe_load(
        (paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml").read_text()
    )
    scores, filters = doc["extenders"]
    for ext in (scores, filters):
        assert ext["urlPrefix"] == "http://127.0.0.1:8888"
        assert ext["nodeCacheCapable"] is True and ext["ignorable"] is True
    assert scores["prioritizeVerb"] == "prioritize" and "managedResources" not in scores
    # Only pods that ask for the placement resource are filtered; the scheduler's own fit
    # check ignores it.
    assert filters["filterVerb"] == "filter" and "prioritizeVerb" not in filters
    assert filters["managedResources"] == [
        {"name": vocab.PLACEMENT_RESOURCE, "ignoredByScheduler": True}
    ]
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
        assert ports.in_use(s.getsockname()[1])


def test_the_extender_port_is_rewritten_only_for_the_loopback_extender() -> None:
    source = paths.manifests_dir() / "scheduler" / "kube-scheduler-config.yaml"
    doc = yaml.safe_load(local.scheduler_config_text(source, extender=True, extender_port=18888))
    assert [e["urlPrefix"] for e in doc["extenders"]] == ["http://127.0.0.1:18888"] * 2


def test_bad_kwok_shard_count_is_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRA_TESTBED_HOME", str(tmp_path))
    for bad in ("0", "17"):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["--name", "x", "up", "--kwok-shards", bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("testbed: error: --kwok-shards") and "\n" not in err
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_clusters_version_skew_and_release_come_from_its_schedulers_cache_directory(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "bin" / "kube-v1.38.0-beta.0+v1.37.2_etcd-v3.7.3_kwok-v0.8.0"
    cache.mkdir(parents=True)
    (cache / "kube-scheduler").touch()
    (cache / binaries.PREVIEW_FILE).write_text("kube-scheduler v1.38.0-beta.0 ...\n")
    cfg = local.ClusterConfig(name="skew", home=tmp_path / "home")
    (cfg.cluster_dir / "bin").mkdir(parents=True)
    (cfg.cluster_dir / "bin" / "kube-scheduler").symlink_to(cache / "kube-scheduler")
    cluster = local.LocalCluster(cfg)
    skew = cluster.version_skew()
    assert skew is not None and "v1.38.0-beta.0 is newer than kube-apiserver v1.37.2" in skew
    assert cluster._created_versions() == (
        "1.38-beta",
        ("kube-scheduler v1.38.0-beta.0 ...",),
        skew,
    )
