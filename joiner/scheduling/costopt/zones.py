"""Zones in the cost-optimal packing (``solver``): which pods a zone binds, the zone each
planned NodeClaim gets, and a placement order that keeps zonal spread within its skew.

Pre-packing that ignores zones plans NodeClaims holding, say, a pod of a zone self-affinity
group (all in one zone) and zonal-spread pods due in other zones; the first pod placed pins
the NodeClaim's zone and the others miss it (a quarter of the pods of Karpenter's
benchmark mix did, 1.116x the LP bound at 2,000 pods). Here each pod class has a zone role:

* ``FREE``: no constraint on the zone key counts or binds it: any planned NodeClaim.
* ``SPREAD``: one zonal spread constraint selecting the class itself, and no other zone
  group counts it. The group's pods are dealt to zones as kube-scheduler's skew check
  (``podtopologyspread`` ``filtering.go``: ``matchNum + selfMatchNum - minMatchNum <=
  maxSkew``) lets them arrive: each to the least-loaded zone, ties by name, which is the
  order Joiner's topology (``topology.Summary.verdict``, after Karpenter ``topology.go``
  ``nextDomainTopologySpread``) narrows a NodeClaim to.
* ``AFFINITY``: one required zone pod affinity selecting the class itself and no other zone
  group counting it: every pod of the group in one zone (the one holding matches already,
  else the first by name; the first pod then starts the group, kube-scheduler
  ``interpodaffinity`` ``filtering.go`` allows a pod matching its own term when no pod
  matches anywhere).
* ``OTHER``: anything else on zones (zone anti-affinity, several zone groups, node
  selection on zones): left to the placement's own narrowing, as before.

A planned NodeClaim holding a zone-bound pod gets that zone: pods of other zones do not
join it in the pre-packing, and it is opened pinned to the zone (the pod's node selection
with the zone added, a subset of what it allows, so every predicate still holds). ``order``
then reorders each spread group's pods among their own queue positions so each arrives
when its zone is one the skew check allows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from joiner.api import labels
from joiner.api.objects import PodTemplate
from joiner.api.requirements import Requirements
from joiner.scheduling.topology import AFFINITY as AFFINITY_KIND
from joiner.scheduling.topology import Group, Topology
from joiner.scheduling.types import PodRequest

FREE = "free"
SPREAD = "spread"
AFFINITY = "affinity"
OTHER = "other"


def role(
    topology: Topology, t: PodTemplate, terms: Sequence[Requirements]
) -> tuple[str, Group | None, int]:
    """``t``'s zone role (module docstring), its zone group and the spread's ``maxSkew``
    (0 unless ``SPREAD``). ``terms`` are the pod's node selection terms."""
    zone = labels.ZONE
    spread = [c for c in t.spread if c.key == zone]
    affinity = [term for term in t.pod_affinity if term.key == zone]
    others = [
        term
        for term in (
            *t.pod_anti_affinity,
            *(w[1] for w in t.preferred_pod_affinity),
            *(w[1] for w in t.preferred_pod_anti_affinity),
        )
        if term.key == zone
    ]
    counted = [g for g in topology.groups_matching(t) if g.key == zone]
    if any(zone in term for term in terms) or others:
        return OTHER, None, 0
    if not spread and not affinity:
        return (FREE, None, 0) if not counted else (OTHER, None, 0)
    if len(spread) == 1 and not affinity:
        g = topology.spread_group(t, spread[0])
        if counted == [g]:
            return SPREAD, g, spread[0].max_skew
    if len(affinity) == 1 and not spread:
        g = topology.affinity_group(t, affinity[0], AFFINITY_KIND)
        if counted == [g]:
            return AFFINITY, g, 0
    return OTHER, None, 0


def spread_sequence(g: Group, zones: Sequence[str], n: int) -> list[str]:
    """The zones of ``n`` more pods of spread group ``g``, each to the least-loaded of
    ``zones`` (its current counts first), ties by name."""
    counts = {z: g.counts.get(z, 0) for z in zones}
    out = []
    for _ in range(n):
        z = min(sorted(zones), key=lambda v: counts[v])
        counts[z] += 1
        out.append(z)
    return out


def affinity_zone(g: Group, zones: Sequence[str]) -> str:
    """The zone of affinity group ``g``: the one with most matches already, else the first."""
    return min(sorted(zones), key=lambda v: -g.counts.get(v, 0))


