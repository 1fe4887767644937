"""Seeded random differential cases over the whole feature space the harness supports.

``generate(seed, n)`` returns ``n`` valid cases named ``gen-<seed>-<i>``, the same ones for
the same seed (one ``random.Random(seed)``, nothing global). They use the builders of
casekit.py and the feature tags of cases.py, and they stay in the regime the harness can
compare deterministically:

* pod groups differ in CPU request, so Karpenter's queue order (``queue.go``
  ``byCPUAndMemoryDescending``: CPU, then memory, then creation time and UID, random) is
  fixed by the sizes; pods within a group are identical and interchangeable;
* two NodePools never share a weight (Karpenter ``OrderByWeight`` then falls back on names,
  which both sides do alike, but distinct weights keep the choice about weights);
* a case whose pods spread or anti-affine over zones compares only the zone pattern
  (``zone_ties``): Karpenter's ``nextDomainTopologySpread`` (``topologygroup.go``) picks among
  the min-count zones in Go map order;
* required zone anti-affinity, and zone affinity to pods of the same batch, are left out:
  Karpenter records such domains only for NodeClaims whose zone is decided, so its live
  outcome spans several provisioning batches (the fixed case affinity-partner-later-zone
  shows it);
* a case whose topology or relaxation could see other cases runs ``alone``: a
  ``PreferNoSchedule`` taint (Karpenter's ``preferences.go`` relaxes every pod once more
  while one exists), zone spread with ``nodeAffinityPolicy: Ignore`` or
  ``nodeTaintsPolicy: Honor``, or zone spread under a NodePool that narrows the zones
  (Karpenter takes the zone domains from every NodePool, ``provisioner.go``
  ``NewScheduler``).

A provisioning case may carry a NodeOverlay over two types of its NodePools: a price
adjustment, or the extended resource ``LICENCE`` its first pod group asks for.

Disruption cases follow the shapes of disruption_cases.py (one node that shrinks, nodes
that empty, one of them perhaps made NotReady first, three nodes that merge, a NodePool
that drifts, two nodes ordered by their pods' eviction cost) with random sizes, capacity
types, policies, budgets, PDBs, do-not-disrupt annotations, deletion costs and
priorities.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from casekit import (
    ARCH,
    CT,
    DELETION_COST,
    HOST,
    IT,
    LICENCE,
    SOFT_TAINT,
    TAINT,
    TOLERATE,
    ZONE,
    Case,
    Change,
    Obj,
    affinity_term,
    daemonset,
    deployment,
    node_affinity,
    overlay,
    pdb,
    pod,
    pods,
    pool,
    priority_class,
    req,
    spread,
)
from catalog import TYPES, ZONES

KWOK_CPU = "karpenter.kwok.sh/instance-cpu"
#: CPU requests of the pod groups (distinct per case: the queue order is then fixed)
CPUS = ("100m", "250m", "400m", "600m", "900m", "1200m", "1700m", "2500m", "3500m")
MEMORIES = ("128Mi", "512Mi", "1Gi", "3Gi")
AMD64 = tuple(t for t, spec in TYPES.items() if spec[4] == "amd64" and not spec[3])
#: the probability of a provisioning case (the rest are disruption cases)
PROVISION_SHARE = 0.8


@dataclass
class _Draft:
    """A provisioning case being built: its parts, tags and isolation needs."""

    rng: random.Random
    pools: dict[str, Obj] = field(default_factory=dict)
    pods: list[Obj] = field(default_factory=list)
    before: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    overlays: dict[str, Obj] = field(default_factory=dict)
    features: set[str] = field(default_factory=set)
    alone: list[str] = field(default_factory=list)
    zone_ties: list[str] = field(default_factory=list)
    tainted: bool = False
    arm: bool = False
    zones_narrowed: bool = False
    limited: bool = False
    versioned: bool = False

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


def _zone_requirement(d: _Draft) -> Obj:
    pick = d.rng.randrange(3)
    if pick == 0:
        return req(ZONE, "In", *sorted(d.rng.sample(ZONES, 2)))
    if pick == 1:
        return req(ZONE, "NotIn", d.rng.choice(ZONES))
    return req(ZONE, "Exists")


def _type_requirement(d: _Draft) -> Obj:
    if d.chance(0.3):
        return req(IT, "NotIn", *sorted(d.rng.sample(AMD64, 2)))
    chosen = sorted(d.rng.sample(AMD64, d.rng.randint(2, 5)))
    if d.chance(0.4):
        d.features.add("minValues")
        return req(IT, "In", *chosen, min_values=d.rng.randint(1, len(chosen)))
    return req(IT, "In", *chosen)


def _pool_requirements(d: _Draft) -> list[Obj]:
    reqs: list[Obj] = []
    if d.chance(0.3):
        zone = _zone_requirement(d)
        d.zones_narrowed |= zone["operator"] != "Exists"
        reqs.append(zone)
    if d.chance(0.35):
        d.features.add("spot/on-demand")
        reqs.append(req(CT, "In", d.rng.choice(("spot", "on-demand"))))
    if d.chance(0.35):
        reqs.append(_type_requirement(d))
    elif d.chance(0.2):
        op, value = d.rng.choice((("Gt", "1"), ("Gt", "3"), ("Lt", "3"), ("Lt", "5")))
        reqs.append(req(KWOK_CPU, op, value))
    elif d.chance(0.2):
        d.arm = True
        reqs.append(req(ARCH, "In", "amd64", "arm64"))
    if reqs:
        d.features.add("NodePool requirements")
    return reqs


def _pool_taints(d: _Draft) -> list[Obj]:
    if d.chance(0.2):
        d.features.add("taints/tolerations")
        d.tainted = True
        return [dict(TAINT)]
    if d.chance(0.07):
        d.features.add("taints/tolerations")
        d.alone.append("a PreferNoSchedule taint adds a relaxation step for every pod")
        return [dict(SOFT_TAINT)]
    return []


def _pool_limits(d: _Draft) -> dict[str, str] | None:
    if not d.chance(0.2):
        return None
    d.features.add("limits")
    d.limited = True
    if d.chance(0.5):
        return {"cpu": d.rng.choice(("2", "4", "6", "8"))}
    return {"nodes": d.rng.choice(("1", "2", "3"))}


def _make_pools(d: _Draft) -> None:
    names = ["default"] if d.chance(0.65) else ["alpha", "beta"]
    weights = d.rng.sample(range(1, 100), len(names))
    if len(names) > 1:
        d.features.add("weights")
    for name, weight in zip(names, weights, strict=True):
        d.pools[name] = pool(
            *_pool_requirements(d),
            taints=_pool_taints(d),
            limits=_pool_limits(d),
            weight=weight if len(names) > 1 else None,
        )
    if d.zones_narrowed:
        d.features.add("node affinity")


def _node_selector(d: _Draft) -> dict[str, str]:
    d.features.add("nodeSelector")
    options: list[dict[str, str]] = [
        {CT: d.rng.choice(("spot", "on-demand"))},
        {IT: d.rng.choice(AMD64)},
        {ZONE: d.rng.choice(ZONES)},
    ]
    if d.arm:
        options.append({ARCH: "arm64"})
    choice = d.rng.choice(options)
    if CT in choice:
        d.features.add("spot/on-demand")
    return choice


def _node_affinity(d: _Draft) -> Obj:
    d.features.add("node affinity")
    pick = d.rng.randrange(4)
    if pick == 0:
        return node_affinity(req(ZONE, "In", *sorted(d.rng.sample(ZONES, 2))))
    if pick == 1:
        d.features.add("spot/on-demand")
        return node_affinity(req(CT, "NotIn", "spot"))
    if pick == 2:
        return node_affinity(req(KWOK_CPU, "Gt", d.rng.choice(("1", "3"))))
    term = {"matchExpressions": [req(ZONE, "In", d.rng.choice(ZONES))]}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": d.rng.choice((10, 50, 100)), "preference": term}
            ]
        }
    }


def _zone_spread(d: _Draft, app: str) -> Obj:
    d.zone_ties.append("zone spread")
    extra: dict[str, Any] = {}
    roll = d.rng.random()
    if roll < 0.15:
        d.features.add("minDomains")
        extra["minDomains"] = 3
    elif roll < 0.25:
        d.features.add("nodeAffinityPolicy")
        extra["nodeAffinityPolicy"] = "Ignore"
        d.alone.append("nodeAffinityPolicy Ignore counts other cases' nodes")
    elif roll < 0.35:
        d.features.add("nodeTaintsPolicy")
        extra["nodeTaintsPolicy"] = "Honor"
        d.alone.append("nodeTaintsPolicy Honor")
    elif roll < 0.45:
        d.features.add("matchLabelKeys")
        extra["matchLabelKeys"] = ["version"]
        d.versioned = True
    if d.zones_narrowed:
        d.alone.append("zone spread under a NodePool that narrows the zones")
    when = "ScheduleAnyway" if d.chance(0.2) else "DoNotSchedule"
    if "minDomains" in extra:  # the API server refuses minDomains with ScheduleAnyway
        when = "DoNotSchedule"
    return spread(ZONE, app, skew=d.rng.choice((1, 1, 2)), when=when, **extra)


def _spread(d: _Draft, app: str) -> Obj:
    d.features.add("topology spread")
    if d.chance(0.5):
        return _zone_spread(d, app)
    return spread(HOST, app, skew=d.rng.choice((1, 2)))


def _required(kind: str, term: Obj) -> Obj:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _anti_affinity(d: _Draft, app: str) -> Obj:
    """Required anti-affinity over hostnames, or preferred over hostnames or zones: a
    required zone term makes Karpenter block every zone an undecided NodeClaim could take
    (``topology.go`` ``Record``), so the group's other pods wait for a later batch, which
    one Joiner plan does not model (docs/fidelity.md, known disagreements)."""
    d.features.add("pod anti-affinity")
    if d.chance(0.6):
        return _required("podAntiAffinity", affinity_term(HOST, app))
    key = d.rng.choice((HOST, ZONE))
    if key == ZONE:
        d.zone_ties.append("zone anti-affinity")
    preferred = [{"weight": 100, "podAffinityTerm": affinity_term(key, app)}]
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


def _pod_affinity(d: _Draft, anchor: str) -> Obj:
    """Required affinity to an earlier group: over hostnames, or over zones when the
    anchor runs before the batch (a zone is recorded only for a NodeClaim whose zone is
    decided, Karpenter ``topology.go`` ``Record``; otherwise the pods wait for a later
    batch, which one Joiner plan does not model)."""
    d.features.add("pod affinity")
    existing = any(p["metadata"]["labels"].get("app") == anchor for p in d.before)
    key = d.rng.choice((HOST, ZONE)) if existing else HOST
    return _required("podAffinity", affinity_term(key, anchor))


def _group_spec(d: _Draft, app: str, anchors: list[str]) -> dict[str, Any]:
    """The pod spec fields of one group (each feature with its own probability)."""
    spec: dict[str, Any] = {}
    if d.chance(0.25):
        spec["nodeSelector"] = _node_selector(d)
    roll = d.rng.random()
    if roll < 0.2:
        spec["affinity"] = _node_affinity(d)
    elif roll < 0.35:
        spec["affinity"] = _anti_affinity(d, app)
    elif roll < 0.5 and anchors:
        spec["affinity"] = _pod_affinity(d, d.rng.choice(anchors))
    if d.chance(0.3):
        spec["topologySpreadConstraints"] = [_spread(d, app)]
    if d.tainted and d.chance(0.6):
        spec["tolerations"] = list(TOLERATE)
    if d.chance(0.1):
        d.features.add("hostPorts")
        spec["host_ports"] = [d.rng.choice((8080, 8081))]
    return spec


def _group_size(d: _Draft, cpu: str) -> dict[str, Any]:
    size: dict[str, Any] = {"cpu": cpu, "memory": d.rng.choice(MEMORIES)}
    if d.chance(0.08):
        d.features.add("extended resources")
        size["extra"] = {"nvidia.com/gpu": "1"}
    elif d.chance(0.1):
        size["limits_only"] = True
    return size


def _make_pods(d: _Draft) -> None:
    d.features.add("resources")
    cpus = d.rng.sample(CPUS, d.rng.randint(1, 3))
    anchors = [p["metadata"]["labels"]["app"] for p in d.before]
    for i, cpu in enumerate(cpus):
        app = f"g{i}"
        d.versioned = False
        spec = _group_spec(d, app, anchors)
        group = pods(app, d.rng.randint(1, 5), **_group_size(d, cpu), **spec)
        if d.versioned:  # matchLabelKeys splits the group by version (as spread-match-label-keys)
            for j, p in enumerate(group):
                p["metadata"]["labels"]["version"] = f"v{j % 2 + 1}"
        d.pods += group
        anchors.append(app)


def _make_before(d: _Draft) -> None:
    """Pods that make the existing nodes; never where they could stay pending (a pending
    pod that exists before is no batch pod, and only Joiner would count it)."""
    if d.limited or not d.chance(0.3):
        return
    d.features.add("existing nodes")
    for i in range(d.rng.randint(1, 2)):
        spec: dict[str, Any] = {}
        if not d.zones_narrowed and d.chance(0.4):
            spec["nodeSelector"] = {ZONE: d.rng.choice(ZONES)}
        if d.tainted:
            spec["tolerations"] = list(TOLERATE)
        cpu = d.rng.choice(("300m", "1", "1500m"))
        d.before.append(pod(f"old{i}", cpu=cpu, labels={"app": f"old{i}"}, **spec))


def _make_daemonsets(d: _Draft) -> None:
    if not d.chance(0.2):
        return
    d.features.add("DaemonSet overhead")
    spec: dict[str, Any] = {}
    if d.chance(0.3):
        d.features.add("hostPorts")
        spec["host_ports"] = [8080]
    if d.tainted:
        spec["tolerations"] = list(TOLERATE)
    d.daemonsets.append(daemonset("agent", d.rng.choice(("100m", "300m", "500m")), **spec))


def _make_overlay(d: _Draft) -> None:
    """A NodeOverlay over two amd64 types of the case's pools: a price adjustment, or the
    extended resource ``LICENCE`` that the first pod group then asks for."""
    if not d.chance(0.1):
        return
    d.features.add("NodeOverlay")
    chosen = req(IT, "In", *sorted(d.rng.sample(AMD64, 2)))
    if d.chance(0.5):
        d.overlays["price"] = overlay(chosen, adjust=d.rng.choice(("-90%", "+50%")))
        return
    d.features.add("extended resources")
    d.overlays["licence"] = overlay(chosen, capacity={LICENCE: "4"})
    first = d.pods[0]["metadata"]["labels"]["app"]
    for p in d.pods:
        if p["metadata"]["labels"]["app"] == first:
            resources = p["spec"]["containers"][0]["resources"]
            for kind in ("requests", "limits"):
                resources.setdefault(kind, {})[LICENCE] = "1"


def provisioning_case(rng: random.Random, case_id: str) -> Case:
    """One random provisioning case (module docstring)."""
    d = _Draft(rng)
    _make_pools(d)
    _make_before(d)
    _make_daemonsets(d)
    _make_pods(d)
    _make_overlay(d)
    return Case(
        case_id,
        tuple(sorted(d.features)),
        d.pools,
        d.pods,
        before=d.before,
        daemonsets=d.daemonsets,
        overlays=d.overlays,
        alone=bool(d.alone),
        zone_ties="generated: " + ", ".join(sorted(set(d.zone_ties))) if d.zone_ties else "",
        note="; ".join(sorted(set(d.alone))),
    )


_ON = {"consolidateAfter": "0s"}


def _shrink(rng: random.Random, case_id: str) -> Case:
    """One node whose big bare pod goes: single-node consolidation, unless blocked."""
    features = {"disruption: single-node consolidation"}
    ct = rng.choice(("on-demand", "on-demand", "spot"))
    if ct == "spot":
        features.add("spot/on-demand")
    rest: dict[str, Any] = {}
    pdbs: list[Obj] = []
    disruption: Obj = dict(_ON)
    roll = rng.random()
    if roll < 0.15:
        features.add("disruption: do-not-disrupt")
        rest["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    elif roll < 0.3:
        features.add("disruption: PDBs")
        pdbs.append(pdb("rest", "rest", 0))
    elif roll < 0.45:
        features.add("disruption: budgets")
        disruption["budgets"] = [{"nodes": rng.choice(("0", "1"))}]
    policy = "WhenEmpty" if rng.random() < 0.15 else "WhenEmptyOrUnderutilized"
    if policy == "WhenEmpty":
        features.add("disruption: emptiness")
    daemonsets = []
    if rng.random() < 0.2:
        features.add("DaemonSet overhead")
        daemonsets.append(daemonset("agent", rng.choice(("100m", "200m"))))
    before = [
        pod("huge", cpu=rng.choice(("3", "5", "6"))),
        deployment("rest", rng.randint(1, 2), cpu=rng.choice(("300m", "500m", "900m")), **rest),
    ]
    return Case(
        case_id,
        tuple(sorted(features)),
        {"default": pool(req(CT, "In", ct), policy=policy)},
        before=before,
        daemonsets=daemonsets,
        pdbs=pdbs,
        kind="disrupt",
        change=Change(delete_pods=("huge",), pool_patch={"default": {"disruption": disruption}}),
    )


def _emptiness(rng: random.Random, case_id: str) -> Case:
    """Nodes (one pod each, a host port apart) whose pods all go, or all but the one on a
    node made NotReady first."""
    features = {"disruption: emptiness", "hostPorts"}
    n = rng.randint(1, 3)
    disruption: Obj = dict(_ON)
    if rng.random() < 0.4:
        features.add("disruption: budgets")
        disruption["budgets"] = [{"nodes": rng.choice(("1", "2", "50%"))}]
    before = pods("e", n, cpu=rng.choice(("500m", "1", "1500m")), host_ports=[7100])
    names = tuple(p["metadata"]["name"] for p in before)
    not_ready: tuple[str, ...] = ()
    if n > 1 and rng.random() < 0.3:  # one node goes NotReady first, its pod kept
        features.add("disruption: NotReady nodes")
        not_ready, names = names[:1], names[1:]
    return Case(
        case_id,
        tuple(sorted(features)),
        {"default": pool()},
        before=before,
        kind="disrupt",
        change=Change(
            delete_pods=names,
            pool_patch={"default": {"disruption": disruption}},
            not_ready=not_ready,
        ),
    )


def _merge(rng: random.Random, case_id: str) -> Case:
    """Three on-demand nodes each left with one small pod (multi-node-replace's shape)."""
    od = req(CT, "In", "on-demand")
    big = pods("big", 3, cpu=rng.choice(("1500m", "1600m")), host_ports=[7000])
    return Case(
        case_id,
        ("disruption: multi-node consolidation",),
        {"default": pool(req(IT, "In", "c-1x", "c-2x"), od)},
        before=[*big, deployment("small", 3, cpu=rng.choice(("200m", "250m")))],
        kind="disrupt",
        change=Change(
            delete_pods=tuple(p["metadata"]["name"] for p in big),
            pool_patch={"default": {"disruption": dict(_ON)}},
        ),
    )


def _drift(rng: random.Random, case_id: str) -> Case:
    """A NodePool whose zone requirement moves: its node drifts."""
    start, moved = rng.sample(ZONES, 2)
    template = {"spec": {"requirements": [req(ZONE, "In", moved), req(ARCH, "In", "amd64")]}}
    return Case(
        case_id,
        ("disruption: drift",),
        {"default": pool(req(ZONE, "In", start))},
        before=[deployment("dr", rng.randint(1, 2), cpu=rng.choice(("500m", "1", "1500m")))],
        kind="disrupt",
        change=Change(
            pool_patch={"default": {"disruption": dict(_ON), "template": template}},
        ),
    )


def _order(rng: random.Random, case_id: str) -> Case:
    """Two equal nodes each left with one pod that fits beside the other's: which goes is
    decided by the pods' eviction cost (deletion cost or priority; Karpenter ``EvictionCost``,
    pkg/utils/disruption/disruption.go, in the candidates' savings ratio)."""
    od = req(CT, "In", "on-demand")
    big = pods("big", 2, cpu="1500m", host_ports=[7000])
    dear: dict[str, Any] = {}
    classes: list[Obj] = []
    if rng.random() < 0.5:
        feature = "disruption: deletion cost"
        dear["annotations"] = {DELETION_COST: str(rng.choice((1000, 10**6, 10**9)))}
    else:
        feature = "disruption: priority"
        classes.append(priority_class(f"{case_id}-high", rng.choice((10**6, 10**8))))
        dear["priorityClassName"] = classes[0]["metadata"]["name"]
    small = rng.choice(("200m", "300m"))
    return Case(
        case_id,
        ("disruption: single-node consolidation", feature),
        {"default": pool(req(IT, "In", "c-2x", "c-4x"), od)},
        before=[*big, deployment("dear", 1, cpu=small, **dear), deployment("cheap", 1, cpu=small)],
        priority_classes=classes,
        kind="disrupt",
        change=Change(
            delete_pods=("big-0", "big-1"), pool_patch={"default": {"disruption": dict(_ON)}}
        ),
    )


def disruption_case(rng: random.Random, case_id: str) -> Case:
    """One random disruption case of one of five shapes (module docstring)."""
    shape = rng.choice((_shrink, _shrink, _emptiness, _merge, _drift, _order))
    return shape(rng, case_id)


def generate(seed: int, n: int) -> list[Case]:
    """``n`` cases ``gen-<seed>-0..n-1``, the same for the same seed.

    Raises:
        ValueError: a negative ``seed`` or ``n`` (a seed is part of case ids and names).
    """
    if seed < 0 or n < 0:
        raise ValueError(f"generated cases: seed and count must be >= 0, got {seed}, {n}")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        make = provisioning_case if rng.random() < PROVISION_SHARE else disruption_case
        out.append(make(rng, f"gen-{seed}-{i}"))
    return out
