"""Disruption candidates: which nodes a method may disrupt, and why the others may not.

Matches Karpenter's ``GetCandidates`` / ``NewCandidate`` (karpenter
``pkg/controllers/disruption/helpers.go`` and ``types.go``). A node is
a candidate when its NodeClaim is launched, registered and initialized, it is not marked for
deletion, it has no ``karpenter.sh/do-not-disrupt`` annotation, its NodePool exists, and
(for *graceful* methods) every pod on it may be evicted now: none has an active
``karpenter.sh/do-not-disrupt`` and no PodDisruptionBudget covering it is at 0. Drift is
*eventual*: a pool with a ``terminationGracePeriod`` lets blocked nodes be candidates, since
the drain ends at that deadline anyway.

Each candidate carries its price (its offering's), its disruption cost (Karpenter's
``EvictionCost`` of 1 per pod, scaled by the fraction of its lifetime left before
``expireAfter``) and its savings ratio, price / (1 + cost of rescheduling its pods), by which
consolidation orders candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api.objects import NodePool
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
        disruption_cost: the sum of its pods' eviction costs scaled by lifetime left.
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
        """No pod has to move (Karpenter: reschedule cost <= 1)."""
        return not self.pods

    @property
    def savings_ratio(self) -> float:
        """Price per unit of disruption: higher goes first (Karpenter's ``SavingsRatio``)."""
        return self.price_per_hour / (1.0 + len(self.pods))


def _lifetime_remaining(claim: NodeClaim, pool: NodePool, now_s: float) -> float:
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


def _blocker(state: ClusterState, pods: list[Pod], now_s: float, pdbs: Budgets) -> Verdict | None:
    """Why the first pod that blocks a graceful disruption does (its do-not-disrupt
    annotation, then a PDB allowing no eviction), or None (``statenode.go``
    ValidatePodsDisruptable). ``pdbs``: the cluster's budgets now."""
    for pod in pods:
        if pod.blocks_disruption(now_s):
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
        pods = [p for p in state.pods_on(name) if not p.daemon]
        cost = len(pods) * _lifetime_remaining(claim, pool, now_s)
        blocked = _blocker(state, pods, now_s, pdbs)
        out.append(
            Candidate(
                node=node,
                claim=claim,
                pool=pool,
                pods=pods,
                price_per_hour=claim.instance.offering.price_per_hour,
                disruption_cost=cost,
                consolidatable=consolidatable(node, pool, now_s, elapsed=elapsed),
                blocked=blocked,
            )
        )
    return CandidateSet(out, excluded)
