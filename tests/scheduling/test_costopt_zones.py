"""Zones and repair in the cost-optimal packing: the pre-packing plans NodeClaims per zone for
pods a zone binds (zonal spread, zone self-affinity), every pod lands on the NodeClaim
planned for it, the plans replay through kube-scheduler's filters, and the repair empties
wasteful planned NodeClaims within hostname caps and zones."""

from __future__ import annotations

from collections import Counter

import numpy as np

from joiner.api import labels
from joiner.api.objects import DO_NOT_SCHEDULE, PodAffinityTerm, PodTemplate
from joiner.api.objects import TopologySpreadConstraint as Spread
from joiner.api.requirements import Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, SchedulingInput, scheduler
from joiner.scheduling.costopt import plan_cost, repair, solver, zones
from joiner.scheduling.topology import SPREAD, Group
from joiner.testing.builders import GIB, make_instance_type, make_nodepool
from tests.scheduling.test_properties import RecordsOrder, _Recording, _replay

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _types(zone_sets=None):
    out = []
    for i, cpu in enumerate((1, 2, 4, 8, 16)):
        zs = zone_sets[i] if zone_sets else ZONES
        out.append(
            make_instance_type(
                f"m.{cpu}x",
                cpu_m=cpu * 1000,
                memory=cpu * 4 * GIB,
                pods=110,
                prices={(z, "on-demand"): 0.05 * cpu for z in zs},
            )
        )
    return tuple(out)


def _template(kind: str, cpu_m: int, memory: int) -> PodTemplate:
    sel = Requirements.from_labels({"app": kind})
    requests = {"cpu": cpu_m, "memory": memory, "pods": 1}
    own = (("app", kind),)
    if kind == "zonal-spread":
        return PodTemplate(
            requests, labels=own, spread=(Spread(labels.ZONE, 1, sel, DO_NOT_SCHEDULE),)
        )
    if kind == "zonal-affinity":
        return PodTemplate(requests, labels=own, pod_affinity=(PodAffinityTerm(labels.ZONE, sel),))
    if kind == "host-anti":
        return PodTemplate(
            requests, labels=own, pod_anti_affinity=(PodAffinityTerm(labels.HOSTNAME, sel),)
        )
    return PodTemplate(requests, labels=own)


