"""Controller mode's Karpenter Events for provisioning failures, disruption orchestration and
termination (cluster/kube/events.py): FailedScheduling, NoCompatibleInstanceTypes,
InsufficientCapacityError, DisruptionLaunching, DisruptionWaitingReadiness,
DisruptionTerminating, Evicted, Disrupted, FailedDraining and TerminationGracePeriodExpiring,
each with Karpenter v1.14's reason, type, object, wording and deduplication, driven by the
controllers' typed listeners. The clusters are the disruption tests' manifests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from joiner.cloudprovider.types import CreateError, InsufficientCapacityError
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.events import KarpenterEvents
from joiner.cluster.kube.metrics import Metrics
from joiner.controllers.disruption.verdicts import Reason
from joiner.controllers.termination.controller import Terminator
from joiner.sim.timeline import SimTimeline
from tests.cluster.test_termination_grace_kube import _harness
from tests.controllers.disruption_fixtures import AT, dry_run, node, nodepool, pdb, pod

#: (kind, name, reason, message, warning)
Posted = tuple[str, str, str, str, bool]


class Sink:
    """Records what KarpenterEvents posts, with the Event's type."""

    def __init__(self) -> None:
        self.posted: list[Posted] = []

    def post(
        self, involved: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None:
        self.posted.append((involved["kind"], involved["name"], reason, message, warning))

    def of(self, reason: str) -> list[tuple[str, str, str, bool]]:
        return [(k, n, m, w) for k, n, r, m, w in self.posted if r == reason]


def _events(run: Any) -> tuple[Sink, KarpenterEvents]:
    """Events on the dry run's clock; the wall clock reads ``AT`` at clock 0."""
    sink = Sink()
    clock = run.clock
    return sink, KarpenterEvents(
        sink, run.state, clock.now, lambda: AT + timedelta(seconds=clock.now())
    )


def _pending(name: str, cpu: str = "500m") -> str:
    return pod(name, "x", cpu=cpu).replace("  nodeName: x\n", "")


def _advance(run: Any, seconds: float) -> None:
    run.clock.run_until(run.clock.now() + seconds)


# -- provisioning failures ----------------------------------------------------------------------


def test_failed_scheduling_on_the_pod_with_the_schedulers_reason_every_5_minutes(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), _pending("huge", cpu="900"))
    sink, events = _events(run)
    run.provisioner.unschedulable_listeners.append(events.failed_scheduling)
    run.provisioner.reconcile()
    huge = next(p for p in run.state.pods.values() if p.name == "huge")
    why = run.provisioner.stats.unschedulable[huge.uid]
    assert why  # the scheduler's own reason, carried as data
    assert sink.of("FailedScheduling") == [("Pod", "huge", f"Failed to schedule pod, {why}", True)]
    _advance(run, 299.0)
    run.provisioner.reconcile()
    assert len(sink.of("FailedScheduling")) == 1  # Karpenter's 5-minute deduplication
    _advance(run, 2.0)
    run.provisioner.reconcile()
    assert len(sink.of("FailedScheduling")) == 2


def test_no_compatible_instance_types_on_the_nodepool_once_a_minute(tmp_path):
    none_left = nodepool(
        "none",
        requirements="        - {key: karpenter.k8s.aws/instance-category, operator: In, "
        "values: [zz]}\n",
    )
    too_few = nodepool(
        "few",
        requirements="        - {key: node.kubernetes.io/instance-type, operator: In, "
        "values: [m5.large, m5.xlarge, zz.huge], minValues: 3}\n",
    )
    run = dry_run(tmp_path, nodepool(), none_left, too_few, _pending("web-1"))
    sink, events = _events(run)
    run.provisioner.incompatible_listeners.append(events.no_compatible_instance_types)
    run.provisioner.reconcile()
    plain = "NodePool requirements filtered out all compatible available instance types"
    assert sorted(sink.of("NoCompatibleInstanceTypes")) == [
        ("NodePool", "few", plain + " due to minValues incompatibility", True),
        ("NodePool", "none", plain, True),
    ]
    _advance(run, 59.0)
    run.provisioner.reconcile()
    assert len(sink.of("NoCompatibleInstanceTypes")) == 2
    _advance(run, 2.0)
    run.provisioner.reconcile()
    assert len(sink.of("NoCompatibleInstanceTypes")) == 4


