from testbed.kube import crds


def test_a_crd_is_established_only_when_its_condition_is_true() -> None:
    def crd(*conditions: tuple[str, str]) -> dict[str, object]:
        return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}

    assert crds.is_established(crd(("NamesAccepted", "True"), ("Established", "True")))
    assert not crds.is_established(crd(("Established", "False")))
    assert not crds.is_established(crd(("NamesAccepted", "True")))
    assert not crds.is_established({"metadata": {"name": "fleets.testbed.dra.io"}})
