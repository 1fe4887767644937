"""Disruption of static NodePools' nodes (Karpenter's ``StaticCapacity`` gate): emptiness
and consolidation leave them alone, Drift leaves them to StaticDrift, which replaces a
drifted one with a NodeClaim of the pool's template (karpenter
``pkg/controllers/disruption``: ``emptiness.go``, ``consolidation.go``, ``drift.go``,
``staticdrift.go``)."""

from __future__ import annotations

from joiner.api.featuregates import FeatureGates
from joiner.controllers.disruption.command import Command, Context
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod

ON = FeatureGates(static_capacity=True)


def static(replicas: int, **kwargs: str) -> str:
    return nodepool(**kwargs).replace(
        "spec:\n  template:", f"spec:\n  replicas: {replicas}\n  template:", 1
    )


def test_an_empty_static_node_is_neither_emptied_nor_consolidated(tmp_path):
    docs = (static(2), node("empty", "m5.4xlarge"), node("busy", "m5.4xlarge"), pod("w", "busy"))
    on = dry_run(tmp_path, *docs, gates=ON).plan()
    assert on.commands == [] and on.staticDeletions == []
    reasons = {u.node: u.reason for u in on.unconsolidatable}
    assert "NodePool general is static (spec.replicas)" in reasons["empty"]
    assert "NodePool general is static (spec.replicas)" in reasons["busy"]
    # Gate off: the same pool is a dynamic one, and its empty node goes.
    off = dry_run(tmp_path, *docs).plan()
    assert "empty" in {c for cmd in off.commands for c in cmd.candidates}
    assert any("StaticCapacity feature gate is off" in w for w in off.warnings)


def _drift_pass(tmp_path, pool: str, *extra: str) -> tuple[Command | None, Context]:
    """One pass over ``pool`` with a node ``ok`` carrying its ``team: payments`` label and
    a node ``drifted`` without it (and ``extra`` documents)."""
    run = dry_run(
        tmp_path,
        pool,
        node("ok", "m5.xlarge", labels="team: payments"),
        node("drifted", "m5.xlarge"),
        *extra,
        gates=ON,
    )
    return run.controller.compute(elapsed=True)


def test_a_drifted_static_node_is_replaced_one_for_one(tmp_path):
    command, _ctx = _drift_pass(tmp_path, static(2, labels="team: payments"), pod("w", "drifted"))
    assert command is not None and command.method == "Drift"
    assert command.names == ["drifted"]
    (rep,) = command.replacements
    # The pool's template: no pods, every type the pool allows.
    assert rep.new.pods == () and rep.new.nodepool == "general"
    assert len(rep.instance_types) > 1
    assert "template label team=payments is not on the node" in (
        command.candidates[0].drifted or ""
    )


def test_static_drift_waits_while_the_pool_runs_over_its_replicas(tmp_path):
    command, ctx = _drift_pass(tmp_path, static(1, labels="team: payments"))
    assert command is None
    assert "runs more nodes than spec.replicas: its scale-down comes first" in (
        ctx.reasons["drifted"].message()
    )


def test_static_drift_keeps_to_the_node_limit(tmp_path):
    pool = static(2, labels="team: payments").replace(
        "  disruption:", "  limits: {nodes: 2}\n  disruption:", 1
    )
    command, ctx = _drift_pass(tmp_path, pool)
    assert command is None
    assert "limits.nodes leaves no room for a replacement" in ctx.reasons["drifted"].message()


def test_the_dry_run_leaves_a_static_drift_candidates_pods_pending(tmp_path):
    run = dry_run(
        tmp_path,
        static(2, labels="team: payments"),
        node("ok", "m5.xlarge", labels="team: payments"),
        node("drifted", "m5.xlarge"),
        pod("w", "drifted"),
        gates=ON,
    )
    plan = run.plan()
    assert [(c.method, c.candidates) for c in plan.commands] == [("Drift", ["drifted"])]
    (w,) = [p for p in run.state.pods.values() if p.name == "w"]
    assert w.node_name is None and w.deleted_at_s is None