def _mixed(n: int) -> SchedulingInput:
    kinds = ("plain", "zonal-spread", "zonal-affinity", "host-anti")
    sizes = ((250, GIB // 2), (500, GIB), (1000, 3 * GIB), (1500, GIB))
    templates = {(k, s): _template(k, *s) for k in kinds for s in sizes}
    pods = tuple(
        PodRequest(f"p{i:04d}", templates[(kinds[i % 4], sizes[(i // 4) % 4])], i) for i in range(n)
    )
    return SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), _types()),))


def _zone_counts(inp: SchedulingInput, result, app: str) -> Counter[str]:
    apps = {p.uid: dict(p.template.labels)["app"] for p in inp.pods}
    out: Counter[str] = Counter()
    for c in result.new_nodeclaims:
        zone = c.requirements.get(labels.ZONE)
        for uid in c.pods:
            if apps[uid] == app:
                assert zone is not None and len(zone.values) == 1
                out[next(iter(zone.values))] += 1
    return out


def test_zone_bound_pods_land_on_their_planned_nodeclaims():
    inp = _mixed(240)
    solve = _Recording(inp)
    result = solve.run()
    assert not result.unschedulable
    claim_of = {u: i for i, c in enumerate(solve.claims) for u in c.pods}
    targeted = [p.uid for p in inp.pods if p.uid in solve._target]
    assert len(targeted) == len(inp.pods)
    # Before the pre-packing knew zones, zonal-spread and zone-affinity pods met planned
    # NodeClaims that another pod had pinned to another zone, and went elsewhere.
    missed = [u for u in targeted if solve._bin_claim.get(solve._target[u][1]) != claim_of[u]]
    assert missed == []
    spread = _zone_counts(inp, result, "zonal-spread")
    assert set(spread) == set(ZONES) and max(spread.values()) - min(spread.values()) <= 1
    assert len(_zone_counts(inp, result, "zonal-affinity")) == 1
    position = {u: i for i, u in enumerate(solve.order)}
    assert _replay(inp, result, key=lambda p: position[p.uid]) == []


def test_pinning_a_nodeclaim_keeps_the_spread_over_the_pods_own_zones():
    # Five plain pods that the sixth pod's zonal spread counts; the types of one zone are
    # the cheapest, one type also offers a second zone. Pinning the sixth pod's planned
    # NodeClaim through the pod's own node selection made its spread count only that zone
    # (nodeAffinityPolicy: Honor), so it went where kube-scheduler's skew check rejects it.
    zone_sets = [("us-east-1a",)] * 4 + [("us-east-1a", "us-east-1b")]
    sel = Requirements.from_labels({"app": "a"})
    requests = {"cpu": 100, "memory": GIB // 4, "pods": 1}
    plain = PodTemplate(requests, labels=(("app", "a"),))
    spread = PodTemplate(
        requests, labels=(("app", "a"),), spread=(Spread(labels.ZONE, 1, sel, DO_NOT_SCHEDULE),)
    )
    types = tuple(
        make_instance_type(
            f"t{i}.x1",
            cpu_m=1000,
            memory=4 * GIB,
            pods=4,
            prices={(z, "on-demand"): 0.03 for z in zs},
        )
        for i, zs in enumerate(zone_sets)
    )
    pods = tuple(PodRequest(f"p{i:03d}", plain if i < 5 else spread, i) for i in range(6))
    inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), types),))
    solve = _Recording(inp)
    result = solve.run()
    position = {u: i for i, u in enumerate(solve.order)}
    assert _replay(inp, result, key=lambda p: position[p.uid]) == []
    home = {u: c for c in result.new_nodeclaims for u in c.pods}
    assert home["p005"].requirements.get(labels.ZONE).values == {"us-east-1b"}


def test_order_deals_a_spread_group_in_the_order_its_skew_allows():
    g = Group(SPREAD, labels.ZONE, Requirements.from_labels({"app": "s"}), "default", None)
    g.counts = {"a": 1}
    t = PodTemplate({"cpu": 100})
    queue = [PodRequest(f"p{i}", t, i) for i in range(6)]
    planned = ["a", "a", "b", "b", "c", "c"]
    zone_of = {p.uid: z for p, z in zip(queue, planned, strict=True)}
    spread_of = {p.uid: (g, 1, ("a", "b", "c")) for p in queue}
    out = zones.order(queue, spread_of, zone_of)
    assert sorted(p.uid for p in out) == [p.uid for p in queue]
    counts = dict(g.counts)
    for p in out:
        z = zone_of[p.uid]
        assert counts.get(z, 0) + 1 - min(counts.get(v, 0) for v in "abc") <= 1
        counts[z] = counts.get(z, 0) + 1
    assert zones.spread_sequence(g, ("a", "b", "c"), 5) == ["b", "c", "a", "b", "c"]


def _bins(pods, zone_of_bin, group, cap, pod_zone):
    """Types of 1, 2, 4 vCPU (2 GiB each per vCPU, priced per vCPU); ``pods`` per bin as
    (cpu millicores, GiB) pairs."""
    net = np.array([[c * 1000, 2 * c] for c in (1, 2, 4)], dtype=np.int64)
    vectors, members = [], []
    for content in pods:
        members.append(list(range(len(vectors), len(vectors) + len(content))))
        vectors.extend(content)
    vector = np.array(vectors, dtype=np.int64)
    return repair.Bins(
        net=net,
        price=np.array([1.0, 2.0, 4.0]),
        top=np.full(len(pods), 2, dtype=np.int64),
        load=np.array([vector[m].sum(axis=0) for m in members], dtype=np.int64),
        pods=members,
        zone=np.array(zone_of_bin, dtype=np.int64),
        vector=vector,
        group=np.array(group, dtype=np.int64),
        cap=np.array(cap, dtype=np.int64),
        pod_zone=np.array(pod_zone, dtype=np.int64),
        admits=np.ones((len(vector), 3), dtype=np.bool_),
    )


