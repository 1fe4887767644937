"""The packing benchmark's bounds on its own mixes (few pods, a slice of its synthetic
catalog): LP bound <= assignment bound <= pattern bound <= every policy's plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Appended, not put first: a module of benchmarks/ must not shadow one of the test paths
sys.path.append(str(REPO / "benchmarks"))

import packing  # noqa: E402

from joiner.api import labels  # noqa: E402
from joiner.api.requirements import Requirement  # noqa: E402
from joiner.scheduling import NodePoolTemplate, SchedulingInput  # noqa: E402
from joiner.scheduling.costopt import PACKINGS, lower_bound, plan_cost, scheduler_for  # noqa: E402
from joiner.scheduling.costopt.lp import assignment_bound  # noqa: E402
from joiner.scheduling.costopt.patterns import GAP, pattern_bound  # noqa: E402
from joiner.testing.builders import make_nodepool  # noqa: E402


@pytest.mark.parametrize("mix", packing.MIXES)
def test_pattern_bound_sits_between_the_assignment_bound_and_every_plan(mix: str) -> None:
    types = tuple(packing.synthetic_types()[:12])
    pool = make_nodepool(requirements=[Requirement.in_(labels.CAPACITY_TYPE, "spot", "on-demand")])
    inp = SchedulingInput(
        pods=tuple(packing.mix_pods(mix, 60)), nodepools=(NodePoolTemplate(pool, types),)
    )
    bound = pattern_bound(inp)
    assert bound.converged
    assert lower_bound(inp) <= assignment_bound(inp) + 1e-9
    # Generation stops within GAP of the LP optimum, which is at least the assignment bound.
    assert bound.value >= assignment_bound(inp) * (1 - GAP) - 1e-9
    for policy in PACKINGS:
        assert bound.value <= plan_cost(scheduler_for(policy).solve(inp)) + 1e-9
