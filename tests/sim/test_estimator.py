"""The baseline's shared estimates equal one solve per node group (what CA computes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from joiner.api import labels
from joiner.api.objects import TopologySpreadConstraint
from joiner.api.pods import HostPort, Toleration
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
    # Every 4th pair of groups (a shape's Spot and on-demand group) keeps the test quick
    # while covering sizes, both architectures and both capacity types.
    groups = runtime.autoscaler.groups
    return [g for i, g in enumerate(groups) if (i // 2) % 4 == 0]


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


def _pods(selectors: bool = True):
    plain = make_pod_template(cpu_m=700, memory=3 << 30)
    arm_spot = make_pod_template(
        cpu_m=1500,
        memory=1 << 30,
        node_selector={labels.ARCH: "arm64", labels.CAPACITY_TYPE: "spot"} if selectors else None,
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
    return (*make_pods(plain, 5, "a"), *make_pods(arm_spot, 4, "b"), *make_pods(spread, 7, "c"))


@pytest.mark.parametrize("selectors", [True, False])
def test_shared_estimates_equal_one_solve_per_group(groups, selectors):
    pods = _pods(selectors)
    estimator = Estimator(Scheduler())
    got = estimator.estimate(groups, pods, (), ())
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, pods)
    if not selectors:
        # No pod asks about the capacity type: a shape's Spot and on-demand groups share.
        assert estimator.solves <= len(groups) // 2


def test_a_later_scan_with_renamed_pods_reuses_the_solve(groups):
    pods = _pods()
    estimator = Estimator(Scheduler())
    estimator.estimate(groups, pods, (), ())
    solves = estimator.solves
    renamed = tuple(replace(p, uid=f"x-{p.uid}") for p in pods)
    got = estimator.estimate(groups, renamed, (), ())
    assert estimator.solves == solves
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, renamed)


def _one_template(spread: str | None):
    """Nine pods of one template (1 CPU, 2 GiB), optionally spread over zones."""
    t = make_pod_template(cpu_m=1000, memory=2 << 30)
    if spread is not None:
        t = replace(
            t,
            labels=(("app", "web"),),
            spread=(
                TopologySpreadConstraint(
                    labels.ZONE, 1, Requirements.from_labels({"app": "web"}), spread
                ),
            ),
        )
    return make_pods(t, 9, "w")


@pytest.mark.parametrize("spread", [None, "DoNotSchedule", "ScheduleAnyway"])
def test_pods_of_one_template_share_a_solve_per_pod_count_per_node(groups, spread):
    # Types that hold as many of these pods (a c5.2xlarge and an m5.2xlarge both hold 7
    # pods of 1 CPU and 2 GiB) give the same placements, so they share one solve; the
    # shared answers equal one solve per group.
    pods = _one_template(spread)
    estimator = Estimator(Scheduler())
    got = estimator.estimate(groups, pods, (), ())
    assert {k: v.nodes for k, v in got.items()} == _direct(groups, pods)
    # Fewer solves than distinct allocatables (what the key held before).
    allocatables = {tuple(sorted(g.template.allocatable.items())) for g in groups}
    assert estimator.solves < len(allocatables)


def test_per_node_counts_every_requested_resource():
    from joiner.sim.baseline.estimator import _per_node

    assert _per_node([7900, 14 << 30, 58], (1000, 2 << 30, 1)) == 7
    assert _per_node([7900, 5 << 30, 58], (1000, 2 << 30, 1)) == 2  # memory binds
    assert _per_node([7900, 14 << 30, 3], (1000, 2 << 30, 1)) == 3  # the pods limit binds
    assert _per_node([-100, 14 << 30, 58], (1000, 2 << 30, 1)) == 0  # overhead took it all
    assert _per_node([7900, -1, 58], (1000, 0, 1)) == 0  # asks 0, but nothing fits at all


def test_pods_of_one_template_do_not_share_a_solve_across_daemonset_host_ports(groups):
    # A node exporter DaemonSet runs only on arm64 nodes and binds host port 9100; the
    # pending pods bind 9100 too. On an arm64 template node the DaemonSet holds the port, so
    # no pod fits; on an amd64 one each pod gets its own node. An amd64 and an arm64 group
    # whose types hold as many of these pods must not share a solve.
    exporter = replace(
        make_pod_template(cpu_m=50, memory=128 << 20),
        node_selector=Requirements.from_labels({labels.ARCH: "arm64"}),
        tolerations=(Toleration(operator="Exists"),),
        host_ports=(HostPort(9100),),
    )
    web = replace(make_pod_template(cpu_m=250, memory=30 << 30), host_ports=(HostPort(9100),))
    pods = make_pods(web, 3, "w")
    daemonsets = (exporter,)
    got = Estimator(Scheduler()).estimate(groups, pods, (), daemonsets)
    want = {}
    for g in groups:
        result = Scheduler().solve(
            SchedulingInput(
                pods=pods,
                nodepools=(NodePoolTemplate(g.template_pool(), (g.template,)),),
                daemonsets=daemonsets,
            )
        )
        want[g.name] = tuple(tuple(c.pods) for c in result.new_nodeclaims)
    assert any(want.values()) and not all(want.values())
    assert {k: v.nodes for k, v in got.items()} == want
