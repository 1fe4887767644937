"""The differential harness's own rules, without a cluster: rendering fences each case in,
and the written equivalence compares what it says."""

from __future__ import annotations

import casekit
import cases
import harness
import pytest
import render
import run
from harness import Side, compare


def _case(kind: str = "provision") -> cases.Case:
    return cases.Case("x", ("resources",), cases.DEFAULT, cases.pods("a", 2), kind=kind)


def test_render_fences_the_case() -> None:
    case = _case()
    [ns, np] = render.base_objects(case)
    assert ns["metadata"]["name"] == "fx-x"
    tmpl = np["spec"]["template"]
    assert np["metadata"]["name"] == "x-default"
    assert tmpl["metadata"]["labels"][render.CASE_LABEL] == "x"
    assert {"key": render.CASE_LABEL, "value": "x", "effect": "NoSchedule"} in tmpl["spec"][
        "taints"
    ]
    assert tmpl["spec"]["nodeClassRef"]["kind"] == "KWOKNodeClass"
    p = render.batch_pods(case)[0]
    assert p["metadata"]["namespace"] == "fx-x"
    assert p["spec"]["nodeSelector"][render.CASE_LABEL] == "x"
    # the neutral case is not modified by rendering
    assert "nodeSelector" not in case.pods[0]["spec"]


def test_every_case_renders_and_ids_are_unique() -> None:
    ids = [c.id for c in cases.CASES]
    assert len(ids) == len(set(ids)) >= 40
    for c in cases.CASES:
        assert render.base_objects(c)
        if c.kind == "disrupt":
            assert c.change is not None and c.before


def test_equivalence_provisioning() -> None:
    case = _case()
    k = Side(claims=[("x-default", "c-2x", "spot", "test-zone-a")])
    assert compare(case, k, Side(claims=list(k.claims))) == []
    other_zone = Side(claims=[("x-default", "c-2x", "spot", "test-zone-b")])
    assert [d.split(":")[0] for d in compare(case, k, other_zone)] == ["zones"]
    other_type = Side(claims=[("x-default", "c-4x", "spot", "test-zone-a")])
    assert [d.split(":")[0] for d in compare(case, k, other_type)] == ["instance/capacity types"]
    assert compare(case, k, Side(claims=[], pending=["a-0"]))  # count and pending differ
    assert compare(case, Side(error="boom"), k)


def test_equivalence_disruption() -> None:
    case = _case("disrupt")
    k = Side(removed=["n1"], reasons=["Underutilized"], claims=[("", "c-1x", "on-demand", "z")])
    j = Side(removed=["n1"], reasons=["Underutilized"], claims=[("", "c-1x", "on-demand", "y")])
    assert compare(case, k, j) == []  # a replacement's zone is not compared
    assert compare(case, k, Side(removed=["n1"], reasons=["Empty"], claims=j.claims))
    assert compare(case, k, Side(removed=[], reasons=["Underutilized"], claims=j.claims))


def test_interchangeable_nodes_are_equal_candidates() -> None:
    case = _case("disrupt")
    k = Side(removed=["n1"], removed_shapes=["p/c-2x/on-demand/a[small]"], reasons=["Empty"])
    j = Side(removed=["n2"], removed_shapes=["p/c-2x/on-demand/a[small]"], reasons=["Empty"])
    assert compare(case, k, j) == []
    j.removed_shapes = ["p/c-4x/on-demand/a[small]"]
    assert compare(case, k, j)


def test_interchangeable_pending_pods_compare_equal() -> None:
    """Which of identical pods stays pending is a tie (Karpenter: creation time, then UID);
    a pod of another shape pending instead is a real difference."""
    case = cases.Case(
        "x", ("resources",), cases.DEFAULT, [*cases.pods("a", 2), cases.pod("b-0", cpu="1")]
    )
    assert compare(case, Side(pending=["a-0"]), Side(pending=["a-1"])) == []
    assert compare(case, Side(pending=["a-0"]), Side(pending=["b-0"]))
    assert compare(case, Side(pending=["a-0"]), Side(pending=["a-0", "a-1"]))


