"""The baseline's shared estimates equal one solve per node group (what CA computes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from joiner.api import labels
from joiner.api.objects import TopologySpreadConstraint
from joiner.api.requirements import Requirements
from joiner.operator.wiring import SimulationRuntime
from joiner.scheduling import NodePoolTemplate, Scheduler, SchedulingInput
from joiner.sim.baseline.estimator import Estimator
from joiner.sim.scenario import load_scenario
from joiner.testing.builders import make_pod_template, make_pods

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "broad-bursty" / "scenario.yaml"


@pytest.fixture(scope="module")
def groups():
    runtime = SimulationRuntime(load_scenario(SCENARIO), policy="cluster-autoscaler")
    assert runtime.autoscaler is not None
    # The Spot and on-demand groups of every 7th instance shape keep the test quick while
    # covering sizes, families and both architectures; a shape's two groups differ only in
    # capacity type, which pods that do not select on it cannot tell apart.
    return [g for i, g in enumerate(runtime.autoscaler.groups) if (i // 2) % 7 == 0]


def _direct(groups, pods):
    out = {}
    for g in groups:
        result = Scheduler().solve(
            SchedulingInput(
                pods=pods, nodepools=(NodePoolTemplate(g.template_pool(), (g.template,)),)
            )
        )
        out[g.name] = tuple(tuple(c.pods) for c in result.new_nodeclaims)
    return out


def _pods():
    plain = make_pod_template(cpu_m=700, memory=3 << 30)
    arm = make_pod_template(
        cpu_m=1500,
        memory=1 << 30,
        node_selector={labels.ARCH: "arm64"},
    )
    spread = replace(
        make_pod_template(cpu_m=400, memory=512 << 20),
        labels=(("app", "web"),),
        spread=(
            TopologySpreadConstraint(
                labels.ZONE, 1, Requirements.from_labels({"app": "web"}), "DoNotSchedule"
            ),
        ),
    )
    return (*make_pods(plain, 5, "a"), *make_pods(arm, 4, "b"), *make_pods(spread, 7, "c"))


def test_shared_estimates_equal_one_solve_per_group(groups):
    pods = _pods()
    estimator = Estimator(Scheduler())
    got = estimator.estimate(groups, pods, (), ())
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, pods)
    assert estimator.solves < len(groups)  # something was shared


def test_a_capacity_type_selector_tells_a_shapes_spot_and_on_demand_groups_apart(groups):
    spot_only = make_pod_template(
        cpu_m=1500, memory=1 << 30, node_selector={labels.CAPACITY_TYPE: "spot"}
    )
    pods = (*_pods(), *make_pods(spot_only, 3, "s"))
    got = Estimator(Scheduler()).estimate(groups, pods, (), ())
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, pods)


def test_a_later_scan_with_renamed_pods_reuses_the_solve(groups):
    pods = _pods()
    estimator = Estimator(Scheduler())
    estimator.estimate(groups, pods, (), ())
    solves = estimator.solves
    renamed = tuple(replace(p, uid=f"x-{p.uid}") for p in pods)
    got = estimator.estimate(groups, renamed, (), ())
    assert estimator.solves == solves
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, renamed)