def test_insufficient_capacity_on_the_nodeclaim_cut_at_300_characters(tmp_path, monkeypatch):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), _pending("web-1", cpu="6"))
    sink, events = _events(run)
    run.lifecycle.failed_listeners.append(events.launch_failed)
    long_text = "all requested instance types were unavailable during launch " * 6

    def refuse(_request: Any) -> Any:
        raise InsufficientCapacityError(long_text)

    monkeypatch.setattr(run.cloud, "create", refuse)
    before = set(run.state.nodeclaims)
    run.provisioner.reconcile()
    (claim,) = set(run.state.nodeclaims) - before
    assert run.state.nodeclaims[claim].deleted_at_s is not None
    assert sink.of("InsufficientCapacityError") == [
        ("NodeClaim", claim, f"NodeClaim {claim} event: {long_text[:300]}...", True)
    ]
    # Another launch error is not an insufficient-capacity one: no Event.
    events.launch_failed(run.state.nodeclaims[claim], CreateError("Unauthorized", "denied"))
    assert len(sink.of("InsufficientCapacityError")) == 1


# -- disruption orchestration -------------------------------------------------------------------


def test_a_replace_posts_launching_and_waiting_then_terminating(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("big", "m5.4xlarge"), pod("web-1", "big"))
    sink, events = _events(run)
    run.controller.waiting_listeners.append(events.disruption_waiting)
    run.controller.terminating_listeners.append(events.disruption_terminating)
    command, _ctx = run.controller.compute(elapsed=True)
    assert command is not None and command.replacements and command.reason is Reason.UNDERUTILIZED
    big_claim = run.state.nodes["big"].nodeclaim
    before = set(run.state.nodeclaims)
    run.controller.execute(command)
    (rep,) = set(run.state.nodeclaims) - before
    assert sink.of("DisruptionLaunching") == [
        ("NodeClaim", rep, "Launching NodeClaim: Underutilized", False)
    ]
    assert sink.of("DisruptionWaitingReadiness") == [
        ("NodeClaim", rep, "Waiting on readiness to continue disruption", False)
    ]
    assert sink.of("DisruptionTerminating") == []
    run.controller.kick()  # another look within 2 minutes: deduplicated
    assert len(sink.of("DisruptionLaunching")) == 1
    claim = run.state.nodeclaims[rep]
    run.lifecycle.register(claim, "replacement")
    run.lifecycle.initialize(claim)
    run.controller.kick()
    assert sink.of("DisruptionTerminating") == [
        ("Node", "big", "Disrupting Node: Underutilized", False),
        ("NodeClaim", big_claim, "Disrupting NodeClaim: Underutilized", False),
    ]
    assert len(sink.of("DisruptionWaitingReadiness")) == 1  # initialized: no more waiting


def test_an_empty_node_is_terminating_for_empty_without_launching(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("idle", "m5.xlarge"))
    sink, events = _events(run)
    run.controller.waiting_listeners.append(events.disruption_waiting)
    run.controller.terminating_listeners.append(events.disruption_terminating)
    command, _ctx = run.controller.compute(elapsed=True)
    assert command is not None and command.reason is Reason.EMPTY
    run.controller.execute(command)
    claim = run.state.nodes["idle"].nodeclaim
    assert sink.of("DisruptionLaunching") == []
    assert sink.of("DisruptionTerminating") == [
        ("Node", "idle", "Disrupting Node: Empty", False),
        ("NodeClaim", claim, "Disrupting NodeClaim: Empty", False),
    ]


# -- termination --------------------------------------------------------------------------------


def _terminator(run: Any, events: KarpenterEvents) -> Terminator:
    t = Terminator(run.state, run.cloud, run.clock, SimTimeline(run.clock))
    t.deadline_listeners.append(
        lambda n, deadline_s, first: events.grace_period_expiring(n, deadline_s, claim=first)
    )
    t.forced_listeners.append(events.disrupted)
    t.pdb_listeners.append(lambda name, p: events.eviction_refused(p.namespace, p.name, name))
    t.waiting_listeners.append(events.drain_waiting)
    return t


def _drain(run: Any, t: Terminator, name: str) -> None:
    n = run.state.nodes[name]
    n.deleting = True
    t.drain(n, "test")


