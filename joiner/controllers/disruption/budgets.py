"""Disruption budgets: how many of a NodePool's nodes may be disrupting at once, per reason.

Matches Karpenter's ``BuildDisruptionBudgetMapping`` and ``NodePool.GetAllowedDisruptionsByReason``
(karpenter ``pkg/controllers/disruption/helpers.go`` and ``pkg/apis/v1/nodepool.go``):

1. A pool's nodes are its managed, initialized nodes that are not gone; those NotReady or
   marked for deletion count as already disrupting.
2. ``allowed`` is the minimum over the *active* budgets that name the reason (a budget with
   no reasons names every reason); a percentage rounds up, as a PDB's ``maxUnavailable``
   does. A budget with a ``schedule`` is active from each cron time (UTC) for ``duration``.
3. What is left is ``max(allowed - disrupting, 0)``, decremented as commands are built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from croniter import croniter

from joiner.api.objects import DisruptionBudget, NodePool
from joiner.state.cluster import ClusterState


def is_active(budget: DisruptionBudget, now: datetime) -> bool:
    """The budget applies at ``now`` (a timezone-aware UTC time).

    Karpenter's ``Budget.IsActive``: active when the first cron time after ``now - duration``
    is not after ``now``. A budget without a schedule is always active.
    """
    if budget.schedule is None or budget.duration_s is None:
        return True
    start = now - timedelta(seconds=budget.duration_s)
    hit = croniter(budget.schedule, start).get_next(datetime)
    return bool(hit <= now)


def next_change(budgets: tuple[DisruptionBudget, ...], now: datetime) -> datetime | None:
    """The next time any scheduled budget starts or stops being active, or None."""
    out: datetime | None = None
    for b in budgets:
        if b.schedule is None or b.duration_s is None:
            continue
        it = croniter(b.schedule, now)
        start = it.get_next(datetime)
        candidates = [start]
        prev = croniter(b.schedule, now).get_prev(datetime)
        end = prev + timedelta(seconds=b.duration_s)
        if end > now:
            candidates.append(end)
        for c in candidates:
            if out is None or c < out:
                out = c
    return out


def pool_counts(state: ClusterState, pool: str) -> tuple[int, int]:
    """``(nodes, disrupting)`` of ``pool`` as the budget arithmetic counts them."""
    total = disrupting = 0
    for claim in state.live_nodeclaims():
        if claim.nodepool != pool or claim.initialized_at_s is None:
            continue
        node = state.node_of_claim(claim)
        if node is None:
            continue
        total += 1
        if node.deleting or not node.ready:
            disrupting += 1
    return total, disrupting


def allowed(pool: NodePool, reason: str, total_nodes: int, now: datetime) -> int:
    """Nodes the pool's active budgets naming ``reason`` allow disrupting (before subtracting
    what is already disrupting). With no active budget naming the reason: unlimited."""
    values = [
        b.allowed(total_nodes)
        for b in pool.budgets
        if (not b.reasons or reason in b.reasons) and is_active(b, now)
    ]
    return min(values) if values else total_nodes


@dataclass
class BudgetMapping:
    """What each pool may still disrupt in this pass, per reason (decremented as used).

    Attributes:
        remaining: ``{(pool, reason): nodes}``.
        limiting: ``{(pool, reason): budget description}`` for pools the budgets hold at 0,
            for messages.
        blocked: ``(pool, reason)`` pairs whose active budgets allow no disruption at all
            of a pool that has nodes (Karpenter ``disruption/helpers.go``
            BuildDisruptionBudgetMapping's NodePool DisruptionBlocked Event).
    """

    remaining: dict[tuple[str, str], int] = field(default_factory=dict)
    limiting: dict[tuple[str, str], str] = field(default_factory=dict)
    blocked: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def build(cls, state: ClusterState, now: datetime) -> BudgetMapping:
        """The mapping for every pool and reason at ``now``."""
        out = cls()
        for name, pool in sorted(state.nodepools.items()):
            total, disrupting = pool_counts(state, name)
            for reason in ("Empty", "Drifted", "Underutilized"):
                budget = allowed(pool, reason, total, now)
                if total and budget == 0:
                    out.blocked.add((name, reason))
                left = max(budget - disrupting, 0)
                out.remaining[(name, reason)] = left
                if left == 0:
                    active = [
                        b.describe()
                        for b in pool.budgets
                        if (not b.reasons or reason in b.reasons) and is_active(b, now)
                    ]
                    out.limiting[(name, reason)] = (
                        f"NodePool {name} budget ({'; '.join(active)}) allows 0 more "
                        f"{reason} disruptions of its {total} nodes ({disrupting} already "
                        "disrupting)"
                    )
        return out

    def left(self, pool: str, reason: str) -> int:
        """Nodes ``pool`` may still disrupt for ``reason``."""
        return self.remaining.get((pool, reason), 0)

    def take(self, pool: str, reason: str, n: int = 1) -> None:
        """Use ``n`` of ``pool``'s allowance for ``reason``."""
        self.remaining[(pool, reason)] = self.left(pool, reason) - n
