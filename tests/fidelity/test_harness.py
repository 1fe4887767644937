"""The differential harness's own rules, without a cluster: rendering fences each case in,
and the written equivalence compares what it says."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import casekit
import cases
import harness
import pytest
import render
import report
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


# A kube-scheduler race, as in generated case gen-481964-7: Karpenter plans a c-8x for three
# 2500m pods and a c-1x for each of three 600m pods; kube-scheduler binds small-0 on the
# c-8x first, so big-2 no longer fits there and a second round launches a c-4x for it.
_POOL = "x-default"


def _claim(kind: str, zone: str = "test-zone-b") -> tuple[str, str, str, str]:
    return (_POOL, kind, "spot", zone)


def _race_case() -> cases.Case:
    return cases.Case(
        "x",
        ("resources",),
        cases.DEFAULT,
        [*cases.pods("big", 3, cpu="2500m"), *cases.pods("small", 3, cpu="600m")],
    )


def _raced_trace() -> harness.Trace:
    return harness.Trace(
        claims={
            "nc-8": _claim("c-8x"),
            "nc-1a": _claim("c-1x"),
            "nc-1b": _claim("c-1x"),
            "nc-1c": _claim("c-1x"),
            "nc-4": _claim("c-4x"),
        },
        rounds={"nc-8": 3, "nc-1a": 3, "nc-1b": 3, "nc-1c": 3, "nc-4": 4},
        claim_node={"nc-8": "n8", "nc-1a": "n1a", "nc-1b": "n1b", "nc-1c": "n1c", "nc-4": "n4"},
        nominated={
            "big-0": "nc-8",
            "big-1": "nc-8",
            "big-2": "nc-8",
            "small-0": "nc-1a",
            "small-1": "nc-1b",
            "small-2": "nc-1c",
        },
        bound={
            "big-0": "n8",
            "big-1": "n8",
            "big-2": "n4",
            "small-0": "n8",
            "small-1": "n1b",
            "small-2": "n1c",
        },
    )


def _joiners_plan() -> Side:
    return Side(claims=[_claim("c-8x"), *[_claim("c-1x")] * 3])


def test_a_pod_bound_elsewhere_than_its_launched_nominated_claim_is_a_race() -> None:
    trace = _raced_trace()
    assert harness.race(trace) == ["big-2", "small-0"]
    # every pod where Karpenter nominated it: no race
    trace.bound.update({"big-2": "n8", "small-0": "n1a"})
    assert harness.race(trace) == []
    # a pending pod is not bound elsewhere
    trace.bound["big-2"] = ""
    assert harness.race(trace) == []


def test_a_displaced_pod_whose_nominated_claim_never_launched_is_no_race() -> None:
    """big-2's NodeClaim never got a node, so its later NodeClaim is ordinary provisioning."""
    trace = _raced_trace()
    trace.claims["nc-4a"] = _claim("c-4x")
    trace.rounds["nc-4a"] = 3
    trace.claim_node["nc-4a"] = ""
    trace.nominated.update({"big-2": "nc-4a", "small-0": "nc-1a"})
    trace.bound["small-0"] = "n1a"
    assert harness.race(trace) == []
    k = Side(claims=list(trace.claims.values()))
    assert harness.compare_with_plan(_race_case(), trace, _joiners_plan()) == (None, None)
    assert harness.compare(_race_case(), k, _joiners_plan())  # stays a disagreement


def test_the_first_decision_leaves_out_the_claim_of_a_displaced_pod() -> None:
    trace = _raced_trace()
    first = harness.first_decision(trace)
    assert sorted(first.claims) == sorted(_joiners_plan().claims)
    assert first.pending == []
    # the live outcome has one NodeClaim more than Joiner's plan; the plan agrees
    k = Side(claims=list(trace.claims.values()))
    assert compare(_race_case(), k, _joiners_plan())
    assert harness.compare_with_plan(_race_case(), trace, _joiners_plan()) == (first, [])


def test_a_daemonset_pod_left_pending_by_a_race_is_not_part_of_the_decision() -> None:
    """gen-2222-15: an existing node's DaemonSet pod, unbound at the snapshot, lost its room
    there to pods kube-scheduler bound as they were displaced; Karpenter never plans it, so
    the first decision leaves it out, on Joiner's side too (a pinned pod that does not fit
    is unschedulable there)."""
    trace = _raced_trace()
    trace.bound["agent-x"] = ""
    assert harness.first_decision(trace).pending == ["agent-x"]  # as any pod, without the rule
    trace.daemon_pods = {"agent-x"}
    first = harness.first_decision(trace)
    assert first.pending == []
    assert harness.compare_with_plan(_race_case(), trace, _joiners_plan()) == (first, [])
    refused = replace(_joiners_plan(), pending=["agent-x"])
    assert harness.compare_with_plan(_race_case(), trace, refused) == (first, [])
    assert trace.as_json()["daemonPods"] == ["agent-x"]