def test_a_pdb_refusal_is_failed_draining_on_the_node(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("a", "m5.xlarge"),
        pod("api-1", "a", app="api"),
        pdb("api", "api", min_available=1),
    )
    sink, events = _events(run)
    _drain(run, _terminator(run, events), "a")
    message = "Failed to drain node, evicting pod violates a PDB (Pod=default/api-1)"
    assert sink.of("FailedDraining") == [("Node", "a", message, True)]
    _advance(run, 119.0)  # the drain retries every 5 s: one Event per 2 minutes and node
    assert len(sink.of("FailedDraining")) == 1
    _advance(run, 2.0)
    assert len(sink.of("FailedDraining")) == 2


def test_a_waiting_drain_is_failed_draining_with_the_pods_it_waits_for(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(),
        node("a", "m5.xlarge"),
        pod("db-0", "a", annotations='karpenter.sh/do-not-disrupt: "true"'),
        pod("db-1", "a", annotations='karpenter.sh/do-not-disrupt: "true"'),
    )
    sink, events = _events(run)
    _drain(run, _terminator(run, events), "a")
    assert sink.of("FailedDraining") == [
        ("Node", "a", "Failed to drain node, 2 pods are waiting to be evicted", True)
    ]


def test_a_grace_period_deadline_is_expiring_then_its_pods_are_disrupted(tmp_path):
    pool = nodepool(extra_spec="      terminationGracePeriod: 10m\n")
    run = dry_run(
        tmp_path,
        pool,
        node("a", "m5.xlarge"),
        pod("db-0", "a", annotations='karpenter.sh/do-not-disrupt: "true"'),
    )
    sink, events = _events(run)
    claim = run.state.nodes["a"].nodeclaim
    _drain(run, _terminator(run, events), "a")
    deadline = "2025-01-07T21:10:00Z"  # AT plus 10 minutes
    expiring = f"All pods will be deleted by {deadline}"
    assert sink.of("TerminationGracePeriodExpiring") == [
        ("Node", "a", expiring, True),
        ("NodeClaim", claim, expiring, True),
    ]
    _advance(run, 121.0)  # the Node's is posted again at the next step after 2 minutes
    assert sink.of("TerminationGracePeriodExpiring")[2:] == [("Node", "a", expiring, True)]
    assert sink.of("Disrupted") == []
    _advance(run, 600.0 - 121.0 - 30.0 + 1.0)  # 30 s (its grace) before the deadline
    assert sink.of("Disrupted") == [
        (
            "Pod",
            "db-0",
            "Deleting the pod to accommodate the terminationTime 2025-01-07 21:10:00 +0000 UTC "
            "of the node. The pod was granted 30 seconds of grace-period of its 30 "
            "terminationGracePeriodSeconds. This bypasses the PDB of the pod and the "
            "do-not-disrupt annotation.",
            False,
        )
    ]


def test_evicted_names_the_nodes_disruption_reason_or_forceful_termination(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), pod("web-1", "a"))
    sink, events = _events(run)
    claim = run.state.nodeclaims[run.state.nodes["a"].nodeclaim]
    events.evicted("default", "web-1", "a")
    claim.disruption_reason = Reason.UNDERUTILIZED.value
    events.evicted("default", "web-2", "a")
    events.evicted("default", "web-2", "a")  # the same pod within 2 minutes
    run.state.nodes["a"].nodeclaim = None
    events.evicted("default", "web-3", "a")  # a node without a NodeClaim: no reason
    assert sink.of("Evicted") == [
        ("Pod", "web-1", "Evicted pod: Forceful Termination", False),
        ("Pod", "web-2", "Evicted pod: Underutilized", False),
        ("Pod", "web-3", "Evicted pod: ", False),
    ]


class _Client:
    """Accepts an Eviction of pod ``a`` and refuses ``b``'s with 429."""

    def create(self, obj: Any, **kw: Any) -> None:
        if kw["name"] == "b":
            raise ApiError(status=Status(code=429, message="Cannot evict pod"))

    def delete(self, res: Any, name: str, **kw: Any) -> None:
        pass


