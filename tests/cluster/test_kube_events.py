"""Controller mode's Karpenter Events (cluster/kube/events.py): each of Nominated, Launched,
Registered, Initialized, DisruptionBlocked and Unconsolidatable with Karpenter v1.14's reason
and wording, posted as core/v1 Events through KubeTimeline, deduplicated as Karpenter's
recorder does. The clusters are the disruption tests' manifests."""

from __future__ import annotations

from typing import Any

import pytest

from joiner.cluster.kube.events import KarpenterEvents, unconsolidatable_message
from joiner.cluster.kube.timeline import KubeTimeline
from joiner.controllers.disruption.verdicts import Reason, Verdict, VerdictKind
from joiner.state.cluster import ClusterState
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pdb, pod


class Sink:
    """Records what KarpenterEvents posts: (kind, name, reason, message)."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str, str]] = []

    def post(
        self, involved: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        assert not warning
        self.posted.append((involved["kind"], involved["name"], reason, message))


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def now(self) -> float:
        return self.now_s


def _events(run: Any) -> tuple[Sink, Clock, KarpenterEvents]:
    sink, clock = Sink(), Clock()
    events = KarpenterEvents(sink, run.state, clock.now)
    run.controller.pass_listeners.append(
        lambda ctx, cands: events.disruption_pass(ctx.reasons, cands)
    )
    return sink, clock, events


def _by_reason(sink: Sink, reason: str) -> list[tuple[str, str, str]]:
    return [(k, n, m) for k, n, r, m in sink.posted if r == reason]


def test_nominated_names_the_nodeclaim_and_its_node_on_each_pod(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), pod("web-1", "a"))
    sink, _clock, events = _events(run)
    claim = next(iter(run.state.nodeclaims.values()))
    web = next(p for p in run.state.pods.values() if p.name == "web-1")
    claim.nominated = (web.uid,)
    events.nominated(claim)
    assert _by_reason(sink, "Nominated") == [
        ("Pod", "web-1", f"Pod should schedule on: nodeclaim/{claim.name}, node/a")
    ]
    claim.node_name = None  # not registered yet: the NodeClaim only
    sink.posted.clear()
    events.nominated(claim)
    assert sink.posted == []  # deduplicated for 2 minutes
    events._posted.clear()
    events.nominated(claim)
    assert _by_reason(sink, "Nominated") == [
        ("Pod", "web-1", f"Pod should schedule on: nodeclaim/{claim.name}")
    ]


def _pending(name: str, cpu: str = "500m") -> str:
    """A pending Pod (no nodeName) of ``cpu``."""
    return pod(name, "x", cpu=cpu).replace("  nodeName: x\n", "")


def test_a_pass_nominates_pods_it_places_on_existing_capacity(tmp_path):
    """Karpenter ``Results.Record``: a pod the provisioner places on an existing node (a
    registered NodeClaim) is Nominated with the NodeClaim and its node; no NodeClaim is
    created for it."""
    run = dry_run(
        tmp_path, nodepool(), node("a", "m5.xlarge"), pod("web-1", "a"), _pending("web-2")
    )
    sink, _clock, events = _events(run)
    placed: list[tuple[str, str]] = []
    run.provisioner.nominated_listeners.append(lambda uid, where: placed.append((uid, where)))
    run.provisioner.nominated_listeners.append(events.nominated_existing)
    claims_before = set(run.state.nodeclaims)
    run.provisioner.reconcile()
    web2 = next(p for p in run.state.pods.values() if p.name == "web-2")
    claim = run.state.nodes["a"].nodeclaim
    assert placed == [(web2.uid, claim)]
    assert set(run.state.nodeclaims) == claims_before
    assert _by_reason(sink, "Nominated") == [
        ("Pod", "web-2", f"Pod should schedule on: nodeclaim/{claim}, node/a")
    ]


def test_nominated_on_in_flight_claims_and_unmanaged_nodes_deduplicated_by_pod(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), _pending("web-2"))
    sink, clock, events = _events(run)
    claim = next(iter(run.state.nodeclaims.values()))
    web2 = next(p for p in run.state.pods.values() if p.name == "web-2")
    claim.node_name = None  # in flight: launched, its node not registered yet
    events.nominated_existing(web2.uid, claim.name)
    claim.node_name = "a"
    events.nominated_existing(web2.uid, claim.name)  # the same pod within 2 minutes
    events.nominated_existing(web2.uid, "a")
    assert _by_reason(sink, "Nominated") == [
        ("Pod", "web-2", f"Pod should schedule on: nodeclaim/{claim.name}")
    ]
    clock.now_s += 121.0
    run.state.nodes["a"].nodeclaim = None  # a node no NodePool manages: the node alone
    run.state.nodeclaims.pop(claim.name)
    events.nominated_existing(web2.uid, "a")
    assert _by_reason(sink, "Nominated")[-1] == ("Pod", "web-2", "Pod should schedule on: node/a")
    events.nominated_existing("no-such-uid", "a")
    events.nominated_existing(web2.uid, "no-such-node")
    assert len(_by_reason(sink, "Nominated")) == 2


def test_nominations_are_rate_limited_as_karpenters_pod_nomination_limiter(tmp_path):
    """A token bucket of 10 refilled at 5 per second: 14 pods at once get 10 Events, the
    rest are dropped (and stay deduplicated); 0.4 s later two more pods get theirs."""
    pending = [_pending(f"web-{i}", cpu="100m") for i in range(16)]
    run = dry_run(tmp_path, nodepool(), node("a", "m5.4xlarge"), *pending)
    sink, clock, events = _events(run)
    claim = next(iter(run.state.nodeclaims.values()))
    uids = [p.uid for p in sorted(run.state.pods.values(), key=lambda p: p.order)]
    for uid in uids[:14]:
        events.nominated_existing(uid, claim.name)
    assert len(_by_reason(sink, "Nominated")) == 10
    clock.now_s += 0.4
    for uid in uids:
        events.nominated_existing(uid, claim.name)
    named = [n for _k, n, _m in _by_reason(sink, "Nominated")]
    assert named == [f"web-{i}" for i in range(10)] + ["web-14", "web-15"]


@pytest.mark.parametrize("condition", ["Launched", "Registered", "Initialized"])
def test_condition_transitions_in_operatorpkg_wording_once_per_nodeclaim(tmp_path, condition):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"))
    sink, clock, events = _events(run)
    claim = next(iter(run.state.nodeclaims.values()))
    events.condition(claim, condition)
    clock.now_s += 3600.0
    events.condition(claim, condition)  # a transition happens once
    assert sink.posted == [
        (
            "NodeClaim",
            claim.name,
            condition,
            f"Status condition transitioned, Type: {condition}, Status: Unknown -> True, "
            f"Reason: {condition}",
        )
    ]


def test_disruption_blocked_by_a_do_not_disrupt_pod_on_node_and_nodeclaim(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("db-0", "big", app="db", annotations='karpenter.sh/do-not-disrupt: "true"'),
    )
    sink, clock, _ = _events(run)
    run.controller.compute(elapsed=True)
    message = 'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/db-0)'
    blocked = _by_reason(sink, "DisruptionBlocked")
    claim = run.state.nodes["big"].nodeclaim
    assert blocked == [("Node", "big", message), ("NodeClaim", claim, message)]
    run.controller.compute(elapsed=True)
    assert len(_by_reason(sink, "DisruptionBlocked")) == 2  # within 2 minutes: once
    clock.now_s += 121.0
    run.controller.compute(elapsed=True)
    assert len(_by_reason(sink, "DisruptionBlocked")) == 4
    assert _by_reason(sink, "Unconsolidatable") == []  # blocked is not unconsolidatable


def test_disruption_blocked_by_a_pdb_and_by_the_node_annotation(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        node("kept", "m5.xlarge", annotations='karpenter.sh/do-not-disrupt: "true"'),
        pod("api-1", "big", app="api"),
        pod("api-2", "big", app="api"),
        pod("web-1", "kept"),
        pdb("api", "api", min_available=2),
    )
    sink, _, _ = _events(run)
    run.controller.compute(elapsed=True)
    blocked = {(k, n): m for k, n, m in _by_reason(sink, "DisruptionBlocked")}
    assert blocked[("Node", "big")] == (
        "Pdb prevents pod evictions (PodDisruptionBudget=[default/api])"
    )
    assert blocked[("Node", "kept")] == (
        'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
    )
    assert ("NodeClaim", run.state.nodes["kept"].nodeclaim) in blocked


def test_unconsolidatable_when_spot_to_spot_is_off_and_under_when_empty(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(capacity_types="spot"),
        node("s", "m5.4xlarge", capacity_type="spot"),
        pod("w", "s", cpu="1"),
    )
    sink, clock, _ = _events(run)
    _command, ctx = run.controller.compute(elapsed=True)
    claim = run.state.nodes["s"].nodeclaim
    # Spot-to-spot off: whichever of Karpenter's two reasons Joiner finds first, in its words.
    message = unconsolidatable_message(ctx.reasons["s"])
    assert message in (
        "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
        "Can't replace with a cheaper node",
    )
    assert _by_reason(sink, "Unconsolidatable") == [
        ("Node", "s", message),
        ("NodeClaim", claim, message),
    ]
    clock.now_s += 600.0
    run.controller.compute(elapsed=True)
    assert len(_by_reason(sink, "Unconsolidatable")) == 2  # 15-minute deduplication

    pool = nodepool().replace("WhenEmptyOrUnderutilized", "WhenEmpty")
    run = dry_run(tmp_path, pool, node("big", "m5.4xlarge"), pod("web-1", "big"))
    sink, _, _ = _events(run)
    run.controller.compute(elapsed=True)
    assert (
        "Node",
        "big",
        'NodePool "general" has consolidation policy WhenEmpty, but node is not empty',
    ) in _by_reason(sink, "Unconsolidatable")


_SPOT_DISABLED = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
_CHEAPER = "Can't replace with a cheaper node"

#: (verdict, Joiner's English for it, Karpenter's Unconsolidatable message or None).
WORDING = [
    (
        Verdict(VerdictKind.NOT_CHEAPER, price=0.1),
        "can't replace with a cheaper node: no instance type that fits its pods costs less "
        "than $0.1000/h at worst",
        _CHEAPER,
    ),
    (
        Verdict(VerdictKind.SPOT_TO_SPOT_TOO_FEW, wanted=15, count=2),
        "spot-to-spot needs 15 cheaper instance types, 2 are allowed",
        "SpotToSpotConsolidation requires 15 cheaper instance type options than the current "
        "candidate to consolidate, got 2",
    ),
    (
        Verdict(VerdictKind.TOO_MANY_NEW_NODES, count=2),
        "its pods need 2 new nodes; consolidation only replaces nodes with one",
        "Can't remove without creating 2 candidates",
    ),
    (
        Verdict(VerdictKind.CONSOLIDATION_DISABLED, pool="general"),
        "NodePool general has consolidateAfter: Never",
        'NodePool "general" has consolidation disabled',
    ),
    (
        Verdict(VerdictKind.WHEN_EMPTY, pool="general"),
        "NodePool general consolidates only empty nodes (policy WhenEmpty)",
        'NodePool "general" has consolidation policy WhenEmpty, but node is not empty',
    ),
    (
        Verdict(VerdictKind.SPOT_TO_SPOT_OFF),
        "spot-to-spot consolidation is off (--feature-gates SpotToSpotConsolidation=true); "
        "spot nodes are only deleted, never replaced",
        _SPOT_DISABLED,
    ),
    # The same reasons from a simulation stopped early and from the pre-check.
    (
        Verdict(
            VerdictKind.STOPPED,
            detail="its pods need a new node, and it could launch as spot",
            spot_to_spot_off=True,
        ),
        "can't consolidate: spot-to-spot consolidation is off (--feature-gates "
        "SpotToSpotConsolidation=true), and its pods need a new node, and it could launch as spot",
        _SPOT_DISABLED,
    ),
    (
        Verdict(
            VerdictKind.SPOT_TO_SPOT_OFF_BECAUSE,
            detail="its pods need at least cpu=2000m on a new node, which could launch as spot",
        ),
        "spot-to-spot consolidation is off (--feature-gates SpotToSpotConsolidation=true): its "
        "pods need at least cpu=2000m on a new node, which could launch as spot",
        _SPOT_DISABLED,
    ),
    (
        Verdict(
            VerdictKind.STOPPED_NOT_CHEAPER,
            detail="no instance type that fits its pods costs less than $0.1000/h",
        ),
        "can't consolidate: no instance type that fits its pods costs less than $0.1000/h",
        _CHEAPER,
    ),
    (
        Verdict(VerdictKind.STOPPED, detail="its pods need more than one new node"),
        "can't consolidate: its pods need more than one new node",
        None,
    ),
    # Budgets and consolidateAfter: Karpenter posts no Unconsolidatable for them.
    (
        Verdict(VerdictKind.BUDGET, pool="general", reason=Reason.UNDERUTILIZED),
        "NodePool general budget is used up",
        None,
    ),
    (
        Verdict(VerdictKind.NOT_CONSOLIDATABLE_YET, seconds=600),
        "consolidateAfter (10m) has not passed since its last pod change",
        None,
    ),
]


@pytest.mark.parametrize(("verdict", "english", "event"), WORDING)
def test_unconsolidatable_wording_for_each_consolidation_reason(verdict, english, event):
    assert verdict.message() == english
    assert unconsolidatable_message(verdict) == event


@pytest.mark.parametrize(("verdict", "english", "event"), WORDING)
def test_the_event_follows_the_kind_not_the_words(monkeypatch, verdict, english, event):
    # Reword every verdict: the Event a verdict posts is chosen by its kind and fields.
    monkeypatch.setattr(Verdict, "message", lambda self: "reworded")
    assert verdict.message() == "reworded"
    assert unconsolidatable_message(verdict) == event


class FakeClient:
    def __init__(self) -> None:
        self.created: list[tuple[Any, str]] = []

    def create(self, obj: Any, namespace: str) -> None:
        self.created.append((obj, namespace))


def test_kube_timeline_posts_core_v1_events_and_reports_them_in_a_dry_run():
    client = FakeClient()
    timeline = KubeTimeline(client, ClusterState(), dry_run=False, namespace="joiner-events")
    ref = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "general-abc"}
    timeline.post(ref, "Launched", "Status condition transitioned, Type: Launched")
    ((event, ns),) = client.created
    assert ns == "joiner-events" and event.metadata.namespace == "joiner-events"
    assert (event.reason, event.type, event.source.component) == ("Launched", "Normal", "joiner")
    assert event.involvedObject.kind == "NodeClaim" and event.involvedObject.name == "general-abc"
    pod_ref = {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-1"}
    timeline.post(pod_ref, "Nominated", "Pod should schedule on: nodeclaim/general-abc")
    assert client.created[1][1] == "shop"

    reported: list[dict[str, Any]] = []
    shadow = KubeTimeline(None, ClusterState(), dry_run=True, report=reported.append)
    shadow.post(ref, "Launched", "m")
    assert reported == [{"action": "event", "reason": "Launched", "involved": ref, "message": "m"}]