def _cost(b):
    return sum(b.price[repair.cheapest(b, b.load[i], 2)] for i in range(len(b.pods)) if b.pods[i])


def test_repair_empties_a_wasteful_nodeclaim_into_free_room():
    # Bin 0: 2.5 vCPU on a 4-vCPU type (1.5 idle); bin 1: one 0.5 vCPU pod on a 1-vCPU type.
    b = _bins([[(1500, 2), (1000, 2)], [(500, 1)]], [-1, -1], [0, 0, 0], [-1, -1, -1], [-1] * 3)
    before = _cost(b)
    moved = repair.repair(b, 1)
    assert moved == {2: 0} and b.pods[1] == []
    assert _cost(b) == before - 1.0


def test_repair_keeps_hostname_caps_and_zones():
    # The same, but the lone pod shares a hostname group (cap 1) with a pod of bin 0, or
    # is bound to another zone than bin 0's: it stays.
    capped = _bins([[(1500, 2), (1000, 2)], [(500, 1)]], [-1, -1], [1, 0, 1], [1, -1, 1], [-1] * 3)
    assert repair.repair(capped, 2) == {} and capped.pods[1] == [2]
    zoned = _bins([[(1500, 2), (1000, 2)], [(500, 1)]], [0, 1], [0, 0, 0], [-1] * 3, [0, 0, 1])
    assert repair.repair(zoned, 1) == {} and zoned.pods[1] == [2]


def test_repaired_plans_cost_less_and_replay(monkeypatch):
    inp = _mixed(240)
    plain = _Recording(inp).run()
    monkeypatch.setattr(solver, "REPAIR_FROM", 0)
    calls = []
    original = repair.repair
    monkeypatch.setattr(repair, "repair", lambda b, n: calls.append(original(b, n)) or calls[-1])
    solve = _Recording(inp)
    result = solve.run()
    assert any(calls), "the repair moved no pod: the test input no longer exercises it"
    assert not result.unschedulable
    assert plan_cost(result) < plan_cost(plain)
    position = {u: i for i, u in enumerate(solve.order)}
    assert _replay(inp, result, key=lambda p: position[p.uid]) == []


def test_the_faithful_plan_compared_with_pins_a_pod_where_a_spread_counts_it():
    """Three plain pods that three zone-spread pods count (``app=w``), the plain ones placed
    first. Karpenter's rules leave the plain pods' NodeClaim zone open (it is not their
    spread), so a spread pod may land in the zone they then fill, past its skew; the
    faithful plan the cost-optimal packing compares with (and may keep when it is no
    dearer) pins that NodeClaim's zone instead, so its plan binds through kube-scheduler's
    filters in the order it was made (found by trying to break ``joiner plan``)."""
    sel = Requirements.from_labels({"app": "w"})
    own = (("app", "w"),)
    plain = PodTemplate({"cpu": 2000, "memory": GIB // 4, "pods": 1}, labels=own)
    spread = PodTemplate(
        {"cpu": 1000, "memory": GIB // 4, "pods": 1},
        labels=own,
        spread=(Spread(labels.ZONE, 1, sel, DO_NOT_SCHEDULE),),
    )
    pods = tuple(PodRequest(f"p{i}", plain if i < 3 else spread, i) for i in range(6))
    inp = SchedulingInput(pods=pods, nodepools=(NodePoolTemplate(make_nodepool(), _types()),))
    for solve in (_Recording(inp), _FaithfulRecording(inp)):
        result = solve.run()
        assert not result.unschedulable
        position = {u: i for i, u in enumerate(solve.order)}
        assert _replay(inp, result, key=lambda p: position[p.uid]) == [], type(solve)


class _FaithfulRecording(RecordsOrder, scheduler._CreationTieSolve):
    """The faithful solve ``CostOptimalScheduler`` compares with, recording the order it
    places pods on NodeClaims."""
