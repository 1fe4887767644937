"""``costopt.patterns``: the pattern LP bound is at most the best plan (brute force on tiny
instances), equals the LP over every pattern (enumerated), is at least the assignment bound,
and keeps hostname anti-affinity as one pod of the group per node."""

from __future__ import annotations

import itertools
from functools import cache

import pytest

from joiner.api import labels, quantity
from joiner.api.objects import PodAffinityTerm, PodTemplate
from joiner.api.requirements import Requirements
from joiner.scheduling import NodePoolTemplate, PodRequest, SchedulingInput
from joiner.scheduling.costopt.lp import INF, assignment_bound, solve_lp
from joiner.scheduling.costopt.patterns import GAP, offers, pattern_bound, pod_classes
from joiner.testing.builders import GIB, make_instance_type, make_nodepool, make_pod_template

# Priced so the cheapest per CPU (tiny) holds one 600m pod with room to spare.
TYPES = (
    make_instance_type(
        "tiny", cpu_m=1000, memory=2 * GIB, pods=4, prices={("us-east-1a", "spot"): 0.010}
    ),
    make_instance_type(
        "mid", cpu_m=2000, memory=4 * GIB, pods=8, prices={("us-east-1a", "spot"): 0.024}
    ),
    make_instance_type(
        "big", cpu_m=4000, memory=8 * GIB, pods=16, prices={("us-east-1a", "spot"): 0.050}
    ),
)


def _input(pods: list[PodTemplate]) -> SchedulingInput:
    reqs = tuple(PodRequest(f"p{i}", t, i) for i, t in enumerate(pods))
    return SchedulingInput(pods=reqs, nodepools=(NodePoolTemplate(make_nodepool(), TYPES),))


def _patterns(inp: SchedulingInput) -> list[tuple[float, tuple[int, ...]]]:
    """Every (price, pods per class) pattern of every type, by enumeration."""
    offer, resources = offers(inp)
    classes = pod_classes(inp, resources)
    out = []
    ranges = [range(int(n) + 1) for n in classes.counts]
    for j in range(len(offer.price)):
        for a in itertools.product(*ranges):
            if not any(a):
                continue
            used = sum(k * classes.vectors[c] for c, k in enumerate(a))
            if (used > offer.net[j]).any():
                continue
            if any(
                sum(k for c, k in enumerate(a) if classes.group[c] == g) > cap
                for g, cap in enumerate(classes.caps)
            ):
                continue
            out.append((float(offer.price[j]), tuple(a)))
    return out


def _integer_optimum(inp: SchedulingInput) -> float:
    """The cheapest set of NodeClaims holding every pod (dynamic programme over counts)."""
    _, resources = offers(inp)
    counts = tuple(int(n) for n in pod_classes(inp, resources).counts)
    patterns = _patterns(inp)

    @cache
    def best(left: tuple[int, ...]) -> float:
        if not any(left):
            return 0.0
        return min(
            price + best(tuple(max(n - k, 0) for n, k in zip(left, a, strict=True)))
            for price, a in patterns
            if any(k and n for n, k in zip(left, a, strict=True))
        )

    return best(counts)


def _full_lp(inp: SchedulingInput) -> float:
    _, resources = offers(inp)
    counts = pod_classes(inp, resources).counts
    patterns = _patterns(inp)
    columns = [([c for c, k in enumerate(a) if k], [float(k) for k in a if k]) for _, a in patterns]
    sol = solve_lp([p for p, _ in patterns], columns, counts.astype(float), [INF] * len(counts))
    assert sol.optimal
    return sol.objective


ANTI = PodTemplate(
    requests={quantity.CPU: 300, quantity.MEMORY: GIB // 2, quantity.PODS: 1},
    labels=(("app", "db"),),
    pod_anti_affinity=(PodAffinityTerm(labels.HOSTNAME, Requirements.from_labels({"app": "db"})),),
)

CASES = {
    # Three 600m pods: one mid holds them all.
    "cpu-heavy": [make_pod_template(600, GIB // 2)] * 3,
    "two-shapes": [make_pod_template(600, GIB // 2)] * 3 + [make_pod_template(300, 3 * GIB)] * 2,
    "anti-affinity": [ANTI] * 3 + [make_pod_template(300, GIB // 2)] * 2,
    "pod-slots": [make_pod_template(100, GIB // 8)] * 6,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bound_is_the_pattern_lp_and_at_most_the_best_plan(case: str) -> None:
    inp = _input(CASES[case])
    bound = pattern_bound(inp)
    assert bound.converged
    lp = _full_lp(inp)
    assert lp * (1 - 2 * GAP) - 1e-12 <= bound.value <= lp + 1e-9
    assert bound.value <= _integer_optimum(inp) + 1e-9
    assert bound.value >= assignment_bound(inp) - 1e-9


def test_whole_pods_make_it_tighter_than_the_assignment_bound() -> None:
    # 600m pods: the assignment bound buys 0.6 of a tiny per pod (0.006 each), but a tiny
    # holds one whole pod (0.010) and a mid three (0.008 each): one mid, 0.024, is optimal.
    inp = _input(CASES["cpu-heavy"])
    assert assignment_bound(inp) == pytest.approx(0.018)
    bound = pattern_bound(inp)
    assert bound.value == pytest.approx(0.024, rel=2 * GAP)
    assert _integer_optimum(inp) == pytest.approx(0.024)


def test_anti_affinity_pods_take_one_node_each() -> None:
    # Three db pods, one per node: at least three NodeClaims (three tiny: 0.030).
    inp = _input([ANTI] * 3)
    bound = pattern_bound(inp)
    assert bound.value == pytest.approx(0.030, rel=2 * GAP)
    assert all(sum(p.pods.values()) == 1 for p in bound.patterns)


def test_an_early_stop_still_gives_a_valid_bound() -> None:
    inp = _input(CASES["two-shapes"])
    early = pattern_bound(inp, max_rounds=1, per_round=1)
    assert 0 < early.value <= early.master + 1e-12
    assert early.value <= _full_lp(inp) + 1e-9


def test_no_pods_no_bound() -> None:
    assert pattern_bound(_input([])).value == 0.0


def test_an_exotic_type_a_plan_never_launches_is_left_out() -> None:
    # A cheap GPU type holds the four pods, but a NodeClaim that fits it also fits "big",
    # and launches as a non-exotic option: the plan pays at least four tiny (0.040).
    gpu = make_instance_type(
        "g.4x",
        cpu_m=4000,
        memory=8 * GIB,
        pods=16,
        prices={("us-east-1a", "spot"): 0.005},
        extra={"nvidia.com/gpu": 1},
    )
    reqs = tuple(PodRequest(f"p{i}", make_pod_template(1000, GIB), i) for i in range(4))
    pool = NodePoolTemplate(make_nodepool(), (*TYPES, gpu))
    inp = SchedulingInput(pods=reqs, nodepools=(pool,))
    assert pattern_bound(inp).value == pytest.approx(0.040, rel=2 * GAP)
    assert _integer_optimum(_input([make_pod_template(1000, GIB)] * 4)) == pytest.approx(0.040)
