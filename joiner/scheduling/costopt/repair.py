"""Repair of the cost-optimal pre-packing (``solver``): empty or shrink the planned
NodeClaims that waste most of their type by moving their pods into room other planned
NodeClaims have for free.

Each planned NodeClaim launches the cheapest type of its NodePool, no dearer than its
planned type (and not exotic unless that is), that holds its pods
(``_CostSolve._new_claim_options``); what that type has
beyond the pods' requests (plus DaemonSet overhead, already out of ``net``) is paid for
anyway. A planned NodeClaim that wastes much of its type (NodeClaims of one or two
hostname-capped pods on small types, the tail of a type's pre-packing) gives its pods, the
largest first, to the NodeClaims with the least such room left after them, as long as
the pod's hostname cap, planned zone and admitting types allow; the moves are kept when
they empty the NodeClaim or let it launch a cheaper type, and undone otherwise. Prices and
resources only: the placement (``_Solve._add``) still checks every predicate, so a move
the plan gets wrong costs a miss, never an infeasible plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from joiner.scheduling.pool import BoolArray, FloatArray, IntArray

#: Only planned NodeClaims that leave at least this share of their type unused (``_waste``)
#: give pods away.
MIN_WASTE = 0.1
#: At most this many scans over the planned NodeClaims (one per NodeClaim tried and one per
#: pod offered), a share of the pods but at least ``BUDGET_MIN``, most wasteful NodeClaims
#: first: the repair's time.
BUDGET_SHARE = 0.25
BUDGET_MIN = 2000


@dataclass
class Bins:
    """Planned NodeClaims of one NodePool, as arrays.

    ``net`` (types x resources) and ``price`` (per type, USD/hour, inf where none can
    launch) describe the NodePool's types; ``top`` is each bin's planned type (the dearest
    it may launch); ``load`` (bins x resources) its pods' requests; ``pods`` each bin's pod
    indices; ``zone`` each bin's zone code (-1: none). Per pod: ``vector`` (pods x
    resources), ``group`` and ``cap`` (hostname group and per-node cap, cap -1: none),
    ``pod_zone`` (-1: any) and ``admits`` (pods x types). ``exotic`` (per type, or None):
    types a bin whose planned type is not exotic never launches (``solver._generic``).
    """

    net: IntArray
    price: FloatArray
    top: IntArray
    load: IntArray
    pods: list[list[int]]
    zone: IntArray
    vector: IntArray
    group: IntArray
    cap: IntArray
    pod_zone: IntArray
    admits: BoolArray
    exotic: BoolArray | None = None


def cheapest(b: Bins, load: IntArray, top: int) -> int:
    """The cheapest type no dearer than ``top`` that holds ``load`` (and not exotic unless
    ``top`` is); -1 if none."""
    ok = (b.net >= load).all(axis=1) & (b.price <= b.price[top]) & np.isfinite(b.price)
    if b.exotic is not None and not b.exotic[top]:
        ok &= ~b.exotic
    if not ok.any():
        return -1
    idx = np.flatnonzero(ok)
    return int(idx[np.lexsort((idx, b.price[idx]))][0])


def _waste(load: IntArray, full: FloatArray) -> float:
    """The share of a NodeClaim's type its pods leave unused, on its second fullest
    resource: a memory-full NodeClaim with idle CPU wastes too, and the pod count, seldom
    binding, does not count."""
    shares = np.sort(load / np.maximum(full, 1.0))[::-1]
    return 1.0 - float(shares[1] if len(shares) > 1 else shares[0])


def _cheapest_all(b: Bins) -> IntArray:
    """``cheapest`` for every bin at once (-1 where none holds it)."""
    order = np.lexsort((np.arange(len(b.price)), b.price))
    order = order[np.isfinite(b.price[order])]
    out = np.full(len(b.load), -1, dtype=np.int64)
    for start in range(0, len(b.load), 512):
        load = b.load[start : start + 512]
        fits = (b.net[order][None, :, :] >= load[:, None, :]).all(axis=2)
        top = b.top[start : start + 512]
        fits &= b.price[order][None, :] <= b.price[top][:, None]
        if b.exotic is not None:
            fits &= ~b.exotic[order][None, :] | b.exotic[top][:, None]
        first = fits.argmax(axis=1)
        out[start : start + 512] = np.where(fits.any(axis=1), order[first], -1)
    return out


@dataclass
class _Plan:
    """The repair's working state, per bin: ``kind``, the type it launches; ``room``, that
    type's net minus its load; ``full``, that type's net as floats; ``gone``, emptied; and
    ``counts`` (bins x hostname groups), its capped pods per group. Updated in place."""

    kind: IntArray
    room: IntArray
    full: FloatArray
    counts: IntArray
    gone: BoolArray


def repair(b: Bins, n_groups: int) -> dict[int, int]:
    """Move pods out of wasteful bins (module docstring). Returns pod index -> new bin for
    every pod moved; ``b.pods`` and ``b.load`` are updated in place."""
    n = len(b.pods)
    if n < 2:
        return {}
    kind = _cheapest_all(b)
    if (kind < 0).any():
        return {}
    plan = _Plan(
        kind=kind,
        room=b.net[kind] - b.load,
        full=b.net[kind].astype(np.float64),
        counts=_group_counts(b, n, n_groups),
        gone=np.zeros(n, dtype=np.bool_),
    )
    shares = -np.sort(-(b.load / np.maximum(plan.full, 1.0)), axis=1)
    waste = 1.0 - shares[:, min(1, shares.shape[1] - 1)]
    moved: dict[int, int] = {}
    budget = max(BUDGET_MIN, int(BUDGET_SHARE * len(b.vector)))
    for a in np.lexsort((np.arange(n), -waste * b.price[kind])).tolist():
        if budget <= 0:
            break
        if plan.gone[a] or not b.pods[a]:
            continue
        if _waste(b.load[a], plan.full[a]) < MIN_WASTE:
            continue
        # Receivers: the NodeClaims with room for the smallest of its pods.
        budget -= 1
        recv = np.flatnonzero(
            ~plan.gone & (plan.room >= b.vector[b.pods[a]].min(axis=0)).all(axis=1)
        )
        recv = recv[recv != a]
        if recv.size == 0:
            continue
        budget -= len(b.pods[a])
        _empty_or_shrink(b, plan, a, recv, moved)
    return moved


def _group_counts(b: Bins, n: int, n_groups: int) -> IntArray:
    """Per bin (of ``n``) and hostname group (of ``n_groups``), its pods under a cap."""
    counts = np.zeros((n, max(n_groups, 1)), dtype=np.int64)
    for i, members in enumerate(b.pods):
        for p in members:
            if b.cap[p] > 0:
                counts[i, b.group[p]] += 1
    return counts


def _empty_or_shrink(b: Bins, plan: _Plan, a: int, recv: IntArray, moved: dict[int, int]) -> None:
    """Offer bin ``a``'s pods to the receivers ``recv``; keep the moves (recorded in
    ``moved``) when they empty ``a`` or let it launch a cheaper type, else undo them."""
    trial = _offer(b, plan, a, recv)
    going = {q for q, _ in trial}
    stay = [p for p in b.pods[a] if p not in going]
    rest = b.load[a] - sum((b.vector[p] for p, _ in trial), np.zeros_like(b.load[a]))
    after = cheapest(b, rest, int(b.top[a])) if stay else -1
    saved = b.price[plan.kind[a]] - (b.price[after] if stay else 0.0)
    if trial and (not stay or (after >= 0 and saved > 1e-9)):
        for p, to in trial:
            b.pods[to].append(p)
            b.load[to] += b.vector[p]
            moved[p] = to
        b.pods[a] = stay
        b.load[a] = rest
        if stay:
            plan.kind[a] = after
            plan.room[a] = b.net[after] - rest
            plan.full[a] = b.net[after]
        else:
            plan.gone[a] = True
        for p, _ in trial:
            if b.cap[p] > 0:
                plan.counts[a, b.group[p]] -= 1
    else:
        for p, to in trial:
            plan.room[to] += b.vector[p]
            if b.cap[p] > 0:
                plan.counts[to, b.group[p]] -= 1


def _offer(b: Bins, plan: _Plan, a: int, recv: IntArray) -> list[tuple[int, int]]:
    """Give bin ``a``'s pods, the largest (relative to its type) first, each to the
    receiver with the least room left after it among those that fit and admit it (hostname
    cap, planned zone); takes the room and counts. Returns (pod, receiver) per pod given."""
    room = plan.room
    counts = plan.counts
    full = plan.full
    trial: list[tuple[int, int]] = []
    scale = np.maximum(full[a], 1.0)
    for p in sorted(b.pods[a], key=lambda q: -float((b.vector[q] / scale).sum())):
        vec = b.vector[p]
        ok = (room[recv] >= vec).all(axis=1) & b.admits[p][b.top[recv]]
        if b.cap[p] > 0:
            ok &= counts[recv, b.group[p]] < b.cap[p]
        if b.pod_zone[p] >= 0:
            ok &= b.zone[recv] == b.pod_zone[p]
        if not ok.any():
            continue
        fits = recv[ok]
        left = ((room[fits] - vec) / np.maximum(full[fits], 1.0)).sum(axis=1)
        to = int(fits[int(np.argmin(left))])
        room[to] -= vec
        if b.cap[p] > 0:
            counts[to, b.group[p]] += 1
        trial.append((p, to))
    return trial


__all__ = ["Bins", "cheapest", "repair"]
