"""The disruption methods and their blocking rules, on running clusters read from manifests
(``joiner disrupt``'s dry run: consolidateAfter treated as elapsed)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from joiner.api.featuregates import FeatureGates
from joiner.api.objects import SelectorTerm
from joiner.cloudprovider.types import LaunchRequest
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pdb, pod

ON = FeatureGates(spot_to_spot_consolidation=True)


def reasons(plan):
    return {u.node: u.reason for u in plan.unconsolidatable}


def test_empty_node_is_deleted_by_emptiness_first(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(),
        node("busy", "m5.xlarge", annotations='karpenter.sh/do-not-disrupt: "true"'),
        node("idle", "m5.xlarge"),
        pod("web-1", "busy"),
    ).plan()
    first = plan.commands[0]
    assert (first.method, first.reason, first.candidates) == ("Emptiness", "Empty", ["idle"])
    assert first.replacements == []
    assert first.savingsPerHour == pytest.approx(0.192)
    assert reasons(plan)["busy"] == "node has karpenter.sh/do-not-disrupt"


def test_node_whose_pods_fit_elsewhere_is_deleted(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.2xlarge", annotations='karpenter.sh/do-not-disrupt: "true"'),
        node("small", "m5.large"),
        pod("web-1", "big"),
        pod("web-2", "small"),
    ).plan()
    assert [(c.method, c.candidates, c.replacements) for c in plan.commands] == [
        ("SingleNodeConsolidation", ["small"], [])
    ]
    assert plan.costPerHourAfter == pytest.approx(0.384)


def test_underutilized_node_is_replaced_by_a_cheaper_one(tmp_path):
    plan = dry_run(
        tmp_path, nodepool(), node("big", "m5.4xlarge"), pod("web-1", "big", cpu="1")
    ).plan()
    (cmd,) = plan.commands
    assert cmd.method == "SingleNodeConsolidation" and cmd.candidates == ["big"]
    (rep,) = cmd.replacements
    assert rep.capacityType == "on-demand"
    assert rep.pricePerHour < 0.768
    assert cmd.savingsPerHour == pytest.approx(0.768 - rep.pricePerHour)


def test_replacement_allowing_both_capacity_types_is_pinned_to_spot(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(capacity_types="spot, on-demand"),
        node("big", "m5.4xlarge"),
        pod("web-1", "big", cpu="1"),
    ).plan()
    (cmd,) = plan.commands
    assert [r.capacityType for r in cmd.replacements] == ["spot"]


def test_several_underutilized_nodes_become_one(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(disruption='    budgets:\n      - nodes: "100%"\n'),
        node("a", "m5.xlarge"),
        node("b", "m5.xlarge"),
        node("c", "m5.xlarge"),
        pod("web-1", "a"),
        pod("web-2", "b"),
        pod("web-3", "c"),
    ).plan()
    first = plan.commands[0]
    assert first.method == "MultiNodeConsolidation"
    assert len(first.candidates) >= 2
    assert len(first.replacements) <= 1
    assert plan.costPerHourAfter < 0.192 * 2


def test_default_budget_keeps_multi_node_to_one_node_per_pass(tmp_path):
    # Karpenter's default budget is 10% of 3 nodes, rounded up: 1, so multi-node
    # consolidation cannot batch and single-node consolidation acts node by node.
    plan = dry_run(
        tmp_path,
        nodepool(),
        node("a", "m5.xlarge"),
        node("b", "m5.xlarge"),
        node("c", "m5.xlarge"),
        pod("web-1", "a"),
        pod("web-2", "b"),
        pod("web-3", "c"),
    ).plan()
    assert all(len(c.candidates) == 1 for c in plan.commands)
    assert plan.commands[0].method == "SingleNodeConsolidation"


def test_do_not_disrupt_pod_blocks_consolidation(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("db-0", "big", app="db", annotations='karpenter.sh/do-not-disrupt: "true"'),
    ).plan()
    assert plan.commands == []
    assert reasons(plan)["big"] == "pod default/db-0 has karpenter.sh/do-not-disrupt"


def test_pdb_at_zero_blocks_consolidation(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("api-1", "big", app="api"),
        pod("api-2", "big", app="api"),
        pdb("api", "api", min_available=2),
    ).plan()
    assert plan.commands == []
    assert reasons(plan)["big"].startswith("PDB default/api allows 0 disruptions")


def test_when_empty_policy_leaves_used_nodes(tmp_path):
    pool = nodepool().replace("WhenEmptyOrUnderutilized", "WhenEmpty")
    plan = dry_run(tmp_path, pool, node("big", "m5.4xlarge"), pod("web-1", "big")).plan()
    assert plan.commands == []
    assert "policy WhenEmpty" in reasons(plan)["big"]


def test_consolidate_after_never_disables_consolidation_and_emptiness(tmp_path):
    pool = nodepool().replace("consolidateAfter: 0s", "consolidateAfter: Never")
    plan = dry_run(
        tmp_path, pool, node("big", "m5.4xlarge"), node("idle", "m5.large"), pod("w", "big")
    ).plan()
    assert plan.commands == []
    assert "consolidateAfter: Never" in reasons(plan)["big"]
    assert "consolidateAfter: Never" in reasons(plan)["idle"]


def test_budget_of_zero_blocks_and_says_which_budget(tmp_path):
    pool = nodepool(disruption='    budgets:\n      - nodes: "0"\n')
    plan = dry_run(tmp_path, pool, node("idle", "m5.large"), node("big", "m5.4xlarge")).plan()
    assert plan.commands == []
    assert "budget (nodes=0) allows 0 more Empty disruptions" in reasons(plan)["idle"]


@pytest.mark.parametrize(
    ("hour", "blocked"),
    [(19, False), (20, True), (21, True), (21.99, True), (22, False), (23, False)],
)
def test_budget_schedule_window_is_cron_in_utc(tmp_path, hour, blocked):
    pool = nodepool(
        disruption='    budgets:\n      - nodes: "0"\n        schedule: "0 20 * * *"\n'
        "        duration: 2h\n"
    )
    at = datetime(2025, 1, 7, int(hour), round((hour % 1) * 60), tzinfo=UTC)
    plan = dry_run(tmp_path, pool, node("idle", "m5.large"), at=at).plan()
    assert (plan.commands == []) is blocked


def test_budget_reasons_limit_only_the_named_reason(tmp_path):
    pool = nodepool(
        disruption='    budgets:\n      - nodes: "0"\n        reasons: [Underutilized]\n'
    )
    plan = dry_run(
        tmp_path, pool, node("idle", "m5.large"), node("big", "m5.4xlarge"), pod("w", "big")
    ).plan()
    assert [c.candidates for c in plan.commands] == [["idle"]]
    assert "Underutilized" in reasons(plan)["big"]


def test_percentage_budget_rounds_up_and_bounds_one_pass(tmp_path):
    # 10% of 3 nodes rounds up to 1: emptiness takes one empty node per pass.
    pool = nodepool(disruption='    budgets:\n      - nodes: "10%"\n')
    plan = dry_run(
        tmp_path, pool, node("e1", "m5.large"), node("e2", "m5.large"), node("e3", "m5.large")
    ).plan()
    assert [len(c.candidates) for c in plan.commands] == [1, 1, 1]


def test_spot_to_spot_is_off_by_default(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(capacity_types="spot"),
        node("s", "m5.4xlarge", capacity_type="spot"),
        pod("w", "s"),
    ).plan()
    assert plan.commands == []
    assert "SpotToSpotConsolidation=true" in reasons(plan)["s"]


def test_spot_to_spot_needs_fifteen_cheaper_types_for_one_node(tmp_path):
    few = (
        "        - {key: node.kubernetes.io/instance-type, operator: In, "
        "values: [m5.large, m5.xlarge, m5.4xlarge]}\n"
    )
    plan = dry_run(
        tmp_path,
        nodepool(capacity_types="spot", requirements=few),
        node("s", "m5.4xlarge", capacity_type="spot"),
        pod("w", "s"),
        gates=ON,
    ).plan()
    assert plan.commands == []
    assert re.fullmatch(
        r"spot-to-spot needs 15 cheaper instance types, 2 are allowed", reasons(plan)["s"]
    )


def test_spot_to_spot_replaces_with_the_fifteen_cheapest(tmp_path):
    run = dry_run(
        tmp_path,
        nodepool(capacity_types="spot"),
        node("s", "m5.4xlarge", capacity_type="spot"),
        pod("w", "s"),
        gates=ON,
    )
    command, _ctx = run.controller.compute(elapsed=True)
    assert command is not None and command.method == "SingleNodeConsolidation"
    (rep,) = command.replacements
    assert rep.capacity_types == ("spot",)
    assert len(rep.instance_types) == 15
    assert rep.price_per_hour < command.candidates[0].price_per_hour


def test_drift_on_a_template_label_replaces_the_node(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(labels="team: payments"),
        node("old", "m5.xlarge", annotations='karpenter.sh/do-not-disrupt: "true"'),
        node("drifted", "m5.xlarge"),
        pod("w", "drifted"),
    ).plan()
    first = plan.commands[0]
    assert (first.method, first.reason, first.candidates) == ("Drift", "Drifted", ["drifted"])
    assert "template label team=payments is not on the node" in first.detail


def test_drift_on_requirements_is_found(tmp_path):
    plan = dry_run(
        tmp_path,
        nodepool(capacity_types="on-demand"),
        node("spotty", "m5.xlarge", capacity_type="spot"),
        pod("w", "spotty"),
    ).plan()
    assert plan.commands[0].method == "Drift"
    assert "requirements no longer match" in plan.commands[0].detail


def test_revalidation_drops_a_command_whose_candidate_became_blocked(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("big", "m5.4xlarge"), pod("web-1", "big"))
    command, _ = run.controller.compute()
    assert command is not None
    for p in run.state.pods_on("big"):
        p.do_not_disrupt = True
    assert run.controller.revalidate(command) is None


def test_revalidation_keeps_a_valid_command(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("big", "m5.4xlarge"), pod("web-1", "big"))
    command, _ = run.controller.compute()
    assert command is not None
    again = run.controller.revalidate(command)
    assert again is not None and again.names == ["big"] and again.action == "Replace"


def test_consolidate_after_not_elapsed_is_a_reason(tmp_path):
    pool = nodepool().replace("consolidateAfter: 0s", "consolidateAfter: 10m")
    run = dry_run(tmp_path, pool, node("big", "m5.4xlarge"), pod("web-1", "big"))
    command, ctx = run.controller.compute()  # at t=0, the adopted node's last event was t=0
    assert command is None
    assert "consolidateAfter (10m) has not passed" in ctx.reasons["big"].message()


def test_cloud_provider_drift_replaces_the_node(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("n", "m5.xlarge"), pod("w", "n"))
    run.controller._cloud_drift = lambda provider_id: "AMIDrift"
    command, _ = run.controller.compute(elapsed=True)
    assert command is not None and command.method == "Drift"
    assert "reports AMIDrift" in (command.candidates[0].drifted or "")


def test_simulated_subnet_drift_is_detected(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("n", "m5.xlarge"), pod("w", "n"))
    types = tuple(run.cloud.get_instance_types("default"))[:5]
    pool = run.state.nodepools["general"]
    launched = run.cloud.create(LaunchRequest("x", "general", "default", pool.requirements, types))
    assert run.cloud.is_drifted(launched.provider_id) == ""
    nc = run.cloud.node_classes["default"]
    others = [s for s in run.cloud.resolve_subnets(nc) if s.id != launched.subnet_id]
    run.cloud.node_classes["default"] = replace(
        nc, subnet_selector_terms=tuple(SelectorTerm(id=s.id) for s in others)
    )
    assert run.cloud.is_drifted(launched.provider_id) == "SubnetDrift"


def test_simulated_subnet_drift_follows_the_clouds_subnets(tmp_path):
    """``resolve_subnets`` is remembered per NodeClass object: a subnet leaving the cloud
    (the same NodeClass, the list changed in place) is still seen as SubnetDrift, and its
    return brings the instance back in line."""
    run = dry_run(tmp_path, nodepool(), node("n", "m5.xlarge"), pod("w", "n"))
    types = tuple(run.cloud.get_instance_types("default"))[:5]
    pool = run.state.nodepools["general"]
    launched = run.cloud.create(LaunchRequest("x", "general", "default", pool.requirements, types))
    assert run.cloud.is_drifted(launched.provider_id) == ""
    index = next(i for i, s in enumerate(run.cloud.subnets) if s.id == launched.subnet_id)
    gone = run.cloud.subnets.pop(index)
    assert run.cloud.is_drifted(launched.provider_id) == "SubnetDrift"
    run.cloud.subnets.insert(index, gone)
    assert run.cloud.is_drifted(launched.provider_id) == ""


def test_drift_sees_a_node_label_changed_in_place(tmp_path):
    """A node's labels are read as requirements once per label set (``drift``'s memo): a
    label changed in place on the same Node object is seen on the next check."""
    from joiner.api import labels
    from joiner.controllers.disruption.drift import drift_reason

    run = dry_run(tmp_path, nodepool(capacity_types="on-demand"), node("n", "m5.xlarge"))
    ctx, candidates = run.controller.context()
    (c,) = candidates
    assert drift_reason(c.claim, c.node, c.pool, ctx.types_of) is None
    c.node.labels[labels.CAPACITY_TYPE] = "spot"
    reason = drift_reason(c.claim, c.node, c.pool, ctx.types_of)
    assert reason is not None and "requirements no longer match" in reason
    c.node.labels[labels.CAPACITY_TYPE] = "on-demand"
    assert drift_reason(c.claim, c.node, c.pool, ctx.types_of) is None


def test_simulated_static_nodeclass_drift_is_detected_and_replaces(tmp_path):
    run = dry_run(tmp_path, nodepool(), node("n", "m5.xlarge"), pod("w", "n"))
    types = tuple(run.cloud.get_instance_types("default"))[:5]
    pool = run.state.nodepools["general"]
    launched = run.cloud.create(LaunchRequest("x", "general", "default", pool.requirements, types))
    nc = run.cloud.node_classes["default"]
    run.cloud.node_classes["default"] = replace(nc, detailed_monitoring=not nc.detailed_monitoring)
    assert run.cloud.is_drifted(launched.provider_id) == "NodeClassDrift"
    run.cloud.node_classes["default"] = nc
    assert run.cloud.is_drifted(launched.provider_id) == ""


def test_pods_on_nodes_left_alone_are_not_demand(tmp_path):
    """Regression (breaker): a pod on an unmanaged node was treated as pending and packed
    into the consolidation replacement, making it bigger."""
    unmanaged = node("n9", "m5.large").replace("    karpenter.sh/nodepool: general\n", "")
    alone = dry_run(
        tmp_path,
        nodepool(),
        node("big", "m5.4xlarge"),
        pod("w", "big"),
        unmanaged,
        pod("u", "n9", cpu="3"),
    ).plan()
    baseline = dry_run(tmp_path, nodepool(), node("big", "m5.4xlarge"), pod("w", "big")).plan()
    assert alone.commands[0].replacements == baseline.commands[0].replacements
    assert reasons(alone)["n9"] == "not managed by a NodePool (no karpenter.sh/nodepool label)"


def test_unknown_instance_type_is_named(tmp_path):
    plan = dry_run(tmp_path, nodepool(), node("odd", "zz9.mega")).plan()
    assert reasons(plan)["odd"] == (
        "instance type zz9.mega in us-east-1a is not offered to NodePool general"
    )


def test_do_not_disrupt_duration_counts_from_the_pods_start(tmp_path):
    started = "2025-01-07T20:00:00Z"  # AT is 21:00
    docs = [nodepool(), node("big", "m5.4xlarge")]
    ann = 'karpenter.sh/do-not-disrupt: "30m"'
    expired = pod("w", "big", annotations=ann) + f"status: {{startTime: '{started}'}}\n"
    assert dry_run(tmp_path, *docs, expired).plan().commands
    fresh = pod("w", "big", annotations='karpenter.sh/do-not-disrupt: "2h"')
    fresh += f"status: {{startTime: '{started}'}}\n"
    plan = dry_run(tmp_path, *docs, fresh).plan()
    assert plan.commands == []
    assert "do-not-disrupt" in reasons(plan)["big"]


def _balanced_cluster(policy: str) -> list[str]:
    pool = nodepool().replace("WhenEmptyOrUnderutilized", policy)  # 10%: one node a pass
    small = [node(f"s{i}", "m5.large") for i in range(3)]
    small_pods = [pod(f"f{i}", f"s{i}", cpu="1900m") for i in range(3)]
    big_pods = [pod(f"w{j}", "big", cpu="900m") for j in range(6)]
    return [pool, *small, *small_pods, node("big", "m5.2xlarge"), *big_pods]


def test_balanced_policy_refuses_a_small_saving_for_a_large_disruption(tmp_path):
    # Replacing the m5.2xlarge saves little of the pool's price but moves most of its pods:
    # WhenEmptyOrUnderutilized does it, Balanced (score below 1/2) does not.
    eager = dry_run(tmp_path, *_balanced_cluster("WhenEmptyOrUnderutilized")).plan()
    assert eager.commands[0].candidates == ["big"]
    balanced = dry_run(tmp_path, *_balanced_cluster("Balanced")).plan()
    assert "big" not in {n for c in balanced.commands for n in c.candidates}
    assert reasons(balanced)["big"].startswith("Balanced policy: saving")


def test_balanced_policy_accepts_a_worthwhile_move(tmp_path):
    pool = nodepool().replace("WhenEmptyOrUnderutilized", "Balanced")
    plan = dry_run(tmp_path, pool, node("big", "m5.4xlarge"), pod("w", "big", cpu="1")).plan()
    assert [c.candidates for c in plan.commands] == [["big"]]


def test_drift_pass_index_of_types_gives_the_plain_reasons(tmp_path):
    """``drift`` indexes a NodeClass's types once per pass (``TypesByName``); each
    candidate's reason equals the one from the plain ``types_of`` list, including a type the
    NodeClass no longer offers."""
    from joiner.controllers.disruption.drift import TypesByName, drift_reason

    run = dry_run(
        tmp_path,
        nodepool(capacity_types="on-demand"),
        node("spotty", "m5.xlarge", capacity_type="spot"),
        node("fine", "m5.xlarge"),
        node("gone", "c5.large"),
        pod("w", "spotty"),
    )
    ctx, candidates = run.controller.context()
    assert len(candidates) == 3

    def types_of(node_class: str) -> list:
        return [t for t in ctx.types_of(node_class) if t.name != "c5.large"]

    indexed = TypesByName(types_of)
    reasons = {}
    for c in candidates:
        plain = drift_reason(c.claim, c.node, c.pool, types_of, ctx.cloud_drift)
        assert drift_reason(c.claim, c.node, c.pool, indexed, ctx.cloud_drift) == plain
        reasons[c.name] = plain
    assert "requirements no longer match" in reasons["spotty"]
    assert reasons["fine"] is None
    assert "c5.large is no longer offered" in reasons["gone"]


def test_drift_pass_memo_follows_every_input(tmp_path):
    """With a ``TypesByName`` (a pass), the checks before the cloud provider's are
    remembered per NodeClaim; every input changed, in place or replaced, is seen on the next
    pass: node labels and taints, the NodePool, the type list, the launch record."""
    from dataclasses import replace

    from joiner.api import labels
    from joiner.api.objects import Taint
    from joiner.controllers.disruption.drift import TypesByName, drift_reason

    run = dry_run(tmp_path, nodepool(capacity_types="on-demand"), node("n", "m5.xlarge"))
    ctx, candidates = run.controller.context()
    (c,) = candidates
    listed = ctx.types_of("default")

    def check(types_of=None) -> str | None:
        got = drift_reason(c.claim, c.node, c.pool, TypesByName(types_of or ctx.types_of))
        assert got == drift_reason(c.claim, c.node, c.pool, types_of or ctx.types_of)
        return got

    assert check() is None and check() is None
    c.node.labels[labels.CAPACITY_TYPE] = "spot"  # in place
    assert "requirements no longer match" in (check() or "")
    c.node.labels[labels.CAPACITY_TYPE] = "on-demand"
    assert check() is None
    # A type list without the node's type (a new list object).
    assert "no longer offered" in (
        check(lambda nc: [t for t in listed if t.name != "m5.xlarge"]) or ""
    )
    assert check(lambda nc: listed) is None
    # The NodePool replaced by one with a template taint the node lacks (no launch record:
    # the node's taints are compared).
    old_pool, old_record = c.pool, c.claim.launched_from
    c.claim.launched_from = None
    c.pool = replace(old_pool, taints=(Taint("team", "a", "NoSchedule"),))
    assert "taint" in (check() or "")
    c.node.taints = (*c.node.taints, Taint("team", "a", "NoSchedule"))
    assert check() is None
    c.pool, c.claim.launched_from = old_pool, old_record
    assert check() is None


def test_replacement_that_can_take_a_reservation_is_pinned_to_reserved(tmp_path):
    """Reserved capacity is priced at on-demand / 10^7, so an on-demand node whose pods fit
    a type with a free reservation is replaced by a reserved node (Karpenter's scheduler
    pins such a NodeClaim to reserved; it never falls back to a dearer spot or on-demand
    one)."""
    from joiner.api.manifests import load_files
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.reservations import CapacityReservation
    from joiner.operator.disrupt import DryRun
    from tests.controllers.disruption_fixtures import AT, NODECLASS

    path = tmp_path / "cluster.yaml"
    nodeclass = NODECLASS + "  capacityReservationSelectorTerms: [{id: cr-0a1}]\n"
    docs = [
        nodeclass,
        nodepool(capacity_types="reserved, spot, on-demand"),
        node("big", "m5.4xlarge"),
        pod("web-1", "big", cpu="1"),
    ]
    path.write_text("\n---\n".join(docs))
    dry = DryRun(load_files([path]), Catalog.load(), "us-east-1", at=AT)
    dry.cloud.reservations = (CapacityReservation("cr-0a1", "m5.xlarge", "us-east-1a"),)
    (cmd,) = dry.plan().commands
    assert [(r.instanceType, r.capacityType) for r in cmd.replacements] == [
        ("m5.xlarge", "reserved")
    ]
    assert cmd.savingsPerHour == pytest.approx(0.768, rel=1e-3)
