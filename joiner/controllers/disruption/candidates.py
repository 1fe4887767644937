"""Disruption candidates: which nodes a method may disrupt, and why the others may not.

Matches Karpenter's ``GetCandidates`` / ``NewCandidate`` (karpenter
``pkg/controllers/disruption/helpers.go`` and ``types.go``). A node is
a candidate when its NodeClaim is launched, registered and initialized, it is not marked for
deletion, it has no ``karpenter.sh/do-not-disrupt`` annotation, its NodePool exists, and
(for *graceful* methods) every pod on it may be evicted now: none has an active
``karpenter.sh/do-not-disrupt`` and no PodDisruptionBudget covering it is at 0. Drift is
*eventual*: a pool with a ``terminationGracePeriod`` lets blocked nodes be candidates, since
the drain ends at that deadline anyway.

A pod's eviction cost is Karpenter's ``EvictionCost`` (karpenter
``pkg/utils/disruption/disruption.go``): 1, plus its ``controller.kubernetes.io/pod-deletion-cost``
divided by 2^27, plus its priority divided by 2^25, clamped to [-10, 10]. Each candidate
carries its price (its offering's), its disruption cost (the eviction costs of all its pods,
DaemonSet pods too, scaled by the fraction of its lifetime left before ``expireAfter``:
``ReschedulingCost`` x ``LifetimeRemaining``), and its reschedule cost, 1 plus the positive
eviction costs of the pods that must move (``types.go`` ``computeRescheduleDisruptionCost``).
Consolidation orders candidates by savings ratio, price / reschedule cost (``SavingsRatio``),
and a node is *empty* when its reschedule cost is at most 1 (``IsEmpty``): no pod, or pods
whose eviction costs are all 0 or less, which Emptiness then deletes.

Graceful methods may not take a node any of whose active pods, DaemonSet pods included, has
``karpenter.sh/do-not-disrupt`` in force (``statenode.go`` ``ValidatePodsDisruptable``, pod
utils ``IsDisruptable``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api.objects import NodePool
from joiner.api.pods import PodTemplate
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.verdicts import Verdict, VerdictKind
from joiner.controllers.termination.pdb import Budgets, budgets
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod


@dataclass
class Candidate:
    """One node a disruption method may act on.

    Attributes:
        node: the node.
        claim: its NodeClaim (launched: ``instance`` set).
        pool: its NodePool.
        pods: the pods that must move (live, not DaemonSet pods), by creation order.
        price_per_hour: its offering's price, USD.
        disruption_cost: the sum of its pods' eviction costs (DaemonSet pods too) scaled by
            the fraction of its lifetime left (Karpenter ``NewCandidate`` ``DisruptionCost``).
        reschedule_cost: 1 plus the positive eviction costs of ``pods`` (Karpenter
            ``RescheduleDisruptionCost``); at least 1.
        consolidatable: ``consolidateAfter`` has passed since its last pod event.
        blocked: why a graceful method may not disrupt it (an eventual one may), or None:
            a ``POD_DO_NOT_DISRUPT`` or ``PDB_BLOCKS`` verdict (Karpenter's DisruptionBlocked
            Event, ``disruption/types.go`` NewCandidate from ``statenode.go``
            ValidatePodsDisruptable).
    """

    node: Node
    claim: NodeClaim
    pool: NodePool
    pods: list[Pod]
    price_per_hour: float
    disruption_cost: float
    reschedule_cost: float
    consolidatable: bool
    blocked: Verdict | None = None
    drifted: str | None = field(default=None)

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.name

    @property
    def instance_type(self) -> InstanceType:
        """The instance type it runs on."""
        assert self.claim.instance is not None
        return self.claim.instance.instance_type

    @property
    def capacity_type(self) -> str:
        """``spot`` or ``on-demand``."""
        assert self.claim.instance is not None
        return self.claim.instance.offering.capacity_type

    @property
    def zone(self) -> str:
        """Its availability zone."""
        assert self.claim.instance is not None
        return self.claim.instance.offering.zone

    @property
    def empty(self) -> bool:
        """No pod with a positive eviction cost has to move: the reschedule cost is at most 1
        (Karpenter ``pkg/controllers/disruption/types.go`` ``IsEmpty``)."""
        return self.reschedule_cost <= PER_NODE_BASE_COST

    @property
    def savings_ratio(self) -> float:
        """Price per unit of disruption, USD per hour: higher goes first (Karpenter
        ``types.go`` ``SavingsRatio``: price / reschedule cost)."""
        return self.price_per_hour / self.reschedule_cost


#: Karpenter ``types.go`` ``PerNodeBaseDisruptionCost``: draining any node costs 1.
PER_NODE_BASE_COST = 1.0
#: ``EvictionCost`` divides a pod's deletion cost by 2^27 and its priority by 2^25.
_DELETION_COST_SCALE = 2.0**27
_PRIORITY_SCALE = 2.0**25
#: ``EvictionCost`` clamps a pod's cost to [-10, 10].
_EVICTION_COST_MIN, _EVICTION_COST_MAX = -10.0, 10.0


def eviction_cost(pod: Pod) -> float:
    """The cost of evicting ``pod`` (Karpenter ``pkg/utils/disruption/disruption.go``
    ``EvictionCost``): 1, plus ``controller.kubernetes.io/pod-deletion-cost`` / 2^27, plus
    the pod's priority / 2^25, clamped to [-10, 10]. A pod without either counts 1.

    The API server admits only 32-bit integers as deletion costs
    (``corevalidation.pod_deletion_cost``), so Karpenter's case of a value it cannot parse
    (logged and left out) never arises here.
    """
    return template_eviction_cost(pod.template)


def template_eviction_cost(template: PodTemplate) -> float:
    """``eviction_cost`` of a pod made from ``template`` (it reads the template only)."""
    cost = 1.0
    if template.deletion_cost is not None:
        cost += template.deletion_cost / _DELETION_COST_SCALE
    if template.priority is not None:
        cost += template.priority / _PRIORITY_SCALE
    return min(_EVICTION_COST_MAX, max(_EVICTION_COST_MIN, cost))


def reschedule_cost(pods: list[Pod]) -> float:
    """1 plus the positive eviction costs of ``pods``, the pods that must move, added in
    order (Karpenter ``types.go`` ``computeRescheduleDisruptionCost``)."""
    cost = PER_NODE_BASE_COST
    for p in pods:
        cost += max(0.0, eviction_cost(p))
    return cost


#: ``template_eviction_cost`` by template id, with the template (kept so that its id stays
#: valid; a template never changes, so its cost holds across passes).
_COSTS: dict[int, tuple[PodTemplate, float]] = {}
_COSTS_MAX = 1 << 16


def _node_costs(on_node: list[Pod]) -> tuple[float, float]:
    """``(ReschedulingCost of every pod on the node, reschedule cost of its pods that must
    move)``: the sum of all eviction costs, and 1 plus the positive ones of the pods that
    are not DaemonSet pods, each added in order as Karpenter does. A pod's cost depends on
    its template only (replicas share one), so it is worked out once per template."""
    total = 0.0
    moving = PER_NODE_BASE_COST
    for p in on_node:
        known = _COSTS.get(id(p.template))
        if known is not None and known[0] is p.template:
            cost = known[1]
        else:
            cost = eviction_cost(p)
            if len(_COSTS) >= _COSTS_MAX:
                _COSTS.clear()
            _COSTS[id(p.template)] = (p.template, cost)
        total += cost
        if not p.daemon and cost > 0.0:
            moving += cost
    return total, moving


def lifetime_remaining(claim: NodeClaim, pool: NodePool, now_s: float) -> float:
    """The fraction of ``claim``'s life left before its pool's ``expireAfter``, in [0, 1]
    (1 without one; Karpenter ``disruptionutils.LifetimeRemaining``)."""
    if pool.expire_after_s is None or pool.expire_after_s <= 0:
        return 1.0
    age = now_s - claim.created_at_s
    return min(1.0, max(0.0, 1.0 - age / pool.expire_after_s))


def consolidatable(node: Node, pool: NodePool, now_s: float, *, elapsed: bool = False) -> bool:
    """``consolidateAfter`` has passed since the node's last pod event (``Never``: never).

    ``elapsed`` treats any finite ``consolidateAfter`` as passed for a node whose last pod
    event is not known (the dry run of a dump without the NodeClaim's
    ``status.lastPodEventTime``); a known one is still checked.
    """
    if pool.consolidate_after_s is None:
        return False
    if elapsed and node.last_pod_event_s is None:
        return True
    since = node.last_pod_event_s if node.last_pod_event_s is not None else node.created_at_s
    return now_s >= since + pool.consolidate_after_s


def consolidatable_at(node: Node, pool: NodePool) -> float | None:
    """When ``consolidateAfter`` will have passed for ``node`` (None: ``Never``)."""
    if pool.consolidate_after_s is None:
        return None
    since = node.last_pod_event_s if node.last_pod_event_s is not None else node.created_at_s
    return since + pool.consolidate_after_s


def _blocker(
    state: ClusterState, on_node: list[Pod], pods: list[Pod], now_s: float, pdbs: Budgets
) -> Verdict | None:
    """Why the first pod that blocks a graceful disruption does, or None (Karpenter
    ``statenode.go`` ``ValidatePodsDisruptable``): a pod of ``on_node`` (every pod on the
    node, DaemonSet pods too) that is active (not shutting down) with do-not-disrupt in
    force (pod utils ``IsDisruptable``), then a pod of ``pods`` (those that must move) that
    a PDB allows no eviction. ``pdbs``: the cluster's budgets now."""
    for pod in on_node:
        if pod.terminating_until_s is None and pod.blocks_disruption(now_s):
            return Verdict(VerdictKind.POD_DO_NOT_DISRUPT, pod=f"{pod.namespace}/{pod.name}")
    if not state.pdbs:
        return None
    for pod in pods:
        pdb = pdbs.blocking(pod)
        if pdb is not None:
            return Verdict(
                VerdictKind.PDB_BLOCKS,
                pdb=f"{pdb.namespace}/{pdb.name}",
                pod=f"{pod.namespace}/{pod.name}",
            )
    return None


