"""A drain under a NodePool ``terminationGracePeriod`` deletes each pod still on the node
its own ``terminationGracePeriodSeconds`` before the node's deadline (Karpenter
``terminator.go`` ``DeleteExpiringPods``, ``podDeleteTimeWithGracePeriod``), PDBs and
do-not-disrupt notwithstanding, with the deadline's remaining seconds as its grace."""

from __future__ import annotations

from dataclasses import replace

from joiner.api import timeline
from joiner.api.objects import PodDisruptionBudget, Source
from joiner.api.requirements import Requirements
from joiner.controllers.termination.controller import Terminator
from joiner.sim.clock import SimClock
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod
from joiner.testing.builders import make_nodepool, make_pod_template

START_S = 100.0
TGP_S = 600.0
DEADLINE_S = START_S + TGP_S


class Records:
    """A timeline that keeps (time, kind, pod, detail)."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.rows: list[tuple[float, str, str | None, str]] = []

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        self.rows.append((self.clock.now(), kind, pod, detail))

    def times(self, kind: str) -> dict[str, float]:
        return {pod: at for at, k, pod, _ in self.rows if k == kind and pod is not None}


def _state(pods: dict[str, tuple[float, float]], *, blocked: bool = True) -> ClusterState:
    """One node of a NodePool with ``terminationGracePeriod`` TGP_S, running ``pods``
    (name -> (terminationGracePeriodSeconds, shutdown seconds)), all selected by a PDB
    allowing no disruption when ``blocked``."""
    state = ClusterState()
    state.nodepools["p"] = replace(make_nodepool("p"), termination_grace_period_s=TGP_S)
    state.nodeclaims["c1"] = NodeClaim(
        name="c1",
        nodepool="p",
        node_class="default",
        requirements=Requirements(),
        requests={},
        instance_type_options=(),
        created_at_s=0.0,
        node_name="n1",
    )
    state.nodes["n1"] = Node(
        name="n1",
        nodeclaim="c1",
        labels={},
        taints=(),
        capacity={},
        allocatable={},
        created_at_s=0.0,
        ready=True,
    )
    base = replace(make_pod_template(100), labels=(("app", "web"),))
    for i, (name, (grace_s, shutdown_s)) in enumerate(pods.items()):
        template = replace(base, termination_grace_period_s=grace_s, shutdown_s=shutdown_s)
        state.pods[name] = Pod(
            uid=name,
            namespace="shop",
            name=name,
            template=template,
            owner="Deployment/shop/web",
            created_at_s=0.0,
            order=i,
            node_name="n1",
            bound_at_s=0.0,
        )
    if blocked:
        state.pdbs.append(
            PodDisruptionBudget(
                "shop",
                "web",
                Requirements.from_labels({"app": "web"}),
                Source("pdb.yaml", "PodDisruptionBudget", "web"),
                max_unavailable=0,
            )
        )
    return state


def _drain(state: ClusterState) -> tuple[SimClock, Records, ClusterState]:
    clock = SimClock()
    records = Records(clock)
    terminator = Terminator(state, None, clock, records)  # type: ignore[arg-type]
    clock.run_until(START_S)
    node = state.nodes["n1"]
    node.deleting = True
    terminator.drain(node, "test")
    clock.run_until(2 * DEADLINE_S)
    return clock, records, state


def test_each_blocked_pod_is_deleted_its_grace_before_the_deadline():
    """Grace 0, 30 and 300 s under a PDB allowing nothing: deleted at the deadline, 30 s and
    300 s before it; a grace longer than the whole period (900 s) means at once."""
    pods = {"g0": (0.0, 0.0), "g30": (30.0, 0.0), "g300": (300.0, 0.0), "g900": (900.0, 0.0)}
    _clock, records, state = _drain(_state(pods))
    assert records.times(timeline.EVICTION) == {
        "shop/g0": DEADLINE_S,
        "shop/g30": DEADLINE_S - 30,
        "shop/g300": DEADLINE_S - 300,
        "shop/g900": START_S,
    }
    assert state.nodes["n1"].deleted_at_s == DEADLINE_S
    assert not any(p.lost for p in state.pods.values())


def test_a_deleted_pod_shuts_down_within_the_deadlines_remaining_time():
    """Its shutdown (preStop) runs, but only as long as the deadline leaves: a 20 s preStop
    deleted 30 s before the deadline is gone after 20 s; an 800 s one deleted at the drain's
    start (grace 900 s, 600 s left) is cut to the 600 s left."""
    pods = {"g30": (30.0, 20.0), "g900": (900.0, 800.0)}
    _clock, records, state = _drain(_state(pods))
    assert records.times(timeline.EVICTION) == {"shop/g30": DEADLINE_S - 30, "shop/g900": START_S}
    assert state.pods["g30"].deleted_at_s == DEADLINE_S - 10
    assert state.pods["g900"].terminating_until_s == DEADLINE_S
    assert state.pods["g900"].deleted_at_s == DEADLINE_S


def test_pods_no_budget_blocks_are_evicted_at_once_not_deleted():
    """Without a blocking PDB the pods are evicted when the drain starts, as before; only a
    grace period longer than the whole drain makes it a deletion (at once too)."""
    pods = {"g30": (30.0, 0.0), "g900": (900.0, 0.0)}
    _clock, records, _ = _drain(_state(pods, blocked=False))
    rows = [(at, pod, bool(detail)) for at, k, pod, detail in records.rows if k == "eviction"]
    assert rows == [(START_S, "shop/g900", True), (START_S, "shop/g30", False)]


def test_controller_mode_deletes_each_pod_with_the_remaining_grace():
    """The Eviction port is asked to delete (not evict) each blocked pod at its time, with
    the deadline's remaining seconds as ``gracePeriodSeconds`` (1 at the deadline)."""
    calls: list[tuple[float, str, bool, int | None]] = []
    clock_box: list[SimClock] = []

    def evict(pod: Pod, forced: bool, grace_s: int | None) -> bool:
        calls.append((clock_box[0].now(), pod.name, forced, grace_s))
        return forced  # the API server refuses every eviction (the PDB); deletions pass

    state = _state({"g0": (0.0, 0.0), "g30": (30.0, 0.0), "g300": (300.0, 0.0)}, blocked=False)
    clock = SimClock()
    clock_box.append(clock)
    terminator = Terminator(state, None, clock, Records(clock), evict=evict)  # type: ignore[arg-type]
    clock.run_until(START_S)
    state.nodes["n1"].deleting = True
    terminator.drain(state.nodes["n1"], "test")
    clock.run_until(2 * DEADLINE_S)
    deletions = [c for c in calls if c[2]]
    assert deletions == [
        (DEADLINE_S - 300, "g300", True, 300),
        (DEADLINE_S - 30, "g30", True, 30),
        (DEADLINE_S, "g0", True, 1),
    ]


def test_a_forced_termination_during_the_drain_ends_it_now():
    """Node repair terminates a node whose drain has a later deadline: what is left is
    deleted now with no shutdown (the deadline is now), not given the time to the old one."""
    state = _state({"g300": (300.0, 20.0)})
    clock = SimClock()
    records = Records(clock)
    terminator = Terminator(state, None, clock, records)  # type: ignore[arg-type]
    clock.run_until(START_S)
    node = state.nodes["n1"]
    node.deleting = True
    terminator.drain(node, "test")
    clock.run_until(START_S + 50)
    terminator.force_terminate(node, "repair")
    assert records.times(timeline.EVICTION) == {"shop/g300": START_S + 50}
    assert state.pods["g300"].deleted_at_s == START_S + 50
    assert state.pods["g300"].terminating_until_s is None
    assert node.deleted_at_s == START_S + 50
    clock.run_until(2 * DEADLINE_S)
    assert records.times(timeline.EVICTION) == {"shop/g300": START_S + 50}
