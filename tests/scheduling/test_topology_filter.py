"""``OnExisting._topology_filter``: before trying nodes one by one, a pod's topology verdict is
taken once per distinct combination of the nodes' domains and the refused nodes are dropped.
Placements and reasons must equal those of trying every node (the filter off), across zone
and capacity-type spread, zone and hostname anti-affinity, node selection with one and with
two terms, bound volumes' zones, taints, nodes without the zone label, and excluded nodes;
and the filter must really drop nodes in these cases (else the comparison proves nothing)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm, Taint, Toleration, TopologySpreadConstraint
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling import ExistingNode, PodRequest, Scheduler, SchedulingInput
from joiner.scheduling import existing as existing_module
from joiner.scheduling import scheduler as scheduler_module
from joiner.testing.builders import GIB, make_pod_template

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _nodes(rng: random.Random) -> list[ExistingNode]:
    nodes = []
    for i in range(rng.randint(20, 60)):
        node_labels = [(labels.HOSTNAME, f"n{i:02d}")]
        if rng.random() > 0.1:  # some nodes carry no zone label
            node_labels.append((labels.ZONE, rng.choice(ZONES)))
        node_labels.append((labels.CAPACITY_TYPE, rng.choice(["spot", "on-demand"])))
        taints = (Taint("dedicated", "NoSchedule", "gpu"),) if rng.random() < 0.15 else ()
        nodes.append(
            ExistingNode(
                name=f"n{i:02d}",
                labels=tuple(sorted(node_labels)),
                taints=taints,
                available={
                    "cpu": rng.choice([500, 1000, 2000, 4000]),
                    "memory": rng.choice([4, 8, 16]) * GIB,
                    "pods": rng.randint(2, 20),
                },
                initialized=True,
                allocatable={"cpu": 4000, "memory": 16 * GIB, "pods": 58},
            )
        )
    return nodes


def _templates():
    web = Requirements.from_labels({"app": "web"})
    batch = Requirements.from_labels({"app": "batch"})
    db = Requirements.from_labels({"app": "db"})
    zone_spread = replace(
        make_pod_template(500, GIB),
        labels=(("app", "web"),),
        spread=(TopologySpreadConstraint(labels.ZONE, 1, web),),
    )
    two_keys = replace(
        make_pod_template(250, GIB),
        labels=(("app", "batch"),),
        spread=(
            TopologySpreadConstraint(labels.ZONE, 1, batch),
            TopologySpreadConstraint(labels.CAPACITY_TYPE, 2, batch),
        ),
        tolerations=(Toleration(key="dedicated", operator="Exists"),),
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
    two_terms = replace(
        zone_spread,
        required_affinity=(
            Requirements([Requirement.in_(labels.ZONE, ZONES[0])]),
            Requirements([Requirement.in_(labels.CAPACITY_TYPE, "spot")]),
        ),
    )
    return [zone_spread, zone_spread, two_keys, anti_zone, anti_host, two_terms]


def _count_drops(monkeypatch) -> list[int]:
    """How many nodes each ``_topology_filter`` call drops, in call order."""
    dropped: list[int] = []
    original = scheduler_module._Solve._topology_filter

    def counting(self, attempt, rows, memo):
        kept = original(self, attempt, rows, memo)
        dropped.append(rows.size - kept.size)
        return kept

    monkeypatch.setattr(scheduler_module._Solve, "_topology_filter", counting)
    return dropped


def _solve(inp: SchedulingInput, filter_from: int, monkeypatch) -> object:
    monkeypatch.setattr(existing_module, "_FILTER_FROM", filter_from)
    return Scheduler().solve(inp)


@pytest.mark.parametrize("mode", ["kube-scheduler", "provisioner"])
@pytest.mark.parametrize("seed", range(40))
def test_topology_filter_gives_the_answers_of_trying_every_node(seed, mode, monkeypatch):
    rng = random.Random(7000 + seed)
    nodes = _nodes(rng)
    templates = _templates()
    # Some pods carry a bound volume's zone (StatefulSet replicas of one template).
    volumes = [(), (), (Requirements([Requirement.in_(labels.ZONE, rng.choice(ZONES))]),)]
    pods = tuple(
        PodRequest(f"p{i:03d}", rng.choice(templates), i, rng.choice(volumes))
        for i in range(rng.randint(10, 60))
    )
    exclude = frozenset(n.name for n in nodes if rng.random() < 0.2) if seed % 2 else frozenset()
    inp = SchedulingInput(pods=pods, existing=tuple(nodes), mode=mode, exclude_nodes=exclude)

    dropped = _count_drops(monkeypatch)
    filtered = _solve(inp, 1, monkeypatch)
    every_node = _solve(inp, 10**9, monkeypatch)
    assert filtered == every_node
    assert filtered.existing_placements  # the case places pods at all
    assert dropped, "the filter ran"


def test_the_filter_drops_nodes_of_a_full_zone(monkeypatch):
    """Across the seeds above the filter does drop nodes: a zone-spread Deployment on nodes of
    three zones, one zone already holding its pods."""
    monkeypatch.setattr(existing_module, "_FILTER_FROM", 1)
    rng = random.Random(1)
    nodes = [n for n in _nodes(rng) if not n.taints]
    templates = _templates()
    pods = tuple(PodRequest(f"p{i:03d}", templates[0], i) for i in range(30))
    dropped = _count_drops(monkeypatch)
    got = Scheduler().solve(
        SchedulingInput(pods=pods, existing=tuple(nodes), mode="kube-scheduler")
    )
    assert max(dropped) > 0
    zones = {n.name: dict(n.labels).get(labels.ZONE) for n in nodes}
    placed = [zones[node] for _, node in got.existing_placements]
    counts = [placed.count(z) for z in ZONES]
    assert max(counts) - min(counts) <= 1  # the spread held