@dataclass
class CandidateSet:
    """The candidates of one pass, and a reason for every managed node that is not one."""

    candidates: list[Candidate]
    excluded: dict[str, Verdict]


def collect(state: ClusterState, now_s: float, *, elapsed: bool = False) -> CandidateSet:
    """Candidates among the cluster's nodes at ``now_s`` (by node name).

    ``elapsed`` treats ``consolidateAfter`` as passed (the dry run of a running cluster).
    """
    out: list[Candidate] = []
    excluded: dict[str, Verdict] = {}
    pdbs = budgets(state)
    for claim in state.live_nodeclaims():
        node = state.node_of_claim(claim)
        if node is None:
            continue
        name = node.name
        pool = state.nodepools.get(claim.nodepool)
        if pool is None:
            excluded[name] = Verdict(VerdictKind.POOL_UNKNOWN, pool=claim.nodepool)
            continue
        if node.deleting:
            excluded[name] = Verdict(VerdictKind.BEING_DELETED)
            continue
        if claim.instance is None or claim.initialized_at_s is None or not node.ready:
            excluded[name] = Verdict(VerdictKind.NOT_INITIALIZED)
            continue
        if node.do_not_disrupt:
            excluded[name] = Verdict(VerdictKind.NODE_DO_NOT_DISRUPT)
            continue
        if claim.nominated_until_s is not None and claim.nominated_until_s > now_s:
            # Karpenter ``StateNode.ValidateNodeDisruptable``: pending pods are on their
            # way to it (kube-scheduler has not bound them yet).
            excluded[name] = Verdict(VerdictKind.NOMINATED)
            continue
        on_node = state.pods_on(name)
        pods = [p for p in on_node if not p.daemon]
        # Karpenter ``types.go`` ``NewCandidate``: ``ReschedulingCost`` of all the node's
        # pods x ``LifetimeRemaining``, and the reschedule cost of those that move.
        total, moving = _node_costs(on_node)
        blocked = _blocker(state, on_node, pods, now_s, pdbs)
        out.append(
            Candidate(
                node=node,
                claim=claim,
                pool=pool,
                pods=pods,
                price_per_hour=claim.instance.offering.price_per_hour,
                disruption_cost=total * lifetime_remaining(claim, pool, now_s),
                reschedule_cost=moving,
                consolidatable=consolidatable(node, pool, now_s, elapsed=elapsed),
                blocked=blocked,
            )
        )
    return CandidateSet(out, excluded)