def test_pods_bound_on_launch_are_pending_in_the_decision_compared() -> None:
    """A pod Joiner's plan has kube-scheduler bind to a new NodeClaim once it registers
    (``Placement.afterLaunch``, gen-1313-14) was left out by Karpenter's round: compared
    with that round's decision, it is pending; compared with the end state, it is not."""
    trace = _raced_trace()
    trace.bound["extra"] = ""  # never nominated: the first decision left it out
    first = harness.first_decision(trace)
    assert first.pending == ["extra"]
    bound_on_launch = Side(claims=_joiners_plan().claims, left_out=["extra"])
    assert bound_on_launch.as_decided().pending == ["extra"]
    assert harness.compare_with_plan(_race_case(), trace, bound_on_launch) == (first, [])
    # the plain comparison takes the end state: "extra" runs there
    assert compare(_race_case(), replace(first, pending=[]), bound_on_launch) == []
    assert bound_on_launch.as_json()["afterLaunch"] == ["extra"]


def test_a_pod_bound_on_launch_to_an_existing_node_is_not_on_it_in_the_decision() -> None:
    """A pod Joiner's plan has kube-scheduler bind to an existing node once the new
    NodeClaims register (``Placement.afterLaunch`` without ``onNodeClaim``) runs there in
    the end state, and is pending, not on that node, in Karpenter's decision."""
    side = Side(on_existing=3, left_out=["extra"], left_out_on_existing=1)
    decided = side.as_decided()
    assert (decided.pending, decided.on_existing, decided.left_out) == (["extra"], 2, [])


def test_a_later_round_for_pods_first_nominated_to_it_stays_in_the_first_decision() -> None:
    """A second round Karpenter plans for pods the first left out (a limit, say) is part of
    its decision: only a round that provisions a displaced pod again ends it."""
    trace = _raced_trace()
    trace.nominated["big-2"] = "nc-4"  # first nominated to the c-4x: not displaced
    trace.bound["small-0"] = "n8"
    first = harness.first_decision(trace)
    assert len(first.claims) == 5
    # and a disagreement whose plan differs from Joiner's stays one
    _, plan = harness.compare_with_plan(_race_case(), trace, _joiners_plan())
    assert plan and plan[0].startswith("NodeClaims per NodePool")


def test_a_later_round_for_pods_karpenter_left_out_is_kept_without_their_events() -> None:
    """big-2's events lost, but Karpenter could not schedule it in the first round: the
    c-4x of the second round is its first NodeClaim, not one for a displaced pod."""
    trace = _raced_trace()
    del trace.nominated["big-2"]
    trace.failed["big-2"] = 3
    assert len(harness.first_decision(trace).claims) == 5
    del trace.failed["big-2"]  # neither event nor failure: displaced, its event deduplicated
    assert len(harness.first_decision(trace).claims) == 4


def test_a_displaced_pod_left_pending_was_placed_by_the_first_decision() -> None:
    trace = _raced_trace()
    del trace.claims["nc-4"]
    trace.bound["big-2"] = ""
    trace.bound["extra"] = ""  # never nominated: the first decision left it out
    first = harness.first_decision(trace)
    assert len(first.claims) == 4
    assert first.pending == ["extra"]


def test_the_plan_comparison_decides_the_verdict() -> None:
    case = _race_case()
    trace = _raced_trace()
    k = Side(claims=list(trace.claims.values()))
    first, plan = harness.compare_with_plan(case, trace, _joiners_plan())
    raced = harness.Result(case, k, _joiners_plan(), compare(case, k, _joiners_plan()), 1.0)
    raced.trace, raced.first, raced.plan_differences = trace, first, plan
    assert (raced.agree, raced.race, raced.verdict) == (False, True, "race")
    other = Side(claims=[_claim("c-8x"), _claim("c-1x")])
    first, plan = harness.compare_with_plan(case, trace, other)
    worse = harness.Result(case, k, other, compare(case, k, other), 1.0, trace, first, plan)
    assert (worse.race, worse.verdict) == (False, "disagree")
    same = harness.Result(case, k, k, [], 1.0)
    assert (same.race, same.verdict) == (False, "agree")


