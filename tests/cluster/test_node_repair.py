"""Node repair (Karpenter's node health controller, ``NodeRepair`` gate) in controller mode:
Node conditions read from the API, repair after the toleration and not before, the 20 % rule,
conditions no policy names ignored, force termination without draining, its metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from joiner.api import timeline as tl
from joiner.api.errors import InputError
from joiner.api.featuregates import parse
from joiner.cloudprovider.repair import (
    AWS_REPAIR_POLICIES,
    KWOK_REPAIR_POLICIES,
    with_tolerations,
)
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.metrics import Metrics
from joiner.controllers.health.controller import HealthController, allowed_unhealthy
from joiner.operator.kube_metrics import MetricsWiring
from joiner.state.cluster import NodeClaim
from tests.cluster.test_kube_adapter import _doc
from tests.cluster.test_nodeclaim_lifecycle import Env

WALL = datetime(2026, 1, 1, tzinfo=UTC)  # the harness's wall clock


class RecordingTimeline:
    def __init__(self) -> None:
        self.records: list[tuple[str, str | None, str]] = []
        self.listeners: list[Any] = []

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        self.records.append((kind, node, detail))
        for listener in self.listeners:
            listener(kind, node, pod, detail)

    def nodes(self, kind: str) -> list[str | None]:
        return [n for k, n, _ in self.records if k == kind]


def _node_doc(claim: NodeClaim, *conditions: tuple[str, str, float]) -> dict[str, Any]:
    """A Node for ``claim`` whose conditions are (type, status, seconds since the
    transition, by the wall clock); Ready True unless given."""
    assert claim.instance is not None
    conds = [
        {
            "type": t,
            "status": s,
            "lastTransitionTime": (WALL - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for t, s, ago in conditions
    ]
    if not any(c["type"] == "Ready" for c in conds):
        conds.append({"type": "Ready", "status": "True"})
    return _doc(
        kube.NODE,
        {
            "metadata": {"name": claim.name, "labels": {"karpenter.sh/nodepool": "pool"}},
            "spec": {"providerID": claim.instance.provider_id},
            "status": {"conditions": conds},
        },
    )


class Repair:
    """``n`` registered, ready nodes of NodePool ``pool`` and a health controller."""

    def __init__(self, n: int, tolerations: dict[str, float] | None = None) -> None:
        self.env = Env()
        self.env.feed.start()
        self.timeline = RecordingTimeline()
        self.env.terminator._timeline = self.timeline
        self.claims = [self.env.launch(f"pool-{i}") for i in range(n)]
        self.deliver()
        self.health = HealthController(
            self.env.state,
            self.env.terminator,
            self.env.clock,
            self.timeline,
            with_tolerations(AWS_REPAIR_POLICIES, tolerations or {"Ready": 10.0}),
            trigger=self.env.trigger,
        )
        # As controller mode wires it: a pass whenever a Node's conditions change.
        self.env.feed.on_conditions.append(
            lambda _n: self.env.clock.after(0.0, self.health.reconcile, label="node-health")
        )
        self.health.start()

    def deliver(self, sick: dict[int, tuple[tuple[str, str, float], ...]] | None = None) -> None:
        sick = sick or {}
        docs = [_node_doc(c, *sick.get(i, ())) for i, c in enumerate(self.claims)]
        self.env.feed.deliver(kube.NODE, "MODIFIED", docs)

    def gone(self) -> list[str]:
        return [c.name for c in self.claims if c.deleted_at_s is not None]


def test_repair_after_the_toleration_not_before_and_without_draining() -> None:
    r = Repair(6)
    # pool-0 goes NotReady now; a pod with a PodDisruptionBudget that allows nothing runs
    # there: repair does not wait for it.
    r.env.clock.run_until(5.0)
    r.deliver({0: (("Ready", "False", 0.0),)})
    node = r.env.state.nodes["pool-0"]
    assert node.conditions["Ready"].status == "False"
    assert node.conditions["Ready"].last_transition_s == pytest.approx(5.0)
    r.env.clock.run_until(14.9)
    assert r.gone() == [] and r.health.repaired == 0
    r.env.clock.run_until(15.1)  # 10 s after the transition: the exact timer fires
    assert r.gone() == ["pool-0"]
    assert r.claims[0].deleted_at_s == pytest.approx(15.0)
    assert r.claims[0].disruption_reason == "Unhealthy"
    assert r.env.triggered >= 1  # its pods are provisioned again
    kinds = [k for k, _, _ in r.timeline.records]
    assert kinds == [tl.UNHEALTHY, tl.DRAIN_STARTED, tl.DRAINED, tl.TERMINATED]
    assert r.timeline.records[0][2].startswith("Ready False for 10 s")


def test_a_transition_in_the_past_counts_from_its_lastTransitionTime() -> None:
    r = Repair(6)
    r.deliver({1: (("Ready", "Unknown", 8.0),)})  # unreachable for 8 s already
    r.env.clock.run_until(1.9)
    assert r.gone() == []
    r.env.clock.run_until(2.1)
    assert r.gone() == ["pool-1"]


def test_node_monitoring_agent_conditions_use_their_own_tolerations() -> None:
    r = Repair(6, {"Ready": 10.0, "KernelReady": 30.0, "AcceleratedHardwareReady": 20.0})
    r.deliver(
        {2: (("KernelReady", "False", 0.0),), 3: (("AcceleratedHardwareReady", "False", 0.0),)}
    )
    r.env.clock.run_until(19.0)
    assert r.gone() == []
    r.env.clock.run_until(21.0)
    # Two of six unhealthy: ceil(20 % of 6) = 2 may be, so both are repaired.
    assert r.gone() == ["pool-3"]
    r.env.clock.run_until(31.0)
    assert r.gone() == ["pool-2", "pool-3"]


def test_conditions_no_policy_names_are_ignored() -> None:
    r = Repair(3)
    r.deliver(
        {
            0: (("MemoryPressure", "True", 3600.0),),  # a kubelet condition AWS does not repair
            1: (("FooReady", "False", 3600.0),),  # unknown to every policy
            2: (("KernelReady", "True", 3600.0), ("Ready", "True", 3600.0)),  # healthy
        }
    )
    r.env.clock.run_until(7200.0)
    assert r.gone() == [] and r.health.repaired == 0 and r.timeline.records == []


@pytest.mark.parametrize(("total", "allowed"), [(1, 1), (3, 1), (5, 1), (6, 2), (10, 2), (11, 3)])
def test_twenty_percent_rounded_up(total: int, allowed: int) -> None:
    assert allowed_unhealthy(total) == allowed


def test_more_than_twenty_percent_unhealthy_blocks_repair_in_the_nodepool() -> None:
    r = Repair(5)  # one of five may be unhealthy
    r.deliver({0: (("Ready", "False", 0.0),), 1: (("Ready", "Unknown", 0.0),)})
    r.env.clock.run_until(60.0)
    assert r.gone() == [] and r.health.repaired == 0
    # One NodeRepairBlocked warning per node, not one per pass.
    assert sorted(r.timeline.nodes(tl.NODE_REPAIR_BLOCKED)) == ["pool-0", "pool-1"]
    assert "more than 20% nodes are unhealthy in the nodepool" in r.timeline.records[0][2]
    # pool-1 recovers: one of five is within the limit, so pool-0 is repaired.
    r.deliver({0: (("Ready", "False", 60.0),)})
    r.env.clock.run_until(71.0)
    assert r.gone() == ["pool-0"]


def test_repair_counts_karpenters_metrics() -> None:
    r = Repair(6)
    metrics = Metrics()
    r.timeline.listeners.append(MetricsWiring(metrics, r.env.state).timeline)
    r.deliver({0: (("AcceleratedHardwareReady", "False", 1200.0),)})
    r.env.clock.run_until(11.0)
    assert r.gone() == ["pool-0"]
    text = metrics.exposition().decode()
    assert (
        'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="pool",'
        'reason="unhealthy"} 1.0'
    ) in text
    assert (
        'karpenter_nodeclaims_unhealthy_disrupted_total{capacity_type="spot",'
        'condition="accelerated_hardware_ready",image_id="",nodepool="pool"} 1.0'
    ) in text


def test_upstream_policies_and_tolerations_as_settings() -> None:
    aws = {(p.condition_type, p.condition_status): p.toleration_s for p in AWS_REPAIR_POLICIES}
    assert aws == {
        ("Ready", "False"): 1800.0,
        ("Ready", "Unknown"): 1800.0,
        ("AcceleratedHardwareReady", "False"): 600.0,
        ("StorageReady", "False"): 1800.0,
        ("NetworkingReady", "False"): 1800.0,
        ("KernelReady", "False"): 1800.0,
        ("ContainerRuntimeReady", "False"): 1800.0,
    }
    assert {p.toleration_s for p in KWOK_REPAIR_POLICIES} == {600.0}
    fast = with_tolerations(AWS_REPAIR_POLICIES, {"Ready": 5})
    assert [p.toleration_s for p in fast[:3]] == [5.0, 5.0, 600.0]
    with pytest.raises(InputError, match=r"MemoryPressure.*not a condition node repair watches"):
        with_tolerations(AWS_REPAIR_POLICIES, {"MemoryPressure": 5})
    with pytest.raises(InputError, match="negative"):
        with_tolerations(AWS_REPAIR_POLICIES, {"Ready": -1})


def test_the_gate_is_off_by_default_and_settable_where_karpenters_gates_are(tmp_path) -> None:
    from joiner.operator.controller_settings import load_settings, repair_policies

    assert parse("").node_repair is False
    assert parse("NodeRepair=true").node_repair is True
    assert load_settings(None).featureGates.nodeRepair is False
    good = tmp_path / "s.yaml"
    good.write_text("featureGates: {nodeRepair: true}\nnodeRepairTolerationSeconds: {Ready: 5}\n")
    s = load_settings(good)
    assert s.featureGates.nodeRepair and repair_policies(s, None)[0].toleration_s == 5.0
    bad = tmp_path / "b.yaml"
    bad.write_text("nodeRepairTolerationSeconds: {Bogus: 5}\n")
    with pytest.raises(InputError, match=r"nodeRepairTolerationSeconds\.Bogus"):
        load_settings(bad)


def test_joiner_disrupt_warns_that_it_does_not_model_node_repair(tmp_path) -> None:
    from joiner.api.featuregates import FeatureGates
    from tests.controllers.disruption_fixtures import dry_run, nodepool

    off = dry_run(tmp_path, nodepool())
    on = dry_run(tmp_path, nodepool(), gates=FeatureGates(node_repair=True))
    assert not any("NodeRepair" in w for w in off.warnings)
    assert any("not modelled: node repair" in w for w in on.warnings)
