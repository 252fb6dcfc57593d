from testbed.kube import resources as r


def test_core_collection_and_object_paths() -> None:
    assert r.NODES.path() == "/api/v1/nodes"
    assert r.NODES.path(name="n1") == "/api/v1/nodes/n1"
    assert r.PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert r.PODS.path("ns", "p") == "/api/v1/namespaces/ns/pods/p"


def test_group_paths_and_cluster_wide_lists_of_namespaced_kinds() -> None:
    assert r.RESOURCE_SLICES.path(name="a.b") == "/apis/resource.k8s.io/v1/resourceslices/a.b"
    assert r.RESOURCE_CLAIMS.path() == "/apis/resource.k8s.io/v1/resourceclaims"
    assert r.JOBS.api_version == "batch/v1"
    assert r.NODES.api_version == "v1"


def test_names_are_quoted_into_paths() -> None:
    assert r.NODES.path(name="a/b") == "/api/v1/nodes/a%2Fb"


def test_keys_and_selectors() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"b": "2", "a": "1"}}}
    assert r.key_of(pod) == "ns/p"
    assert r.key_of({"metadata": {"name": "n"}}) == "n"
    assert r.label_selector(r.labels_of(pod)) == "a=1,b=2"


def test_request_paths_report_their_resource_never_an_object_name() -> None:
    assert r.resource_of(r.NODES.path()) == "nodes"
    assert r.resource_of(r.NODES.path(name="node-7")) == "nodes"
    assert r.resource_of(r.PODS.path("ns", "p")) == "pods"
    assert r.resource_of(r.PODS.path("ns")) == "pods"
    assert r.resource_of(r.NAMESPACES.path(name="ns")) == "namespaces"
    assert r.resource_of(r.RESOURCE_SLICES.path(name="a.b") + "?watch=1") == "resourceslices"
    assert r.resource_of("/apis/testbed.dra.io/v1alpha1/fleets/f/status") == "fleets"
    assert r.resource_of("/version") == "version"
    assert r.resource_of("/metrics") == "metrics"
