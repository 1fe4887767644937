"""kube-scheduler preemption (the ``DefaultPreemption`` PostFilter plugin), for the
simulation's kube-scheduler model.

When a pod fits no node, kube-scheduler (``pkg/scheduler/framework/preemption``
``Evaluator.Preempt`` with ``plugins/defaultpreemption``) looks for a node where deleting
pods of lower priority lets it fit:

1. ``PodEligibleToPreemptOthers``: not with ``preemptionPolicy: Never``; not while the pod is
   already nominated to a node where a lower-priority pod is still terminating (it waits).
2. ``SelectVictimsOnNode`` per node: remove every pod of lower priority (a node where the pod
   still does not fit is no candidate); sort them most important first (``MoreImportantPod``:
   higher priority, then the earlier start); split them into those whose deletion would
   violate a PodDisruptionBudget (``filterPodsWithPDBViolation``: each selecting budget's
   allowed disruptions, counted down) and the rest; then reprieve pods, violating ones
   first, as long as the pod still fits; the rest are the victims.
3. ``pickOneNodeForPreemption``: the fewest PDB violations, then the lowest highest victim
   priority, then the smallest sum of victim priorities (each offset by 2^31), then the
   fewest victims, then the latest start among the highest-priority victims; then the first
   node (Joiner: by name; upstream: map order).
4. ``prepareCandidate``: delete the victims (graceful deletion: their grace periods run;
   PDBs are not consulted, a violation is only avoided when another candidate exists), clear
   the nomination of lower-priority pods nominated to that node, and nominate the preemptor
   (``status.nominatedNodeName``). Nominated pods of at least the same priority count as
   placed on their node when others are filtered there (``addNominatedPods``).

Joiner runs the same filters as binding (``Scheduler.feasible_nodes``) on a view of the node
without the removed pods. Upstream samples ``max(10% of nodes, 100)`` candidates from a
random offset; Joiner examines every node (the same below 100 nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api import quantity
from joiner.controllers.termination.pdb import allowed_by_budget, selects
from joiner.scheduling import BoundPod, ExistingNode, Scheduler, SchedulingInput
from joiner.state.cluster import ClusterState, Pod
from joiner.state.snapshot import bound_pod, pod_requests

_OFFSET = 2**31


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the preemptor fits once ``victims`` (most important first) are gone."""

    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int


def _priority(p: Pod) -> int:
    return p.template.priority_value


def _start(p: Pod) -> float:
    return p.bound_at_s if p.bound_at_s is not None else p.created_at_s


def _importance(p: Pod) -> tuple[int, float, int]:
    """Sort key, most important first (``MoreImportantPod``)."""
    return (-_priority(p), _start(p), p.order)


def eligible(state: ClusterState, pod: Pod) -> bool:
    """``PodEligibleToPreemptOthers`` (module docstring, step 1)."""
    if not pod.template.may_preempt:
        return False
    nominated = pod.nominated_node_name
    if nominated is None or nominated not in state.nodes:
        return True
    return not any(
        p.terminating_until_s is not None and _priority(p) < _priority(pod)
        for p in state.pods_on(nominated)
    )


def _bound(p: Pod, node: str) -> BoundPod:
    return bound_pod(node, p.template)