def _unschedulable(pod: str, ns: str) -> str:
    ref = json.dumps({"name": pod, "namespace": ns}, separators=(",", ":"))
    return (
        f'{{"level":"ERROR","message":"could not schedule pod","Pod":{ref},'
        '"error":"all available instance types exceed limits"}'
    )


def test_rounds_and_nominations_are_read_from_karpenters_log_and_events() -> None:
    log = "\n".join(
        [
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"old"}}',
            '{"level":"INFO","message":"found provisionable pod(s)","Pods":"fx-x/a-0"}',
            '{"level":"INFO","message":"computed new nodeclaim(s) to fit pod(s)","nodeclaims":2}',
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-a"}}',
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-b"}}',
            '{"level":"INFO","message":"found provisionable pod(s)","Pods":"fx-x/a-2"}',
            _unschedulable("a-3", "fx-x"),
            _unschedulable("b-0", "fx-y"),
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-c"}}',
            _unschedulable("a-3", "fx-x"),
            _unschedulable("a-4", "fx-x"),
        ]
    )
    assert harness.provisioning_rounds(log, "fx-x") == (
        {"old": 0, "nc-a": 1, "nc-b": 1, "nc-c": 2},
        {"a-3": 2, "a-4": 2},
    )

    def event(pod: str, msg: str, when: str, reason: str = "Nominated", src: str = "karpenter"):
        return {
            "reason": reason,
            "message": msg,
            "firstTimestamp": when,
            "involvedObject": {"kind": "Pod", "name": pod},
            "source": {"component": src},
        }

    events = [
        event("a-0", "Pod should schedule on: nodeclaim/nc-b", "2026-12-06T08:00:02Z"),
        event("a-0", "Pod should schedule on: nodeclaim/nc-a", "2026-12-06T08:00:01Z"),
        event("a-1", "Pod should schedule on: nodeclaim/nc-c, node/n-c", "2026-12-06T08:00:03Z"),
        event("a-2", "Pod should schedule on: node/n-c", "2026-12-06T08:00:03Z"),
        event("a-3", "Pod should schedule on: nodeclaim/nc-a", "x", reason="Scheduled"),
        event("a-4", "Pod should schedule on: nodeclaim/nc-a", "x", src="default-scheduler"),
    ]
    assert harness.nominations(events) == {"a-0": "nc-a", "a-1": "nc-c"}


def test_the_report_counts_race_verdicts_apart_from_agreement() -> None:
    import report

    case = _race_case()
    trace = _raced_trace()
    k = Side(claims=list(trace.claims.values()))
    first, plan = harness.compare_with_plan(case, trace, _joiners_plan())
    raced = harness.Result(case, k, _joiners_plan(), compare(case, k, _joiners_plan()), 1.0)
    raced.trace, raced.first, raced.plan_differences = trace, first, plan
    plain = harness.Result(_case(), Side(), Side(), [], 1.0)
    doc = report.as_json([plain, raced], "v1.14.0", 1.0, 1.0)
    assert (doc["agree"], doc["agreeWithPlanRace"], doc["disagree"]) == (1, 1, 0)
    row = doc["results"][1]
    assert row["verdict"] == "race" and row["planDifferences"] == []
    assert row["karpenterTrace"]["racedPods"] == ["big-2", "small-0"]
    md = report.markdown(doc)
    assert "| x | provision | plan (race) |" in md
    assert "agrees with Karpenter's plan (c-1x/spot/b, c-1x/spot/b, c-1x/spot/b, c-8x" in md
    assert md.splitlines()[-1] == (
        "agreement: 1/2 cases (50.0%); 1 more agree with Karpenter's plan "
        "(kube-scheduler race), 0 disagree"
    )


def _limits_mid_batch_trace() -> harness.Trace:
    """``limits-mid-batch`` as a race: Karpenter plans lm-0 and lm-2 on the c-4x and lm-1 on
    the c-2x and cannot schedule the three smaller pods under the 6-CPU limit; kube-scheduler
    binds those three into the c-4x first, so lm-0 no longer fits and stays pending."""
    return harness.Trace(
        claims={
            "nc-4": ("x-default", "c-4x", "spot", "a"),
            "nc-2": ("x-default", "c-2x", "spot", "a"),
        },
        rounds={"nc-4": 1, "nc-2": 1},
        claim_node={"nc-4": "n4", "nc-2": "n2"},
        nominated={"lm-0": "nc-4", "lm-2": "nc-4", "lm-1": "nc-2"},
        bound={"lm-0": "", "lm-1": "n2", "lm-2": "n4", "lm-3": "n4", "lm-4": "n4", "lm-5": "n4"},
        failed={"lm-3": 1, "lm-4": 1, "lm-5": 1, "lm-0": 1},
    )


