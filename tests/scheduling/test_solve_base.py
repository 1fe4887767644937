"""``scheduling.base.SolveBase``: what a solve derives from a snapshot minus its excluded
nodes equals what it would derive from the kept nodes alone."""

from __future__ import annotations

import itertools
import random

import pytest

from joiner.api import labels
from joiner.api.objects import Taint
from joiner.scheduling import ExistingNode
from joiner.scheduling.base import build

TAINTS = [(), (Taint("soft", "PreferNoSchedule"),), (Taint("dedicated", "NoSchedule", "x"),)]


def _nodes(rng: random.Random) -> tuple[ExistingNode, ...]:
    out = []
    for i in range(rng.randint(1, 12)):
        node_labels = {labels.HOSTNAME: f"n{i}"}
        if rng.random() < 0.8:
            node_labels[labels.ZONE] = rng.choice(["a", "b", "c"])
        out.append(
            ExistingNode(
                name=f"n{i}",
                labels=tuple(sorted(node_labels.items())),
                taints=rng.choice(TAINTS),
                available={"cpu": 1000},
                initialized=rng.random() < 0.7,
            )
        )
    return tuple(out)


@pytest.mark.parametrize("seed", range(30))
def test_domains_hosts_and_prefer_no_schedule_leave_the_excluded_nodes_out(seed):
    rng = random.Random(seed)
    nodes = _nodes(rng)
    base = build(nodes, ())
    names = [n.name for n in nodes]
    for size in range(len(names) + 1):
        for exclude in itertools.islice(itertools.combinations(names, size), 5):
            excluded = frozenset(exclude)
            kept = build(tuple(n for n in nodes if n.name not in excluded), ())
            for key in (labels.ZONE, labels.HOSTNAME):
                want: dict[str, set[tuple[Taint, ...]]] = {}
                for b in kept.nodes:
                    if key in b.domains:
                        want.setdefault(b.domains[key], set()).add(b.node.taints)
                assert base.domains(key, excluded) == want
                assert kept.domains(key, frozenset()) == want
            assert base.hosts(excluded) == kept.hosts(frozenset())
            assert [h[0] for h in kept.hosts(frozenset())] == [b.node.name for b in kept.nodes]
            assert base.prefer_no_schedule - excluded == kept.prefer_no_schedule
            assert kept.prefer_no_schedule == {
                n.name for n in nodes if n.name not in excluded and n.taints == TAINTS[1]
            }