class _View:
    """The Ready nodes with their pods and the nominations that reserve room on them."""

    def __init__(self, state: ClusterState, preemptor: Pod) -> None:
        self.state = state
        self.pod = preemptor
        self.nodes = {n.name: n for n in state.ready_nodes()}
        self.pods = {name: [p for p in state.pods_on(name) if not p.daemon] for name in self.nodes}
        self.daemon_pods = {
            name: [p for p in state.pods_on(name) if p.daemon] for name in self.nodes
        }
        # addNominatedPods: pods nominated here with priority >= the preemptor's.
        self.reserved: dict[str, list[Pod]] = {}
        for p in state.pending_pods():
            if (
                p.uid != preemptor.uid
                and p.nominated_node_name in self.nodes
                and _priority(p) >= _priority(preemptor)
            ):
                self.reserved.setdefault(p.nominated_node_name, []).append(p)
        t = preemptor.template
        anti = any(p.template.pod_anti_affinity for ps in self.pods.values() for p in ps)
        self.local = not (t.spread or t.pod_affinity or t.pod_anti_affinity or anti)
        self.request = pod_requests(state, [preemptor])
        self.scheduler = Scheduler()

    def fits(self, node: str, removed: frozenset[str]) -> bool:
        """The preemptor passes the filters on ``node`` without the ``removed`` pods."""
        n = self.nodes[node]
        used: quantity.Resources = {}
        occupants = [
            *self.daemon_pods[node],
            *(p for p in self.pods[node] if p.uid not in removed),
            *self.reserved.get(node, ()),
        ]
        for p in occupants:
            used = quantity.add(used, p.template.requests)
        free = quantity.subtract(n.allocatable, used)
        if any(free.get(k, 0) < v for k, v in self.pod.template.requests.items()):
            return False
        existing = ExistingNode(
            name=node,
            labels=tuple(sorted(n.labels.items())),
            taints=n.taints,
            available=free,
            initialized=True,
            allocatable=n.allocatable,
        )
        names = [node] if self.local else sorted(self.nodes)
        bound = tuple(
            _bound(p, name)
            for name in names
            for p in (
                *self.daemon_pods[name],
                *self.pods[name],
                *self.reserved.get(name, ()),
            )
            if name != node or p.uid not in removed
        )
        inp = SchedulingInput(
            pods=self.request, existing=(existing,), bound_pods=bound, mode="kube-scheduler"
        )
        return bool(self.scheduler.feasible_nodes(inp, self.pod.uid))


def _violating(state: ClusterState, pods: list[Pod]) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in input order."""
    allowed = allowed_by_budget(state)
    violating: list[Pod] = []
    fine: list[Pod] = []
    for p in pods:
        hit = False
        for i, pdb in enumerate(state.pdbs):
            # A nil or empty selector matches nothing here.
            if pdb.selector is not None and len(pdb.selector) and selects(pdb, p):
                allowed[i] -= 1
                hit = hit or allowed[i] < 0
        (violating if hit else fine).append(p)
    return violating, fine


def select_victims(view: _View, node: str) -> Candidate | None:
    """``SelectVictimsOnNode`` (module docstring, step 2); None when no candidate."""
    lower = [p for p in view.pods[node] if _priority(p) < _priority(view.pod)]
    if not lower:
        return None
    removed = frozenset(p.uid for p in lower)
    if not view.fits(node, removed):
        return None
    lower.sort(key=_importance)
    violating, fine = _violating(view.state, lower)
    victims: list[Pod] = []
    violations = 0
    for group, counts in ((violating, True), (fine, False)):
        for p in group:
            back = removed - {p.uid}
            if view.fits(node, back):
                removed = back
            else:
                victims.append(p)
                violations += counts
    victims.sort(key=_importance)
    return Candidate(node, tuple(victims), violations)


def pick_one(candidates: list[Candidate]) -> Candidate | None:
    """``pickOneNodeForPreemption`` (module docstring, step 3)."""
    if not candidates:
        return None

    def key(c: Candidate) -> tuple[int, int, int, int, float, str]:
        top = _priority(c.victims[0])
        earliest_top = min(_start(v) for v in c.victims if _priority(v) == top)
        return (
            c.pdb_violations,
            top,
            sum(_priority(v) + _OFFSET for v in c.victims),
            len(c.victims),
            -earliest_top,
            c.node,
        )

    return min(candidates, key=key)


def find(state: ClusterState, pod: Pod) -> Candidate | None:
    """The node and victims kube-scheduler would preempt for ``pod``, or None (not eligible,
    or no node where deleting lower-priority pods lets it fit)."""
    if not eligible(state, pod):
        return None
    view = _View(state, pod)
    found = [c for name in sorted(view.nodes) if (c := select_victims(view, name)) is not None]
    return pick_one([c for c in found if c.victims])


def nominate(state: ClusterState, pod: Pod, candidate: Candidate) -> None:
    """Nominate ``pod`` to the candidate's node and clear the nominations of lower-priority
    pods there (``prepareCandidate``); the caller deletes the victims."""
    for p in state.pending_pods():
        if p.nominated_node_name == candidate.node and _priority(p) < _priority(pod):
            p.nominated_node_name = None
    pod.nominated_node_name = candidate.node