def test_a_nominated_pod_left_pending_by_pods_not_planned_there_is_a_race() -> None:
    trace = _limits_mid_batch_trace()
    assert harness.race(trace) == ["lm-0"]
    first = harness.first_decision(trace)
    assert len(first.claims) == 2
    assert first.pending == ["lm-3", "lm-4", "lm-5"]  # the plan left them out
    # pods on its node all planned there (or with no event): a plain misfit, no race
    trace.bound.update({"lm-3": "", "lm-4": "", "lm-5": ""})
    assert harness.race(trace) == []
    trace.bound["lm-3"] = "n4"
    del trace.failed["lm-3"]  # no event and no failure: perhaps planned there, event lost
    assert harness.race(trace) == []


def test_a_pod_nominated_to_a_node_from_before_the_batch() -> None:
    """Karpenter nominates a pod to a node that existed before the batch ("nodeclaim/OLD,
    node/N"): bound there it is no race, bound elsewhere it is one, and a NodeClaim it has
    no record of never raises."""
    trace = _raced_trace()
    trace.bound.update({"big-2": "n8", "small-0": "n1a"})
    trace.claim_node["old"] = "n-old"
    trace.existing_nodes = {"n-old"}
    trace.bound["early"] = "n-old"
    trace.nominated.update({"early": "old", "lost": "unknown"})
    trace.bound["lost"] = ""
    assert harness.race(trace) == []
    trace.bound["early"] = "n1b"
    assert harness.race(trace) == ["early"]
    assert harness.first_decision(trace).pending == ["lost"]


def test_a_round_that_creates_no_nodeclaim_has_its_own_number() -> None:
    """gen-2525-2 (seed 2525, 2026-12-07): a round that created no NodeClaim logs no "found
    provisionable pod(s)" line, so its "could not schedule pod" lines (pods kube-scheduler
    had displaced) were taken for the first round's and the first decision left them out.
    Every round logs "computing scheduling decision" first: rounds are numbered by it."""
    solve = (
        '{"level":"DEBUG","time":"%s",'
        '"message":"computing scheduling decision for provisionable pod(s)"}'
    )
    log = "\n".join(
        [
            solve % "2026-12-07T03:49:20.929Z",
            '{"level":"INFO","time":"2026-12-07T03:49:20.943Z","message":"found provisionable '
            'pod(s)","duration":"15ms"}',
            _unschedulable("g1-0", "fx-x"),
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-a"}}',
            solve % "2026-12-07T03:49:23.862Z",
            _unschedulable("g2-2", "fx-x"),
            _unschedulable("g1-0", "fx-x"),
            solve % "2026-12-07T03:49:30.778Z",
            '{"level":"INFO","time":"2026-12-07T03:49:30.800Z","message":"found provisionable '
            'pod(s)","duration":"22ms"}',
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-b"}}',
        ]
    )
    assert harness.provisioning_rounds(log, "fx-x") == (
        {"nc-a": 1, "nc-b": 3},
        {"g1-0": 1, "g2-2": 2},
    )
    assert harness.round_starts(log).keys() == {1, 3}
    # a log without the debug line numbers the rounds that created NodeClaims, as before
    info_only = "\n".join(line for line in log.splitlines() if "DEBUG" not in line)
    assert harness.provisioning_rounds(info_only, "fx-x") == (
        {"nc-a": 1, "nc-b": 2},
        {"g1-0": 1, "g2-2": 1},
    )
    assert harness.round_starts(info_only).keys() == {1, 2}


def test_round_starts_are_the_log_time_less_the_rounds_duration() -> None:
    log = "\n".join(
        [
            '{"level":"INFO","time":"2026-12-06T11:14:49.068Z","message":"found provisionable '
            'pod(s)","Pods":"fx-x/a-0 and 85 other(s)","duration":"50.896182ms"}',
            '{"level":"INFO","message":"created nodeclaim","NodeClaim":{"name":"nc-a"}}',
            '{"level":"INFO","time":"2026-12-06T11:14:56Z","message":"found provisionable pod(s)"}',
            '{"level":"INFO","time":"2026-12-06T11:15:00Z","message":"found provisionable pod(s)",'
            '"duration":"1m2.5s"}',
        ]
    )
    starts = harness.round_starts(log)
    base = datetime(2026, 12, 6, 11, 14, 49, 68000, tzinfo=UTC).timestamp()
    assert starts.keys() == {1, 3}  # round 2 gives no duration
    assert abs(starts[1] - (base - 0.050896)) < 1e-6
    assert abs(starts[3] - (base - 0.068 + 11 - 62.5)) < 1e-3


