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
without the removed pods. For a pod without spread, pod affinity, anti-affinity or host
ports (and no anti-affinity on the nodes), only the resources depend on which pods are
removed: the other filters are run once per node and their verdict reused.

Like upstream (``DryRunPreemption`` with ``GetOffsetAndNumCandidates``,
``calculateNumCandidates``; ``DefaultPreemptionArgs`` ``minCandidateNodesPercentage`` 10,
``minCandidateNodesAbsolute`` 100), the dry run stops once it has found at least one
candidate without PDB violations and ``max(10% of the nodes, 100)`` candidates in all
(at most every node). Upstream starts at a random node; Joiner starts at the first node by
name, so its answer is deterministic. With 100 nodes or fewer every node is examined.
Upstream takes 10% of the nodes where preemption might help (``nodesWherePreemptionMightHelp``:
not refused by a filter removing pods cannot change); Joiner takes 10% of the Ready nodes, so
it looks for at least as many candidates. Nodes without a pod of lower priority are skipped.

Not modelled: DaemonSet pods are never victims here. Upstream ``SelectVictimsOnNode`` takes
any pod of lower priority, a DaemonSet's too (most run at ``system-node-critical``, above any
workload); its controller then recreates the pod pinned to that node, where it waits or
preempts in turn. A DaemonSet pod of lower priority than a preemptor counts as room the
preemptor cannot take.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api import quantity
from joiner.api.objects import PodTemplate
from joiner.controllers.termination.pdb import allowed_by_budget, selects
from joiner.scheduling import BoundPod, ExistingNode, Scheduler, SchedulingInput
from joiner.state.cluster import ClusterState, Pod
from joiner.state.snapshot import bound_pod, pod_requests

_OFFSET = 2**31
#: ``DefaultPreemptionArgs`` defaults (Kubernetes pkg/scheduler/apis/config/v1 defaults.go
#: ``SetDefaults_DefaultPreemptionArgs``).
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def num_candidates(num_nodes: int) -> int:
    """How many candidates the dry run looks for among ``num_nodes`` nodes: 10% of them,
    at least 100, at most all (Kubernetes pkg/scheduler/framework/plugins/defaultpreemption
    default_preemption.go ``calculateNumCandidates``)."""
    n = num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(n, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


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


class _PodsOn(dict[str, list[Pod]]):
    """Node name -> its live DaemonSet pods (``daemon``) or other pods, read from the state
    when first asked for (the dry run looks at few nodes of a large cluster)."""

    def __init__(self, state: ClusterState, daemon: bool) -> None:
        super().__init__()
        self.state = state
        self.daemon = daemon

    def __missing__(self, node: str) -> list[Pod]:
        pods = self[node] = [p for p in self.state.pods_on(node) if p.daemon == self.daemon]
        return pods


#: Per (node name, template): the verdict of the filters other than resources for a pod
#: whose verdict does not depend on the pods removed (``_View.static``). Valid while the
#: nodes, the templates and the volume terms are unchanged (``find``'s ``verdicts``).
Verdicts = dict[tuple[str, PodTemplate], bool]


class _View:
    """The Ready nodes with their pods and the nominations that reserve room on them."""

    def __init__(
        self, state: ClusterState, preemptor: Pod, verdicts: Verdicts | None = None
    ) -> None:
        self.state = state
        self.pod = preemptor
        self.nodes = {n.name: n for n in state.ready_nodes()}
        self.pods = _PodsOn(state, daemon=False)
        self.daemon_pods = _PodsOn(state, daemon=True)
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
        anti, self.holders = self._scan()
        self.local = not (t.spread or t.pod_affinity or t.pod_anti_affinity or anti)
        #: Only the resources depend on the removed pods (module docstring).
        self.static = self.local and not t.host_ports
        #: The other filters' verdicts (``static`` pods only).
        self.verdicts: Verdicts = {} if verdicts is None else verdicts
        self.request = pod_requests(state, [preemptor])
        self.scheduler = Scheduler()
        #: Each PodDisruptionBudget's allowed disruptions (``allowed_by_budget``), once read.
        self.allowed: list[int] | None = None

    def _scan(self) -> tuple[bool, set[str]]:
        """One walk over the live pods: whether a pod on the nodes has required
        anti-affinity, and the nodes with a pod of lower priority than the preemptor (the
        only ones where preemption might help)."""
        anti = False
        holders: set[str] = set()
        below = _priority(self.pod)
        for p in self.state.live_pods():
            if p.daemon or p.node_name not in self.nodes:
                continue
            anti = anti or bool(p.template.pod_anti_affinity)
            if p.template.priority_value < below:
                holders.add(p.node_name)
        return anti, holders

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
        if not self.static:
            return self._filters(node, removed, free)
        key = (node, self.pod.template)
        verdict = self.verdicts.get(key)
        if verdict is None:
            verdict = self.verdicts[key] = self._filters(node, removed, free)
        return verdict

    def _filters(self, node: str, removed: frozenset[str], free: quantity.Resources) -> bool:
        """``Scheduler.feasible_nodes`` for the preemptor on ``node`` without ``removed``,
        whose room is ``free``."""
        n = self.nodes[node]
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


def _violating(view: _View, pods: list[Pod]) -> tuple[list[Pod], list[Pod]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in input order."""
    state = view.state
    if view.allowed is None:  # the same for every node of one dry run
        view.allowed = allowed_by_budget(state)
    allowed = list(view.allowed)
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
    violating, fine = _violating(view, lower)
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


def find(state: ClusterState, pod: Pod, verdicts: Verdicts | None = None) -> Candidate | None:
    """The node and victims kube-scheduler would preempt for ``pod``, or None (not eligible,
    or no node where deleting lower-priority pods lets it fit).

    ``verdicts``: a memo a caller may pass to calls over the same nodes, templates and
    volume terms; None: one per call."""
    if not eligible(state, pod):
        return None
    view = _View(state, pod, verdicts)
    return pick_one(_dry_run(view))


def _dry_run(view: _View) -> list[Candidate]:
    """``DryRunPreemption``: the candidates (each with victims), trying nodes by name from
    the first until at least one has no PDB violation and ``num_candidates`` are found."""
    wanted = num_candidates(len(view.nodes))
    found: list[Candidate] = []
    clean = 0
    for name in view.nodes:  # by name (``ready_nodes``)
        if name not in view.holders:
            continue  # nothing of lower priority to remove
        c = select_victims(view, name)
        if c is None or not c.victims:
            continue
        found.append(c)
        clean += c.pdb_violations == 0
        if clean and len(found) >= wanted:
            break
    return found


def nominate(state: ClusterState, pod: Pod, candidate: Candidate) -> None:
    """Nominate ``pod`` to the candidate's node and clear the nominations of lower-priority
    pods there (``prepareCandidate``); the caller deletes the victims."""
    for p in state.pending_pods():
        if p.nominated_node_name == candidate.node and _priority(p) < _priority(pod):
            p.nominated_node_name = None
    pod.nominated_node_name = candidate.node