def test_zone_ties_compare_the_zone_pattern_only() -> None:
    claim = ("x-default", "c-2x", "spot")
    k = Side(claims=[(*claim, "test-zone-b"), (*claim, "test-zone-c")])
    j = Side(claims=[(*claim, "test-zone-a"), (*claim, "test-zone-b")])
    same_zone = Side(claims=[(*claim, "test-zone-a"), (*claim, "test-zone-a")])
    plain = _case()
    assert [d.split(":")[0] for d in compare(plain, k, j)] == ["zones"]
    tied = cases.Case("x", ("resources",), cases.DEFAULT, cases.pods("a", 2), zone_ties="why")
    assert compare(tied, k, j) == []
    assert [d.split(":")[0] for d in compare(tied, k, same_zone)] == ["zones"]


def test_overlays_are_named_after_the_case_and_select_only_its_pools() -> None:
    case = cases.Case(
        "x",
        ("NodeOverlay",),
        {"a": cases.pool(), "b": cases.pool()},
        overlays={"cheap": casekit.overlay(cases.req(cases.IT, "In", "m-2x"), price="0.001")},
    )
    docs = render.base_objects(case)
    assert [d["kind"] for d in docs] == ["Namespace", "NodeOverlay", "NodePool", "NodePool"]
    ov = docs[1]
    assert ov["apiVersion"] == "karpenter.sh/v1alpha1"
    assert ov["metadata"]["name"] == "x-cheap"
    assert ov["spec"]["price"] == "0.001"
    assert ov["spec"]["requirements"] == [
        {"key": cases.IT, "operator": "In", "values": ["m-2x"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x-a", "x-b"]},
    ]
    assert len(case.overlays["cheap"]["requirements"]) == 1  # the neutral case is untouched


def test_joiner_runs_with_karpenters_gates() -> None:
    gates = harness.joiner_gates(run.KARPENTER_FEATURE_GATES)
    assert gates.node_overlay and gates.reserved_capacity and gates.static_capacity
    assert not gates.spot_to_spot_consolidation and not gates.node_repair
    assert gates == harness.GATES  # the harness's tests run with the same gates
    # a gate Joiner does not model is fine off, an error on
    assert harness.joiner_gates("Unmodelled=false,NodeOverlay=true").node_overlay
    with pytest.raises(ValueError, match="Unmodelled"):
        harness.joiner_gates("Unmodelled=true")


def _node(ready: str, *taints: tuple[str, str]) -> cases.Obj:
    return {
        "spec": {"taints": [{"key": k, "effect": e} for k, e in taints]},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def test_a_node_is_unreachable_once_unknown_with_both_taints() -> None:
    key = "node.kubernetes.io/unreachable"
    assert harness.unreachable(_node("Unknown", (key, "NoSchedule"), (key, "NoExecute")))
    assert not harness.unreachable(_node("Unknown", (key, "NoSchedule")))
    assert not harness.unreachable(_node("True", (key, "NoSchedule"), (key, "NoExecute")))
    assert not harness.unreachable({"metadata": {}})


def test_not_ready_names_nodes_by_the_pods_they_run() -> None:
    pods = [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}},
        {"metadata": {"name": "b"}, "spec": {"nodeName": "n1"}},
        {"metadata": {"name": "c"}, "spec": {}},
    ]
    assert harness.nodes_of_pods(pods, ("b", "a")) == ["n1"]
    with pytest.raises(ValueError, match="c is not bound"):
        harness.nodes_of_pods(pods, ("c",))
    with pytest.raises(ValueError, match="d is missing"):
        harness.nodes_of_pods(pods, ("d",))
    [case] = cases.by_id(["not-ready-budget"])
    assert case.change is not None and case.change.not_ready == ("nr-0",)
    assert not set(case.change.not_ready) & set(case.change.delete_pods)