def test_first_unschedulable_reads_kube_schedulers_earliest_failure() -> None:
    def event(pod: str, when: str, reason: str = "FailedScheduling", **src: str) -> dict:
        return {
            "reason": reason,
            "eventTime": when,
            "involvedObject": {"kind": "Pod", "name": pod},
            **(src or {"reportingComponent": "default-scheduler"}),
        }

    events = [
        event("a", "2026-12-06T11:14:48.500000Z"),
        event("a", "2026-12-06T11:14:47.250000Z"),
        event("b", "2026-12-06T11:14:50.000000Z", reason="Scheduled"),
        event("c", "2026-12-06T11:14:46.000000Z", reportingController="default-scheduler"),
        event("d", "2026-12-06T11:14:46.000000Z", source={"component": "karpenter"}),
    ]
    got = harness.first_unschedulable(events)
    assert got.keys() == {"a", "c"}
    assert got["a"] == datetime(2026, 12, 6, 11, 14, 47, 250000, tzinfo=UTC).timestamp()


def _eventless_trace() -> harness.Trace:
    """gen-909-15 as it ran (seed 909, 2026-12-06): five pods that repel each other (g1) and
    five that do not (g0). Karpenter's round 2 planned five c-4x, one g1 pod each; none of
    the batch kept a Nominated event. kube-scheduler bound the g0 pods on two of those nodes
    first, so two g1 pods no longer fit there and round 3 launched a c-4x for each."""
    claims = {f"nc-{i}": ("beta", "c-4x", "on-demand", "a") for i in range(7)}
    nodes = {c: f"n-{c}" for c in claims}
    return harness.Trace(
        claims=claims,
        rounds={**{f"nc-{i}": 2 for i in range(5)}, "nc-5": 3, "nc-6": 3},
        claim_node=nodes,
        nominated={},
        bound={
            **{f"g0-{i}": "n-nc-3" if i % 2 else "n-nc-4" for i in range(5)},
            "g1-0": "n-nc-0",
            "g1-1": "n-nc-1",
            "g1-2": "n-nc-5",
            "g1-3": "n-nc-2",
            "g1-4": "n-nc-6",
        },
        round_start={1: 100.0, 2: 110.0, 3: 118.0},
        unschedulable_at={**{f"g0-{i}": 105.0 for i in range(5)}, "g1-2": 105.5, "g1-4": 106.0},
    )


def test_an_eventless_pod_placed_by_the_first_round_and_provisioned_again_is_a_race() -> None:
    trace = _eventless_trace()
    assert harness.race(trace) == ["g1-2", "g1-4"]
    first = harness.first_decision(trace)
    assert sorted(first.claims) == [("beta", "c-4x", "on-demand", "a")] * 5
    assert first.pending == []
    joiner = Side(claims=[("beta", "c-4x", "on-demand", "a")] * 5)
    case = cases.Case(
        "x", ("resources",), cases.DEFAULT, [*cases.pods("g0", 5), *cases.pods("g1", 5)]
    )
    assert harness.compare_with_plan(case, trace, joiner) == (first, [])


def test_an_eventless_pod_the_first_round_did_not_decide_is_no_race() -> None:
    """Without evidence that the first round listed and placed a pod, its later NodeClaim
    is ordinary provisioning: the case stays a disagreement."""
    trace = _eventless_trace()
    trace.unschedulable_at["g1-2"] = 109.8  # within the margin of round 2's listing
    trace.unschedulable_at["g1-4"] = 112.0  # after it
    assert harness.race(trace) == []
    del trace.unschedulable_at["g1-2"]  # never found unschedulable: no evidence
    assert harness.race(trace) == []
    trace.unschedulable_at["g1-2"] = 105.5
    trace.failed["g1-2"] = 2  # the first round could not schedule it: not placed there
    assert harness.race(trace) == []
    # a pod that came after the first round is no displaced one, and the first decision
    # (the rounds before the first that provisioned a displaced pod again) left it out
    trace.failed.clear()
    trace.unschedulable_at["g1-4"] = 105.0
    trace.bound["late"] = "n-nc-6"
    trace.unschedulable_at["late"] = 115.0
    assert harness.race(trace) == ["g1-2", "g1-4"]
    first = harness.first_decision(trace)
    assert (len(first.claims), first.pending) == (5, ["late"])


