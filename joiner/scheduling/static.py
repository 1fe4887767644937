"""Static NodePools: the desired-count rule every command shares.

A NodePool with ``spec.replicas`` (Karpenter's alpha ``StaticCapacity`` feature gate) keeps
that many NodeClaims whatever the pods want. With the gate on:

* it takes no part in pods-driven provisioning (Karpenter
  ``pkg/controllers/provisioning/provisioner.go`` ``NewScheduler`` drops static pools), though
  pods may be bound to its existing nodes;
* its NodeClaims are never consolidated nor emptied (``disruption/emptiness.go`` and
  ``consolidation.go`` ``ShouldDisrupt``: ``OwnedByStaticNodePool``) nor replaced by Drift;
  a drifted one is replaced one for one (``disruption/staticdrift.go``);
* provisioning (``pkg/controllers/static/provisioning/controller.go`` ``Reconcile``)
  creates ``replicas - active`` NodeClaims from the pool's template, with no pods and its
  instance types not narrowed (``scheduling/nodeclaimtemplate.go`` ``ToNodeClaim``: the
  cloud provider's Create picks the offering), when the active and pending-disruption
  NodeClaims are fewer than ``replicas``, capped by ``limits.nodes``
  (``state/statenodepool.go`` ``ReserveNodeCount``);
* deprovisioning (``pkg/controllers/static/deprovisioning/controller.go`` ``Reconcile``,
  ``getDeprovisioningCandidates``) deletes ``active - replicas`` NodeClaims: those without
  a provider id first, then empty nodes, then the others, do-not-disrupt last, cheapest
  rescheduling cost x lifetime remaining first.

``plan`` (``operator/plan.py``), ``disrupt`` (``operator/disrupt.py``), the simulation and
the controller (``controllers/static``, built by ``operator/composition.py``) all count and
order through this module. With the gate off, ``gated`` drops ``replicas`` from the pools
so that they are provisioned like any other, and ``gate_warnings`` says so. That is
Joiner's choice, not Karpenter's: Karpenter's scheduler and disruption skip a static pool
whatever the gate (``IsStatic`` and ``OwnedByStaticNodePool`` are not gated; only the
static provisioning and deprovisioning controllers are), so with the gate off it launches
nothing for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from joiner.api.nodepools import NodePool
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling.types import NewNodeClaim

#: Karpenter ``resources.Node``: the ``limits`` key counting nodes.
NODES = "nodes"


def is_static(pool: NodePool) -> bool:
    """Karpenter ``nodepoolutils.IsStatic``: ``spec.replicas`` is set."""
    return pool.replicas is not None


def gated(pools: Sequence[NodePool], on: bool) -> list[NodePool]:
    """``pools`` as the ``StaticCapacity`` gate leaves them: as they are when ``on``,
    else without ``replicas`` (provisioned for pending pods like any other pool)."""
    if on:
        return list(pools)
    return [replace(p, replicas=None) if is_static(p) else p for p in pools]


def gate_warnings(pools: Sequence[NodePool], on: bool) -> list[str]:
    """The warning each static pool gets while the ``StaticCapacity`` gate is off (none when
    on)."""
    if on:
        return []
    return [
        f"{p.source.file}: NodePool/{p.name}: field spec.replicas (a static NodePool) is not "
        "modelled while Karpenter's alpha StaticCapacity feature gate is off: Joiner "
        "provisions this pool for pending pods like any other and keeps no fixed node "
        "count (Karpenter, gate off, launches nothing for a static pool); turn the gate on "
        "with --feature-gates StaticCapacity=true (a Scenario's "
        "spec.settings.featureGates.staticCapacity, the controller's "
        "featureGates.staticCapacity)"
        for p in pools
        if is_static(p)
    ]


@dataclass(frozen=True)
class PoolCount:
    """A static pool's NodeClaims, as Karpenter's ``NodePoolState`` counts them.

    Attributes:
        active: NodeClaims neither being deleted nor pending disruption.
        deleting: NodeClaims being deleted.
        pending_disruption: candidates of a disruption command not deleted yet.
    """

    active: int
    deleting: int = 0
    pending_disruption: int = 0

    @property
    def total(self) -> int:
        """Every NodeClaim of the pool (what ``limits.nodes`` counts)."""
        return self.active + self.deleting + self.pending_disruption


def _reserve(pool: NodePool, count: PoolCount, wanted: int) -> int:
    """Karpenter ``NodePoolState.ReserveNodeCount``: at most ``wanted``, within what
    ``limits.nodes`` leaves after every NodeClaim of the pool (0 when none is left)."""
    limit = pool.limit(NODES)
    if limit is None:
        return wanted
    left = limit - count.total
    return max(0, min(wanted, left))


def to_provision(pool: NodePool, count: PoolCount) -> int:
    """How many NodeClaims static provisioning creates for ``pool`` now (Karpenter
    ``static/provisioning/controller.go`` ``Reconcile``): none while active plus pending
    disruption reach ``replicas``, else ``replicas - active`` within ``limits.nodes``."""
    if pool.replicas is None or count.active + count.pending_disruption >= pool.replicas:
        return 0
    return _reserve(pool, count, pool.replicas - count.active)


def to_deprovision(pool: NodePool, count: PoolCount) -> int:
    """How many NodeClaims static deprovisioning deletes now (Karpenter
    ``static/deprovisioning/controller.go`` ``Reconcile``): ``active - replicas``."""
    if pool.replicas is None:
        return 0
    return max(0, count.active - pool.replicas)


def drift_replacements(pool: NodePool, count: PoolCount, budget: int, drifted: int) -> int:
    """How many drifted NodeClaims of ``pool`` StaticDrift replaces now (Karpenter
    ``disruption/staticdrift.go`` ``ComputeCommands``): none while a scale-down is due
    (active plus pending disruption above ``replicas``), else up to the budget and the
    drifted count, within ``limits.nodes`` (each replacement launches before its candidate
    goes)."""
    if pool.replicas is None or budget <= 0:
        return 0
    if count.active + count.pending_disruption > pool.replicas:
        return 0
    return _reserve(pool, count, min(budget, drifted))


@dataclass(frozen=True)
class Member:
    """A static pool's NodeClaim as deprovisioning ranks it.

    Attributes:
        name: the NodeClaim's name.
        resolved: it has a provider id (an instance launched).
        empty: its node holds only DaemonSet pods, none with do-not-disrupt in force.
        do_not_disrupt: a pod on it has do-not-disrupt in force.
        cost: its pods' rescheduling cost x its lifetime remaining (Karpenter
            ``disruptionutils.ReschedulingCost`` x ``LifetimeRemaining``).
    """

    name: str
    resolved: bool
    empty: bool = False
    do_not_disrupt: bool = False
    cost: float = 0.0


def deprovision_order(members: Sequence[Member], count: int) -> list[str]:
    """The ``count`` NodeClaims deprovisioning deletes, in its order (Karpenter
    ``getDeprovisioningCandidates``): unresolved ones (no provider id) first, then empty
    nodes, then the rest, those with a do-not-disrupt pod last, lower cost first.

    ``members`` come in listing order (Karpenter lists from its informer cache, in no set
    order; Joiner lists by name), which breaks ties."""
    unresolved = [m.name for m in members if not m.resolved]
    empty = [m.name for m in members if m.resolved and m.empty]
    others = sorted(
        (m for m in members if m.resolved and not m.empty),
        key=lambda m: (m.do_not_disrupt, m.cost),
    )
    return [*unresolved, *empty, *(m.name for m in others)][: max(0, count)]


def template_claim(pool: NodePool, types: Sequence[InstanceType]) -> NewNodeClaim:
    """A static NodeClaim of ``pool`` (Karpenter ``scheduling.NewNodeClaimTemplate``): the
    pool's requirements, no pods and no requests, and every instance type of ``types`` its
    requirements allow with an available offering, cheapest first, for the cloud's launch to
    choose from (``ToNodeClaim`` does not narrow a static claim's types)."""
    reqs = pool.requirements
    priced: list[tuple[float, str, InstanceType]] = []
    for it in types:
        price = it.cheapest_price(reqs) if it.requirements.intersects(reqs) is None else None
        if price is not None:
            priced.append((price, it.name, it))
    priced.sort(key=lambda t: (t[0], t[1]))
    return NewNodeClaim(
        nodepool=pool.name,
        requirements=reqs,
        instance_types=tuple(it for _, _, it in priced),
        pods=(),
        requests={},
    )
