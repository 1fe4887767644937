"""``Topology.groups_matching`` remembers its answer per template while no group is added;
every answer equals the plain filter over the groups registered at the time, in
registration order, and ``record`` counts a placed pod in exactly those groups."""

from __future__ import annotations

import random
from dataclasses import replace

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm, PodTemplate, TopologySpreadConstraint
from joiner.api.requirements import Requirements
from joiner.scheduling.topology import Group, Topology
from joiner.testing.builders import make_pod_template

VALUES = ["a", "b", "c"]


def _plain(topology: Topology, t: PodTemplate) -> tuple[Group, ...]:
    return tuple(g for g in topology.groups() if topology.matches(g, t))


def _template(rng: random.Random) -> PodTemplate:
    sel = Requirements.from_labels({"app": rng.choice(VALUES)})
    key = rng.choice([labels.ZONE, labels.HOSTNAME])
    kind = rng.choice(["spread", "affinity", "anti", "none"])
    kwargs: dict[str, object] = {}
    if kind == "spread":
        kwargs["spread"] = (TopologySpreadConstraint(key, 1, sel, "DoNotSchedule"),)
    elif kind == "affinity":
        kwargs["pod_affinity"] = (PodAffinityTerm(key, sel),)
    elif kind == "anti":
        kwargs["pod_anti_affinity"] = (PodAffinityTerm(key, sel),)
    return replace(make_pod_template(), labels=(("app", rng.choice(VALUES)),), **kwargs)


def test_no_group_matches_nothing() -> None:
    topology = Topology({labels.ZONE: frozenset({"z1"})})
    assert topology.groups_matching(make_pod_template()) == ()


def test_remembered_answers_equal_the_plain_filter_as_groups_are_added() -> None:
    rng = random.Random(7)
    topology = Topology({labels.ZONE: frozenset({"z1", "z2"})})
    templates = [_template(rng) for _ in range(40)]
    seen_new_group = False
    for step in range(0, 40, 5):
        before = len(topology.groups())
        topology.register(templates[step : step + 5])
        seen_new_group |= len(topology.groups()) > before
        for t in templates:
            assert topology.groups_matching(t) == _plain(topology, t)
            assert topology.groups_matching(t) == _plain(topology, t)  # the remembered one
    assert seen_new_group and len(topology.groups()) > 3


def test_record_counts_in_the_matching_groups_only() -> None:
    rng = random.Random(11)
    topology = Topology({labels.ZONE: frozenset({"z1", "z2"})})
    templates = [_template(rng) for _ in range(30)]
    topology.register(templates)
    expected: dict[int, dict[str, int]] = {id(g): {} for g in topology.groups()}
    for t in templates:
        zone = rng.choice(["z1", "z2"])
        domains = {labels.ZONE: zone, labels.HOSTNAME: f"h-{rng.randint(0, 3)}"}
        topology.groups_matching(t)  # remembered before the counts change
        topology.record(t, domains)
        for g in _plain(topology, t):
            counts = expected[id(g)]
            counts[domains[g.key]] = counts.get(domains[g.key], 0) + 1
    assert {id(g): g.counts for g in topology.groups()} == expected
    assert any(g.counts for g in topology.groups())