def test_the_report_shows_the_zone_order_of_a_tie_agreement() -> None:
    import report

    case = _race_case()
    k = Side(claims=[_claim("c-2x", "b")])
    j = Side(claims=[_claim("c-2x", "a")])
    tied = harness.Result(case, k, j, [], 1.0, tie_order="b, a, c", tie_differences=["zones"])
    doc = report.as_json([tied], "v1.14.0", 1.0, 1.0)
    assert (doc["agree"], doc["disagree"]) == (1, 0)
    row = doc["results"][0]
    assert (row["tieOrder"], row["tieDifferences"]) == ("b, a, c", ["zones"])
    assert "| x | provision | yes (zone ties b, a, c) |" in report.markdown(doc)


def _pending_by_time_trace() -> harness.Trace:
    """gen-1313-14 as it ran (seed 1313, 2026-12-06): Karpenter's round 2 planned one m-8x
    for three g0 pods, g2-0 (3500m) and two of five g1 pods (1200m; zone spread by version,
    so one v1 and one v2 in the NodeClaim's zone) and could not schedule the other three;
    none kept a Nominated event. kube-scheduler, which counts only the zones of existing
    nodes, bound all five g1 pods there, and g2-0 was left pending (round 3 could not
    schedule it)."""
    g1 = {f"g1-{i}": "n" for i in range(5)}
    return harness.Trace(
        claims={"nc": ("beta", "m-8x", "spot", "a")},
        rounds={"nc": 2},
        claim_node={"nc": "n"},
        bound={"g0-0": "n", "g0-1": "n", "g0-2": "n", **g1, "g2-0": ""},
        failed={"g1-0": 2, "g1-1": 2, "g1-4": 2, "g2-0": 3},
        round_start={1: 100.0, 2: 110.0, 3: 120.0},
        unschedulable_at={p: 105.0 for p in ("g0-0", "g0-1", "g0-2", *g1, "g2-0")},
    )


def test_an_eventless_pod_the_first_round_placed_left_pending_is_a_race() -> None:
    trace = _pending_by_time_trace()
    assert harness.race(trace) == ["g2-0"]
    first = harness.first_decision(trace)
    assert first.claims == [("beta", "m-8x", "spot", "a")]
    assert first.pending == ["g1-0", "g1-1", "g1-4"]  # round 2's, not round 3's g2-0
    # no pod on the round's node that Karpenter did not plan there: no evidence
    calm = _pending_by_time_trace()
    calm.bound.update({"g1-0": "", "g1-1": "", "g1-4": ""})
    assert harness.race(calm) == []
    # a NodeClaim of the round that never launched: the pod may have been planned there
    unlaunched = _pending_by_time_trace()
    unlaunched.claims["nc2"] = ("beta", "m-8x", "spot", "a")
    unlaunched.rounds["nc2"] = 2
    assert harness.race(unlaunched) == []
    # found unschedulable after the round listed the pods: not the round's to place
    late = _pending_by_time_trace()
    late.unschedulable_at["g2-0"] = 112.0
    assert harness.race(late) == []


class _EndState:
    """A cluster whose case namespace holds ``pods`` and no NodeClaims."""

    def __init__(self, pods: list[dict]) -> None:
        self._pods = pods

    def nodeclaims(self) -> list[dict]:
        return []

    def pods(self, namespace: str) -> list[dict]:
        return self._pods


def _pod_doc(name: str, node: str | None) -> dict:
    return {"kind": "Pod", "metadata": {"name": name}, "spec": {"nodeName": node}}


def test_a_pod_pending_before_the_batch_counts_on_karpenters_side_as_on_joiners() -> None:
    # gen-448470-10: a pod meant for the existing nodes that no NodeClaim took is pending in
    # the snapshot Joiner plans from; Karpenter's side counted only the batch's pods.
    case = _case()
    before = harness.Snapshot(
        docs=[_pod_doc("old0", None), _pod_doc("old1", "node-a")], claims={}, node_of_claim={}
    )
    end = _EndState([_pod_doc("old0", None), _pod_doc("old1", "node-a"), _pod_doc("a-0", None)])
    k = harness.karpenter_provisioned(end, case, before)  # type: ignore[arg-type]
    assert k.pending == ["a-0", "old0"]
    assert harness.demand_names(case, before) == {"a-0", "a-1", "old0"}


def test_the_report_says_how_to_run_the_generated_cases_again() -> None:
    first = {"seed": 7, "results": [{"case": "gen-7-0"}, {"case": "gen-7-1"}]}
    assert report._rerun_args(first) == "--generated 2 --seed 7"
    # one case picked by id is run again by id (``--generated 1`` would be gen-7-0)
    picked = {"seed": 7, "results": [{"case": "gen-7-10"}]}
    assert report._rerun_args(picked) == "--cases gen-7-10"


