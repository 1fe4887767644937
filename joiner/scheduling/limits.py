"""NodePool limits and ``minValues`` inside one provisioning solve (``scheduler``).

Limits are accounted pessimistically, as Karpenter's scheduler does
(``pkg/controllers/provisioning/scheduling/scheduler.go``, ``remainingResources``): existing
nodes count fully and each new NodeClaim subtracts the largest capacity among its
instance-type options (but not a node: ``subtract_max``); options larger than what is left
are dropped
(``InstanceTypes.filterByRemainingResources``). A NodeClaim must keep each requirement's
``minValues`` distinct values among its options under the ``Strict`` policy
(``InstanceTypes.SatisfiesMinValues``); ``BestEffort`` relaxes it.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from joiner.api import quantity
from joiner.api.requirements import Requirements
from joiner.scheduling.pool import IntArray, PreparedPool


def min_values_short(
    pool: PreparedPool, reqs: Requirements, options: IntArray, policy: str
) -> str | None:
    """Why ``options`` (indices into ``pool.types``) break a ``minValues`` of ``reqs`` under
    ``policy`` (``Strict``), or None when they keep every one (or the policy is
    ``BestEffort``)."""
    for key, least in _min_values(reqs):
        distinct = int(pool.values_matrix(key)[options].any(axis=0).sum())
        if distinct < least and policy == "Strict":
            return (
                f"only {distinct} distinct {key} values remain among the instance types "
                f"that fit, below minValues {least}"
            )
    return None


def _min_values(reqs: Requirements) -> tuple[tuple[str, int], ...]:
    """``(key, minValues)`` of each requirement of ``reqs`` that sets one, kept in the
    set's memo (it is read for every pod a NodeClaim takes)."""
    memo = reqs.memo()
    found = memo.get(("min_values",))
    if found is None:
        found = memo[("min_values",)] = tuple(
            (key, r.min_values) for key, r in reqs.items() if r.min_values is not None
        )
    return cast("tuple[tuple[str, int], ...]", found)


def within_limits(pool: PreparedPool) -> IntArray:
    """Indices of ``pool.types`` whose capacity fits what the NodePool's limits leave."""
    all_idx = np.arange(len(pool.types), dtype=np.int64)
    if not pool.remaining:
        return all_idx
    if pool.remaining.get("nodes", 1) < 1:
        return all_idx[:0]
    keep = np.ones(len(pool.types), dtype=np.bool_)
    for k, v in pool.remaining.items():
        if k == "nodes":
            continue
        if k in pool.resources:
            keep &= pool.capacity[:, pool.resources.index(k)] <= v
        elif v < 0:
            keep[:] = False
    return all_idx[keep]


def limit_reason(pool: PreparedPool) -> str:
    """Why the NodePool's limits leave no instance type, in words a person can act on."""
    limits = dict(pool.nodepool.limits)
    if pool.remaining.get("nodes", 1) < 1:
        return f"limit nodes={limits.get('nodes')} is reached"
    for k, left in sorted(pool.remaining.items()):
        if k == "nodes" or k not in pool.resources:
            continue
        smallest = int(pool.capacity[:, pool.resources.index(k)].min())
        if left < smallest:
            return (
                f"limit {quantity.format_resources({k: limits[k]})} leaves "
                f"{quantity.format_resources({k: max(left, 0)})}, less than the smallest "
                "instance type; existing nodes count fully and each new NodeClaim counts "
                "its largest option (Karpenter's pessimistic accounting)"
            )
    return "its limits leave no room for another node"


def subtract_max(pool: PreparedPool, options: IntArray) -> None:
    """Charge a new NodeClaim to the NodePool's remaining limits: per resource, the largest
    capacity among its ``options``.

    A ``nodes`` limit is not charged: Karpenter's ``subtractMax``
    (``pkg/controllers/provisioning/scheduling/scheduler.go``) subtracts only what an
    instance type's capacity lists, which has no ``nodes``, so within one scheduling run a
    ``nodes`` limit stops new NodeClaims only when the existing nodes already reach it
    (``updateRemainingResources`` counts each existing node as one).
    """
    for k in list(pool.remaining):
        if k in pool.resources:
            pool.remaining[k] -= int(pool.capacity[options, pool.resources.index(k)].max())
