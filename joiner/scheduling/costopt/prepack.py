"""Pure helpers of the cost-optimal packing (``solver``): the pre-packing of one instance
type's pods into planned NodeClaims, per-node caps of hostname groups, and rounding."""

from __future__ import annotations

import numpy as np

from joiner.api import labels
from joiner.api.objects import DO_NOT_SCHEDULE, PodTemplate
from joiner.api.requirements import Requirements
from joiner.scheduling.pool import FloatArray, IntArray

#: Pre-packing: weight of keeping a NodeClaim's resources balanced against pod size.
BALANCE = 10.0


def fill(
    share: FloatArray,
    counts: IntArray,
    group: IntArray,
    cap: IntArray,
    n_groups: int,
    balance: bool,
    zone: IntArray | None = None,
) -> tuple[float, list[list[int]]]:
    """One pre-packing (``_CostSolve._prepack``) of ``counts`` pods per row of ``share``:
    with ``balance``, the largest pod that keeps the NodeClaim's content pointing the way
    the remaining pods' total points; without, the pod with the largest dot product with
    the NodeClaim's room (the DotProduct heuristic of vector bin packing). Returns the sum
    over NodeClaims of their fullest resource's share (what they cost once each launches
    the cheapest type that fits, for prices proportional to size) and each NodeClaim's row
    indices. ``zone`` gives each row's zone code (-1: any): a NodeClaim takes the zone of
    its first zone-bound pod and then takes no pod bound to another zone (``zones``)."""
    left = counts.copy()
    bins: list[list[int]] = []
    remaining = (share * left[:, None]).sum(axis=0)
    sizes = share.sum(axis=1)
    used = 0.0
    while left.sum() > 0:
        room = np.ones(share.shape[1])
        in_group = np.zeros(n_groups, dtype=np.int64)
        content: list[int] = []
        bin_zone = -1
        while True:
            ok = (left > 0) & (share <= room + 1e-9).all(axis=1)
            ok &= (cap < 0) | (in_group[group] < cap)
            if zone is not None and bin_zone >= 0:
                ok &= (zone < 0) | (zone == bin_zone)
            if not ok.any():
                break
            if balance:
                after = (1.0 - room) + share
                direction = after / np.maximum(after.sum(axis=1, keepdims=True), 1e-12)
                target = remaining / max(float(remaining.sum()), 1e-12)
                score = sizes - BALANCE * np.abs(direction - target).sum(axis=1)
            else:
                score = share @ room
            i = int(np.argmax(np.where(ok, score, -np.inf)))
            remaining -= share[i]
            room -= share[i]
            left[i] -= 1
            in_group[group[i]] += 1
            content.append(i)
            if zone is not None and zone[i] >= 0:
                bin_zone = int(zone[i])
        if not content:
            break  # nothing fits an empty NodeClaim: those pods keep Karpenter's rules
        bins.append(content)
        used += float((1.0 - room).max())
    return used, bins


def size(t: PodTemplate) -> float:
    """A pod's size for ordering: its CPU cores plus memory GiB."""
    r = t.requests
    return r.get("cpu", 0) / 1000 + r.get("memory", 0) / 2**30


def per_node(t: PodTemplate) -> tuple[int | None, object]:
    """At most this many pods of ``t``'s hostname group fit one node: 1 under a required
    anti-affinity on the hostname selecting ``t`` itself, ``maxSkew`` under a DoNotSchedule
    hostname spread selecting it (each new NodeClaim is an empty hostname domain). The group
    key is returned with it."""
    own = Requirements.from_labels(dict(t.labels))
    strict: frozenset[str] = frozenset()
    for term in t.pod_anti_affinity:
        if (
            term.key == labels.HOSTNAME
            and own.compatible(term.selector, allow_undefined=strict) is None
        ):
            return 1, ("anti", term, t.labels)
    for c in t.spread:
        if (
            c.key == labels.HOSTNAME
            and c.when_unsatisfiable == DO_NOT_SCHEDULE
            and own.compatible(c.selector, allow_undefined=strict) is None
        ):
            return c.max_skew, ("spread", c, t.labels)
    return None, None


def pods_per_node(net: IntArray, vec: IntArray | FloatArray, cap: int | None) -> FloatArray:
    """How many ``vec`` fit in each row of ``net`` (fractional), at most ``cap``."""
    used = vec > 0
    if not used.any():
        out = np.full(len(net), np.inf)
    else:
        out = (net[:, used] / vec[used]).min(axis=1).astype(np.float64)
    if cap is not None:
        out = np.minimum(out, float(cap))
    return out


def largest_remainder(shares: list[tuple[int, float]], total: int) -> list[tuple[int, int]]:
    """Integer counts summing to ``total`` in proportion to ``shares`` (Hamilton's method,
    ties to the earlier column)."""
    if not shares:
        return []
    values = np.array([max(v, 0.0) for _, v in shares])
    if values.sum() <= 0:
        values = np.ones(len(shares))
    values *= total / values.sum()
    base = np.floor(values + 1e-9).astype(np.int64)
    left = total - int(base.sum())
    order = np.lexsort((np.arange(len(values)), -(values - base)))
    for i in order[: max(left, 0)]:
        base[i] += 1
    return [(k, int(n)) for (k, _), n in zip(shares, base, strict=True) if n > 0]
