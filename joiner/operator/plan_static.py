"""``joiner plan``'s static NodePools: what Karpenter's static provisioning and
deprovisioning would do with the manifests' NodeClaims and Nodes (``scheduling.static``).

A static pool's NodeClaims are the manifests' NodeClaims labelled with it, plus its Nodes
that no listed NodeClaim registered (a dump without NodeClaims); one deleting (or on a
deleting Node) counts as deleting, the others as active. A scale-down ranks them as
Karpenter does: NodeClaims without ``status.providerID`` first, then Nodes holding only
DaemonSet pods (none with ``karpenter.sh/do-not-disrupt``), then the others, those with a
do-not-disrupt pod last, lower rescheduling cost first. A dump gives no NodeClaim ages, so
each lifetime counts whole (``LifetimeRemaining`` 1); a duration-valued do-not-disrupt
counts as in force.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from joiner.api.grouping import plural
from joiner.api.manifests import ManifestSet
from joiner.api.objects import NodePool, StandalonePod
from joiner.api.plan_output import PlannedNodeClaim, StaticDeletion
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling import NewNodeClaim
from joiner.scheduling.static import (
    NODES,
    Member,
    PoolCount,
    deprovision_order,
    is_static,
    template_claim,
    to_deprovision,
    to_provision,
)

#: Launches a scheduler NodeClaim as the plan does (``plan._Launcher.launch``).
Launch = Callable[[NewNodeClaim], object]


@dataclass
class StaticRound:
    """What the static pools need: NodeClaims to create and to delete, and warnings."""

    claims: list[PlannedNodeClaim] = field(default_factory=list)
    deletions: list[StaticDeletion] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _pods_on(m: ManifestSet) -> dict[str, list[StandalonePod]]:
    """The running pods of each node, by node name."""
    out: dict[str, list[StandalonePod]] = {}
    for p in m.pods:
        if p.node_name is not None and not p.terminal and not p.deleting:
            out.setdefault(p.node_name, []).append(p)
    return out


def _member(name: str, resolved: bool, pods: Sequence[StandalonePod]) -> Member:
    from joiner.controllers.disruption.candidates import template_eviction_cost

    daemon = [p.owner is not None and p.owner.startswith("DaemonSet/") for p in pods]
    dnd = any(p.template.do_not_disrupt is not None for p in pods)
    return Member(
        name=name,
        resolved=resolved,
        empty=all(daemon) and not dnd,
        do_not_disrupt=dnd,
        cost=sum(template_eviction_cost(p.template) for p in pods),
    )


def count_pool(
    m: ManifestSet, pool: NodePool, pods_on: dict[str, list[StandalonePod]]
) -> tuple[PoolCount, list[Member], dict[str, str | None]]:
    """``pool``'s NodeClaims in the manifests (module docstring): the counts, the active
    ones as deprovisioning ranks them (by name), and each one's Node name."""
    deleting_nodes = {n.name for n in m.nodes if n.deleting}
    active: list[Member] = []
    nodes: dict[str, str | None] = {}
    deleting = 0
    claims = sorted((c for c in m.nodeclaims if c.nodepool == pool.name), key=lambda c: c.name)
    registered = {c.node_name for c in claims if c.node_name is not None}
    for c in claims:
        if c.deleting or c.node_name in deleting_nodes:
            deleting += 1
            continue
        nodes[c.name] = c.node_name
        active.append(_member(c.name, c.launched, pods_on.get(c.node_name or "", [])))
    for n in sorted(m.nodes, key=lambda n: n.name):
        if n.nodepool != pool.name or n.name in registered or n.name in nodes:
            continue
        if n.deleting:
            deleting += 1
            continue
        nodes[n.name] = n.name
        active.append(_member(n.name, True, pods_on.get(n.name, [])))
    return PoolCount(active=len(active), deleting=deleting), active, nodes


def static_round(
    m: ManifestSet,
    pools: Sequence[NodePool],
    types_of: Callable[[NodePool], Sequence[InstanceType]],
    launch: Launch,
) -> StaticRound:
    """The static pools' round (module docstring): each static pool of ``pools``, by name,
    gets the NodeClaims ``to_provision`` asks for (launched by ``launch``) or the
    deletions ``to_deprovision`` asks for."""
    out = StaticRound()
    pods_on = _pods_on(m)
    for pool in sorted((p for p in pools if is_static(p)), key=lambda p: p.name):
        count, members, nodes = count_pool(m, pool, pods_on)
        n = to_provision(pool, count)
        _warn_held_back(pool, count, n, out)
        _provision(pool, n, types_of, launch, out)
        for name in deprovision_order(members, to_deprovision(pool, count)):
            out.deletions.append(
                StaticDeletion(nodePool=pool.name, nodeClaim=name, node=nodes.get(name))
            )
    return out


def _warn_held_back(pool: NodePool, count: PoolCount, n: int, out: StaticRound) -> None:
    """A warning when ``limits.nodes`` leaves ``pool`` short of ``spec.replicas`` (Karpenter
    ``ReserveNodeCount`` caps the count and only logs "nodepool node limit reached")."""
    replicas = pool.replicas or 0
    limit = pool.limit(NODES)
    # A limit below one node draws lint's "can never launch" warning instead.
    if limit is None or limit < 1 or count.active + count.pending_disruption >= replicas:
        return
    wanted = replicas - count.active
    if n >= wanted:
        return
    out.warnings.append(
        f"{pool.source.file}: NodePool/{pool.name}: field spec.limits.nodes: the static pool "
        f"needs {plural(wanted, 'more NodeClaim')} to reach spec.replicas {replicas}, but "
        f"limits.nodes {limit:g} (counting its {count.total} NodeClaims) leaves "
        f"room for {n}"
    )


def _provision(
    pool: NodePool,
    n: int,
    types_of: Callable[[NodePool], Sequence[InstanceType]],
    launch: Launch,
    out: StaticRound,
) -> None:
    """``n`` NodeClaims of ``pool``'s template into ``out`` (a warning when none launches)."""
    if n <= 0:
        return
    new = template_claim(pool, types_of(pool))
    if not new.instance_types:
        out.warnings.append(
            f"{pool.source.file}: NodePool/{pool.name}: static pool needs "
            f"{plural(n, 'NodeClaim')}, but its requirements leave no instance type with an "
            "available offering"
        )
        return
    for _ in range(n):
        launched = launch(new)
        if not isinstance(launched, PlannedNodeClaim):
            out.warnings.append(
                f"{pool.source.file}: NodePool/{pool.name}: static NodeClaim cannot launch: "
                "no available offering"
            )
            return
        out.claims.append(launched)
