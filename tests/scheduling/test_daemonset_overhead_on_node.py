"""``daemonsets.overhead_on_node`` remembers its answer for the node labels the DaemonSets'
node selection names; that answer must be the one every label gives (the plain
computation, ``_overhead`` over all of them), for any node."""

from __future__ import annotations

import random

from joiner.api.labels import NORMALIZED_LABELS
from joiner.api.pods import PodTemplate, Taint, Toleration
from joiner.api.requirements import Requirement
from joiner.scheduling.daemonsets import _overhead, overhead_on_node
from joiner.testing.builders import make_pod_template

KEYS = ["zone", "arch", "os", "pool", "gpu", "hostname", "tier"]
VALUES = ["a", "b", "c", "1", "10"]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


def _requirement(rng: random.Random) -> Requirement:
    op = rng.choice(OPERATORS)
    if op in ("Gt", "Lt"):
        return Requirement.new(rng.choice(KEYS), op, [str(rng.randint(0, 20))])
    values = rng.sample(VALUES, rng.randint(1, 3)) if op in ("In", "NotIn") else []
    return Requirement.new(rng.choice(KEYS), op, values)


def _daemonset(rng: random.Random, i: int) -> PodTemplate:
    selector = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 2))}
    terms = [
        [_requirement(rng) for _ in range(rng.randint(1, 2))] for _ in range(rng.randint(0, 2))
    ]
    tolerations = [Toleration(key="dedicated", operator="Exists")] if rng.random() < 0.5 else []
    return make_pod_template(
        100 * (i + 1), node_selector=selector, affinity=terms, tolerations=tolerations
    )


def test_overhead_on_node_is_the_plain_computation() -> None:
    rng = random.Random(11)
    checked = set()
    for _ in range(60):
        daemonsets = [_daemonset(rng, i) for i in range(rng.randint(1, 4))]
        for _ in range(40):
            node = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, len(KEYS)))}
            taints = (Taint("dedicated", "NoSchedule"),) if rng.random() < 0.3 else ()
            plain = dict(
                _overhead.__wrapped__(tuple(sorted(node.items())), taints, tuple(daemonsets))
            )
            assert overhead_on_node(node, taints, daemonsets) == plain, (node, daemonsets)
            checked.add(frozenset(plain.items()))
    assert len(checked) >= 10, "the cases reach many different sets of DaemonSets"


def test_a_node_label_under_a_deprecated_alias_counts_as_its_stable_key() -> None:
    """A node with only ``failure-domain.beta.kubernetes.io/zone`` (or another alias
    ``normalize_key`` rewrites) has that zone for a DaemonSet selecting on
    ``topology.kubernetes.io/zone``, and the other way round; with both keys set to different
    values, the answer is still the plain computation's."""
    checked = 0
    for alias, stable in NORMALIZED_LABELS.items():
        for selected in (alias, stable):
            daemonsets = [make_pod_template(100, node_selector={selected: "a"})]
            for node in (
                {alias: "a", "kubernetes.io/hostname": "n1"},
                {stable: "a"},
                {alias: "a", stable: "b"},
                {alias: "b", stable: "a"},
            ):
                plain = dict(
                    _overhead.__wrapped__(tuple(sorted(node.items())), (), tuple(daemonsets))
                )
                assert overhead_on_node(node, (), daemonsets) == plain, (selected, node)
                checked += bool(plain)
    assert checked >= 2 * len(NORMALIZED_LABELS), "an alias-only node gets the DaemonSet"