def test_a_later_round_whose_nodeclaim_ends_empty_answers_a_race() -> None:
    """gen-1616-10: after the first round, a round made a NodeClaim for a pod kube-scheduler
    then bound to a node of the first round; it ended empty, and the round of the displaced
    pod's NodeClaim came after it. The empty NodeClaim's round ends the first decision too."""
    trace = _raced_trace()
    trace.claims["nc-1d"] = _claim("c-1x")
    trace.rounds.update({"nc-1d": 4, "nc-4": 5})
    trace.claim_node["nc-1d"] = "n1d"  # launched; no pod bound to it, none nominated
    first = harness.first_decision(trace)
    assert sorted(first.claims) == sorted(_joiners_plan().claims)
    trace.bound["small-3"] = "n1d"  # a pod it holds: not empty, it stays in the decision
    trace.nominated["small-3"] = "nc-1d"
    assert len(harness.first_decision(trace).claims) == 5


def test_an_empty_later_nodeclaim_shows_a_race_without_any_pods_evidence() -> None:
    """gen-1515-19: the first round made Joiner's one NodeClaim for all six pods, a round
    7 s later one more for a 100m pod, and every pod ended on the first round's node, with
    no Nominated event and no timing to show a displaced pod."""
    case = _race_case()
    trace = harness.Trace(
        claims={"nc-8": _claim("c-8x"), "nc-1": _claim("c-1x", "test-zone-c")},
        rounds={"nc-8": 2, "nc-1": 3},
        claim_node={"nc-8": "n8", "nc-1": "n1"},
        bound={p["metadata"]["name"]: "n8" for p in case.pods},
    )
    joiner = Side(claims=[_claim("c-8x")])
    assert harness.race(trace) == []
    assert harness.emptied(trace) == ["nc-1"]
    first, plan = harness.compare_with_plan(case, trace, joiner)
    assert first is not None and first.claims == [_claim("c-8x")]
    assert plan == []
    # the same NodeClaim made in the first round still shows the race, but it is part of
    # Karpenter's decision, which Joiner's one NodeClaim then does not match
    trace.rounds["nc-1"] = 2
    assert harness.emptied(trace) == ["nc-1"]
    first, plan = harness.compare_with_plan(case, trace, joiner)
    assert first is not None and len(first.claims) == 2 and plan


def test_karpenter_zones_within_joiners_launch_ties_agree() -> None:
    """gen-1515-27: Karpenter's kwok provider samples a NodeClaim's zone among its cheapest
    offerings; the c-8x Joiner launches in zone a could have gone to zone c at its price."""
    claim = ("x-default", "c-8x", "on-demand")
    k = Side(claims=[(*claim, "test-zone-a"), (*claim, "test-zone-b"), (*claim, "test-zone-c")])
    j = Side(
        claims=[(*claim, "test-zone-a"), (*claim, "test-zone-a"), (*claim, "test-zone-b")],
        tied_zones=[("test-zone-a",), ("test-zone-a", "test-zone-c"), ("test-zone-b",)],
    )
    tied = cases.Case("x", ("resources",), cases.DEFAULT, cases.pods("a", 2), zone_ties="why")
    for case in (_case(), tied):
        assert compare(case, k, j) == []
    # a zone none of Joiner's launches could take is a difference
    j.tied_zones[1] = ("test-zone-a", "test-zone-b")
    assert [d.split(":")[0] for d in compare(_case(), k, j)] == ["zones"]
    assert [d.split(":")[0] for d in compare(tied, k, j)] == ["zones"]
    # ties never pair NodeClaims of other instance types
    j.tied_zones[1] = ("test-zone-a", "test-zone-c")
    j.claims[1] = ("x-default", "c-4x", "on-demand", "test-zone-a")
    assert not harness.launch_ties_match(k, j)
    # the report shows a launch's tied zones
    shown = [c.get("tiedZones") for c in j.as_json()["nodeClaims"]]
    assert shown == [["test-zone-a", "test-zone-c"], None, None]  # sorted: the c-4x first