def test_the_eviction_port_tells_of_accepted_and_refused_evictions():
    h = _harness()
    seen: list[tuple[str, str, str, str | None]] = []
    for dry in (False, True):
        actuator = KubeActuator(
            None if dry else _Client(),  # type: ignore[arg-type]
            h.state,
            h.feed,
            h.lifecycle,
            Metrics(),
            create_nodes=True,
            dry_run=dry,
        )
        actuator.evicted_listeners.append(lambda ns, n, nd: seen.append(("evicted", ns, n, nd)))
        actuator.refused_listeners.append(lambda ns, n, nd: seen.append(("refused", ns, n, nd)))
        assert actuator.evict(h.state.pods["u1"], False)
        assert actuator.evict(h.state.pods["u2"], False) is dry  # dry: no PDB here
        assert actuator.evict(h.state.pods["u1"], True, 5)  # a forced deletion: neither
    assert seen == [
        ("evicted", "ns", "a", "n1"),
        ("refused", "ns", "b", "n1"),
        ("evicted", "ns", "a", "n1"),
        ("evicted", "ns", "b", "n1"),
    ]


def test_wall_times_follow_the_clock(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"))
    sink = Sink()
    wall = datetime(2030, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)
    events = KarpenterEvents(sink, run.state, run.clock.now, lambda: wall)
    events.grace_period_expiring(run.state.nodes["a"], 90.0, claim=False)
    assert sink.of("TerminationGracePeriodExpiring") == [
        ("Node", "a", "All pods will be deleted by 2030-05-01T12:01:30Z", True)
    ]


def test_a_budget_of_zero_blocks_disruption_on_the_nodepool_per_reason(tmp_path):
    budgets = '    budgets:\n    - {nodes: "0", reasons: [Underutilized, Empty]}\n'
    run = dry_run(
        tmp_path,
        nodepool(disruption=budgets),
        nodepool("idle"),  # no nodes: nothing to block
        node("a", "m5.4xlarge"),
        pod("web-1", "a"),
    )
    sink, events = _events(run)
    run.controller.pass_listeners.append(
        lambda ctx, _c: events.budgets_blocked(ctx.budgets.blocked)
    )
    run.controller.compute(elapsed=True)
    assert sink.of("DisruptionBlocked") == [
        (
            "NodePool",
            "general",
            f"No allowed disruptions for disruption reason {reason} due to blocking budget",
            False,
        )
        for reason in ("Empty", "Underutilized")
    ]
    _advance(run, 59.0)
    run.controller.compute(elapsed=True)
    assert len(sink.of("DisruptionBlocked")) == 2  # 1 minute per NodePool and reason
    _advance(run, 2.0)
    run.controller.compute(elapsed=True)
    assert len(sink.of("DisruptionBlocked")) == 4


class _NoWrites:
    def create(self, obj: Any, **kw: Any) -> None:
        raise AssertionError("shadow mode wrote an Event")


def test_shadow_mode_reports_the_new_events_and_writes_none(tmp_path):
    from joiner.cluster.kube.timeline import KubeTimeline

    run = dry_run(tmp_path, nodepool(), node("a", "m5.xlarge"), pod("web-1", "a"))
    reported: list[dict[str, Any]] = []
    shadow = KubeTimeline(
        _NoWrites(),  # type: ignore[arg-type]
        run.state,
        dry_run=True,
        report=reported.append,
    )
    events = KarpenterEvents(shadow, run.state, run.clock.now, lambda: AT)
    events.evicted("default", "web-1", "a")
    events.drain_waiting(run.state.nodes["a"], 1)
    assert [(r["action"], r["reason"], r["message"]) for r in reported] == [
        ("event", "Evicted", "Evicted pod: Forceful Termination"),
        ("event", "FailedDraining", "Failed to drain node, 1 pods are waiting to be evicted"),
    ]


def test_kube_timeline_writes_a_warning_as_such():
    from joiner.cluster.kube.timeline import KubeTimeline
    from joiner.state.cluster import ClusterState

    created: list[Any] = []

    class Client:
        def create(self, obj: Any, namespace: str) -> None:
            created.append(obj)

    timeline = KubeTimeline(Client(), ClusterState(), dry_run=False)  # type: ignore[arg-type]
    ref = {"apiVersion": "v1", "kind": "Node", "name": "a"}
    timeline.post(ref, "FailedDraining", "Failed to drain node, x", warning=True)
    assert [(e.reason, e.type, e.metadata.namespace) for e in created] == [
        ("FailedDraining", "Warning", "default")
    ]
