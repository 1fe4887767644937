"""A static NodePool's NodeClaims counted as Karpenter's ``NodePoolState`` counts them
(``state/statenodepool.go`` ``GetNodeCount``), for ``scheduling.static``'s rules."""

from __future__ import annotations

from joiner.scheduling.static import PoolCount
from joiner.state.cluster import ClusterState


def pool_count(state: ClusterState, pool: str, pending: frozenset[str]) -> PoolCount:
    """``pool``'s live NodeClaims as Karpenter's ``NodePoolState`` counts them: those named
    in ``pending`` (candidates of a disruption command not yet deleted) pending disruption,
    those whose node is being deleted deleting, the rest active."""
    active = deleting = pending_n = 0
    for claim in state.live_nodeclaims():
        if claim.nodepool != pool:
            continue
        node = state.node_of_claim(claim)
        if claim.name in pending:
            pending_n += 1
        elif node is not None and (node.deleting or node.deleted_at_s is not None):
            deleting += 1
        else:
            active += 1
    return PoolCount(active=active, deleting=deleting, pending_disruption=pending_n)