def deal(
    classes: Sequence[tuple[str, Group | None, tuple[str, ...], int]],
    on_column: dict[int, list[tuple[int, int]]],
) -> dict[int, list[tuple[int, str | None, int]]]:
    """Zones for the rounded assignment. ``classes`` gives each class's role, zone group,
    zones and pod count; ``on_column`` maps a column to its (class index, pods). Returns per
    column (class index, zone or None, pods): a spread group's pods dealt to zones in the
    order its skew check admits them (``spread_sequence``), an affinity group's to its one
    zone (``affinity_zone``); other pods have no zone."""
    out: dict[int, list[tuple[int, str | None, int]]] = {}
    sequences: dict[int, list[str]] = {}
    dealt: dict[int, int] = {}
    for role_, g, zones, _ in classes:
        if role_ == SPREAD and g is not None and id(g) not in sequences:
            total = sum(n for _, other, _, n in classes if other is g)
            sequences[id(g)] = spread_sequence(g, zones, total)
    for k in sorted(on_column):
        for ci, count in on_column[k]:
            role_, g, zones, _ = classes[ci]
            if role_ == AFFINITY and g is not None:
                out.setdefault(k, []).append((ci, affinity_zone(g, zones), count))
            elif role_ == SPREAD and g is not None:
                start = dealt.get(id(g), 0)
                dealt[id(g)] = start + count
                share: dict[str, int] = {}
                for z in sequences[id(g)][start : start + count]:
                    share[z] = share.get(z, 0) + 1
                out.setdefault(k, []).extend((ci, z, n) for z, n in sorted(share.items()))
            else:
                out.setdefault(k, []).append((ci, None, count))
    return out


def order(
    queue: list[PodRequest],
    spread_of: dict[str, tuple[Group, int, tuple[str, ...]]],
    zone_of: dict[str, str],
) -> list[PodRequest]:
    """``queue`` with each spread group's pods reordered among their own positions so that
    each arrives when the skew check allows its planned zone (``spread_of``: pod uid ->
    group, ``maxSkew``, the group's zones; ``zone_of``: pod uid -> planned zone). A pod
    keeps its position when its zone is allowed there; otherwise the earliest later pod
    of an allowed zone moves up. Pods the counts cannot order keep their place."""
    positions: dict[int, list[int]] = {}
    groups: dict[int, tuple[Group, int, tuple[str, ...]]] = {}
    for i, p in enumerate(queue):
        found = spread_of.get(p.uid)
        if found is not None and p.uid in zone_of:
            positions.setdefault(id(found[0]), []).append(i)
            groups[id(found[0])] = found
    out = list(queue)
    for key, where in positions.items():
        g, max_skew, zones = groups[key]
        _reorder(queue, where, g, max_skew, zones, zone_of, out)
    return out


def _reorder(
    queue: list[PodRequest],
    where: list[int],
    g: Group,
    max_skew: int,
    zones: tuple[str, ...],
    zone_of: dict[str, str],
    out: list[PodRequest],
) -> None:
    """Fill ``out`` at spread group ``g``'s positions ``where`` in ``queue`` (see ``order``)."""
    counts = {z: g.counts.get(z, 0) for z in zones}
    waiting: dict[str, deque[int]] = {z: deque() for z in zones}
    for i in where:
        z = zone_of[queue[i].uid]
        if z in waiting:
            waiting[z].append(i)
    used: set[int] = set()
    for slot in where:
        low = min(counts.values(), default=0)
        allowed = [z for z in zones if counts[z] + 1 - low <= max_skew]
        for dq in waiting.values():
            while dq and dq[0] in used:
                dq.popleft()
        own = zone_of[queue[slot].uid]
        if slot not in used and own in allowed:
            pick = slot
        else:
            heads = [waiting[z][0] for z in allowed if waiting[z]]
            if not heads:
                rest = [i for i in where if i not in used]
                pick = slot if slot not in used else rest[0]
            else:
                pick = min(heads)
        used.add(pick)
        z = zone_of[queue[pick].uid]
        if z in counts:
            counts[z] += 1
        out[slot] = queue[pick]


__all__ = [
    "AFFINITY",
    "FREE",
    "OTHER",
    "SPREAD",
    "affinity_zone",
    "order",
    "role",
    "spread_sequence",
]