def test_a_first_round_nodeclaim_that_kept_none_of_its_pods_shows_a_race() -> None:
    """gen-1919-14: the first round made two c-2x and two c-1x for four zone-spread pods
    and two pods that need one of them on their node; kube-scheduler bound two of the
    spread pods to one c-2x, the other c-2x kept none, and the two partner-seeking pods,
    left out only by a later round, stayed pending. Karpenter's first decision placed them."""
    claims = {
        "nc-2a": _claim("c-2x", "test-zone-a"),
        "nc-2b": _claim("c-2x", "test-zone-a"),
        "nc-1b": _claim("c-1x", "test-zone-b"),
        "nc-1c": _claim("c-1x", "test-zone-c"),
    }
    trace = harness.Trace(
        claims=claims,
        rounds=dict.fromkeys(claims, 2),
        claim_node={c: f"n-{c}" for c in claims},
        bound={"g0-0": "n-nc-2a", "g0-1": "n-nc-1c", "g0-2": "n-nc-1b", "g0-3": "n-nc-2a"}
        | {"g1-0": "", "g1-1": ""},
        failed={"g1-0": 3, "g1-1": 3},
        # found unschedulable before the first round listed the pending pods
        round_start={2: 100.0},
        unschedulable_at=dict.fromkeys(["g0-0", "g0-1", "g0-2", "g0-3", "g1-0", "g1-1"], 99.0),
    )
    case = _race_case()
    joiner = Side(claims=list(claims.values()))
    assert harness.race(trace) == [] and harness.emptied(trace) == ["nc-2b"]
    first, plan = harness.compare_with_plan(case, trace, joiner)
    assert first is not None and first.pending == [] and plan == []
    # had the first round itself left them out, they stay pending in its decision
    trace.failed = {"g1-0": 2, "g1-1": 2}
    assert harness.first_decision(trace).pending == ["g1-0", "g1-1"]
    # with every NodeClaim holding a pod there is no evidence
    trace.bound["g0-3"] = "n-nc-2b"
    assert harness.emptied(trace) == []
    assert harness.compare_with_plan(case, trace, joiner) == (None, None)


def test_a_nomination_from_the_round_after_the_decision_does_not_place_the_pod() -> None:
    """gen-1919-10: round 2 could not schedule g1-0 and g1-1 (minValues 4 with one type)
    and made a c-2x for g0-1; round 3 nominated the two to that c-2x as an existing node
    (minValues no longer applies) and made another c-2x for g0-1, where kube-scheduler
    bound them instead. Karpenter's first decision is round 2's: both pending."""
    trace = harness.Trace(
        claims={"nc-a": _claim("c-2x"), "nc-b": _claim("c-2x")},
        rounds={"nc-a": 2, "nc-b": 3},
        claim_node={"nc-a": "na", "nc-b": "nb"},
        nominated={"g0-1": "nc-a", "g1-0": "nc-a", "g1-1": "nc-a"},
        bound={"g0-1": "na", "g1-0": "nb", "g1-1": "nb"},
        failed={"g1-0": 2, "g1-1": 2},
    )
    case = cases.Case(
        "x", ("resources",), cases.DEFAULT, [*cases.pods("g0", 1), *cases.pods("g1", 2)]
    )
    first, plan = harness.compare_with_plan(case, trace, Side(claims=[_claim("c-2x")]))
    assert first is not None and first.pending == ["g1-0", "g1-1"]
    assert plan == [f"pending pods: karpenter {['g1-0', 'g1-1']} joiner []"]
    # a failure earlier in the decision, with a round between: the nomination may be the
    # decision's own, so the pod counts as placed
    trace.rounds["nc-b"] = 4
    trace.failed = {"g1-0": 2, "g1-1": 2}
    assert harness.first_decision(trace).pending == []


def _args(*argv: str) -> argparse.Namespace:
    return run._parse(list(argv))


def test_disruption_cases_go_to_a_second_stack_unless_serial() -> None:
    prov = cases.by_id(["basic-cpu"])
    disrupt = cases.by_id(["emptiness", "budget-zero"])
    both = prov + disrupt
    assert run._split(_args(), both) == (prov, disrupt)
    assert run._split(_args("--serial"), both) == (both, [])
    # one kind alone stays on the one stack
    assert run._split(_args(), disrupt) == (disrupt, [])
    assert run._split(_args(), prov) == (prov, [])
    # the second stack's own run takes its part only
    assert run._split(_args("--part", "disrupt"), both) == (disrupt, [])


def test_the_second_stack_runs_the_same_selection(tmp_path: Path) -> None:
    args = _args("--cases", "emptiness,gen-7-3", "--generated", "12", "--skip-fixed", "--keep")
    argv = run._child_argv(args, 7, tmp_path)
    child = run._parse(argv)
    assert (child.part, child.seed, child.generated, child.cases) == ("disrupt", 7, 12, args.cases)
    assert child.skip_fixed and child.keep and Path(child.results) == tmp_path / run.RESULTS
    assert Path(child.out) == tmp_path
    # a fresh seed drawn by the parent is passed on, so both stacks generate the same cases
    fresh = run._parse(run._child_argv(_args("--generated", "4"), 123456, tmp_path))
    assert run._select(fresh)[2] == 123456
