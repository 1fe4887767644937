"""kube-scheduler mode scores only the nodes with room for a pod (``_Solve._try_existing``
marks the others dead unscored): placements equal a direct LeastAllocated choice among every
node that fits, ties by name, in the pods' creation order."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joiner.scheduling import ExistingNode, PodRequest, Scheduler, SchedulingInput
from joiner.testing.builders import GIB, make_pod_template


def _reference(nodes: list[ExistingNode], pods: list[PodRequest]) -> list[tuple[str, str]]:
    free = {n.name: dict(n.available) for n in nodes}
    alloc = {n.name: n.allocatable or {} for n in nodes}
    out = []
    for p in pods:
        req = p.template.requests
        fitting = [n for n in free if all(v <= free[n].get(k, 0) for k, v in req.items())]
        if not fitting:
            continue

        def score(n: str, req: dict[str, int] = req) -> float:
            shares = [
                (free[n].get(r, 0) - req.get(r, 0)) / alloc[n][r]
                for r in ("cpu", "memory")
                if alloc[n].get(r, 0) > 0
            ]
            return sum(shares) / len(shares)

        best = min(fitting, key=lambda n: (-score(n), n))
        for k, v in req.items():
            free[best][k] = free[best].get(k, 0) - v
        out.append((p.uid, best))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_kube_scheduler_mode_matches_least_allocated_over_fitting_nodes(seed):
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(1, 12)):
        cpu, mem = rng.choice([(2000, 8), (4000, 16), (8000, 32)])
        nodes.append(
            ExistingNode(
                name=f"n{i:02d}",
                labels=(),
                taints=(),
                available={
                    "cpu": rng.randint(0, cpu),
                    "memory": rng.randint(0, mem) * GIB,
                    "pods": rng.randint(0, 20),
                },
                initialized=True,
                allocatable={"cpu": cpu, "memory": mem * GIB, "pods": 58},
            )
        )
    templates = [make_pod_template(c, m * GIB) for c, m in [(250, 1), (500, 1), (1000, 2)]]
    pods = [PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(rng.randint(1, 40))]
    result = Scheduler().solve(
        SchedulingInput(pods=tuple(pods), existing=tuple(nodes), mode="kube-scheduler")
    )
    assert sorted(result.existing_placements) == sorted(_reference(nodes, pods))


def _random_nodes(rng: random.Random, *, huge: bool) -> list[ExistingNode]:
    """Nodes with uneven allocatable (some without cpu or memory, some with none at all) and,
    with ``huge``, one free amount beyond 64 bits (no array answer: the exact path)."""
    nodes = []
    for i in range(rng.randint(1, 15)):
        cpu, mem = rng.choice([(2000, 8), (4000, 16), (8000, 32), (0, 16), (4000, 0)])
        alloc = {"cpu": cpu, "memory": mem * GIB, "pods": 58} if rng.random() > 0.1 else {}
        nodes.append(
            ExistingNode(
                name=f"n{rng.randint(0, 99):02d}-{i}",
                labels=(),
                taints=(),
                available={
                    "cpu": rng.randint(-500, max(cpu, 1)),
                    "memory": rng.randint(0, max(mem, 1)) * GIB,
                    "pods": rng.randint(0, 20),
                },
                initialized=True,
                allocatable=alloc or None,
            )
        )
    if huge:
        n = nodes[0]
        nodes[0] = ExistingNode(
            name=n.name,
            labels=(),
            taints=(),
            available={**n.available, "memory": 1 << 70},
            initialized=True,
            allocatable=n.allocatable,
        )
    return nodes


@pytest.mark.parametrize("huge", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_array_room_gives_the_per_node_answers(seed, huge):
    """``room.FreeRoom`` (free room as arrays) places pods as the per-node checks do, in both
    modes, and with an amount beyond 64 bits (arrays not built) too."""
    from joiner.scheduling.base import build
    from joiner.scheduling.room import FreeRoom

    rng = random.Random(1000 + seed)
    nodes = _random_nodes(rng, huge=huge)
    templates = [make_pod_template(c, m * GIB) for c, m in [(250, 1), (500, 1), (1000, 2), (0, 0)]]
    pods = [PodRequest(f"p{i:03d}", rng.choice(templates), i) for i in range(rng.randint(1, 40))]
    kube = Scheduler().solve(
        SchedulingInput(pods=tuple(pods), existing=tuple(nodes), mode="kube-scheduler")
    )
    free = {n.name: dict(n.available) for n in nodes}
    alloc = {n.name: n.allocatable or {} for n in nodes}
    want_kube = []
    for p in sorted(pods, key=lambda p: p.order):
        req = p.template.requests

        def score(n: str, req: dict[str, int] = req) -> float:
            shares = [
                (free[n].get(r, 0) - req.get(r, 0)) / alloc[n][r]
                for r in ("cpu", "memory")
                if alloc[n].get(r, 0) > 0
            ]
            return sum(shares) / len(shares) if shares else 0.0

        fitting = [n for n in free if all(v <= 0 or v <= free[n].get(k, 0) for k, v in req.items())]
        if fitting:
            best = min(fitting, key=lambda n: (-score(n), n))
            for k, v in req.items():
                free[best][k] = free[best].get(k, 0) - v
            want_kube.append((p.uid, best))
    assert sorted(kube.existing_placements) == sorted(want_kube)
    # Provisioner mode: first fit in initialized-then-name order.
    free = {n.name: dict(n.available) for n in sorted(nodes, key=lambda n: n.name)}
    want = {}
    for p in sorted(
        pods,
        key=lambda p: (
            -p.template.requests.get("cpu", 0),
            -p.template.requests.get("memory", 0),
            p.order,
        ),
    ):
        req = p.template.requests
        for name, avail in free.items():
            if all(v <= 0 or v <= avail.get(k, 0) for k, v in req.items()):
                for k, v in req.items():
                    avail[k] = avail.get(k, 0) - v
                want[p.uid] = name
                break
    got = Scheduler().solve(SchedulingInput(pods=tuple(pods), existing=tuple(nodes)))
    assert dict(got.existing_placements) == want
    room = FreeRoom(
        build(tuple(nodes), ()).arrays(("cpu", "memory", "pods")),
        __import__("numpy").arange(len(nodes)),
    )
    assert room.active is not huge


@pytest.mark.parametrize("mode", ["kube-scheduler", "provisioner"])
@pytest.mark.parametrize("seed", range(15))
def test_topology_verdicts_shared_by_zone_give_the_per_node_answers(seed, mode, monkeypatch):
    """A pod's topology verdict is computed once per zone of the nodes tried for it
    (``Summary.node_key``), unless a hostname constraint makes every node its own domain:
    placements equal those of a verdict per node, with zone spread, zone anti-affinity and
    hostname anti-affinity among the pods."""
    from joiner.api import labels
    from joiner.api.pods import PodAffinityTerm, TopologySpreadConstraint
    from joiner.api.requirements import Requirements
    from joiner.scheduling import topology

    rng = random.Random(500 + seed)
    nodes = []
    for i in range(rng.randint(3, 18)):
        zone = rng.choice(["us-east-1a", "us-east-1b", "us-east-1c"])
        nodes.append(
            ExistingNode(
                name=f"n{i:02d}",
                labels=((labels.HOSTNAME, f"n{i:02d}"), (labels.ZONE, zone)),
                taints=(),
                available={"cpu": rng.choice([1000, 2000, 4000]), "memory": 16 * GIB, "pods": 20},
                initialized=True,
                allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 58},
            )
        )
    web = Requirements.from_labels({"app": "web"})
    db = Requirements.from_labels({"app": "db"})
    spread = replace(
        make_pod_template(500, GIB),
        labels=(("app", "web"),),
        spread=(TopologySpreadConstraint(labels.ZONE, 1, web),),
    )
    anti_zone = replace(
        make_pod_template(250, GIB),
        labels=(("app", "db"),),
        pod_anti_affinity=(PodAffinityTerm(labels.ZONE, db),),
    )
    anti_host = replace(
        make_pod_template(250, GIB),
        labels=(("app", "cache"),),
        pod_anti_affinity=(
            PodAffinityTerm(labels.HOSTNAME, Requirements.from_labels({"app": "cache"})),
        ),
    )
    pods = [
        PodRequest(f"p{i:03d}", rng.choice([spread, spread, anti_zone, anti_host]), i)
        for i in range(rng.randint(1, 30))
    ]
    inp = SchedulingInput(pods=tuple(pods), existing=tuple(nodes), mode=mode)
    shared = Scheduler().solve(inp)
    monkeypatch.setattr(topology.Summary, "node_key", lambda self, domain_of: None)
    per_node = Scheduler().solve(inp)
    assert shared == per_node
    assert shared.existing_placements  # the case places pods at all


@pytest.mark.parametrize("mode", ["kube-scheduler", "provisioner"])
def test_a_request_too_large_for_exact_arrays_is_scored_per_node(mode):
    """A request the arrays cannot score exactly (here 2^64 millicores, which input parsing
    would refuse) is left to the per-node checks: the pod is unplaced, nothing raises (the
    breaker's OverflowError), and the other pods are placed as before."""
    nodes = _random_nodes(random.Random(3), huge=False)
    huge = make_pod_template(1 << 64, GIB)
    small = make_pod_template(250, GIB)
    pods = (PodRequest("huge", huge, 0), PodRequest("small", small, 1))
    got = Scheduler().solve(SchedulingInput(pods=pods, existing=tuple(nodes), mode=mode))
    assert "huge" not in dict(got.existing_placements)
    alone = Scheduler().solve(SchedulingInput(pods=pods[1:], existing=tuple(nodes), mode=mode))
    assert dict(got.existing_placements) == dict(alone.existing_placements)


def test_a_node_whose_room_changed_in_place_is_read_again():
    # The node rows are kept per ExistingNode object between solves; one whose dicts a
    # caller changed in place (against the frozen contract, but a dict cannot refuse) must
    # not be answered from the old row.
    nodes = [
        ExistingNode(
            name=name,
            labels=(),
            taints=(),
            available={"cpu": 4000, "memory": 16 * GIB, "pods": 20},
            initialized=True,
            allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 20},
        )
        for name in ("a", "b")
    ]
    pod = (PodRequest("p", make_pod_template(1000, GIB), 0),)

    def solve() -> tuple[tuple[str, str], ...]:
        return (
            Scheduler()
            .solve(SchedulingInput(pods=pod, existing=tuple(nodes), mode="kube-scheduler"))
            .existing_placements
        )

    assert solve() == (("p", "a"),)
    nodes[0].available["cpu"] = 500  # a no longer has room
    assert solve() == (("p", "b"),)
    nodes[0].available["cpu"] = 4000
    nodes[1].allocatable["cpu"] = 64000  # b now scores as the emptier node
    nodes[1].available["cpu"] = 60000
    assert solve() == (("p", "b"),)
