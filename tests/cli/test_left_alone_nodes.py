"""Nodes a dry run cannot take over (an instance ID another Node has, a capacity-type label
that is none of Karpenter's, a NodePool missing from the dump): ``disrupt`` says the true
cause, and ``advise`` counts each instance once and warns about what it leaves out. Inputs
from a breaker's trial (tests/fixtures/left-alone)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "left-alone"
runner = CliRunner()


def test_disrupt_gives_the_true_cause_for_a_node_it_cannot_take_over() -> None:
    """Regression: both nodes were 'instance type m5.xlarge in us-east-1a is not offered
    to NodePool web', though it is."""
    dump = FIXTURES / "duplicate-id-and-odd-capacity-type.yaml"
    args = ["disrupt", "-f", str(dump), "--at", "2025-01-02T00:00:00Z"]
    result = runner.invoke(app, [*args, "--explain", "*", "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    left = {u["node"]: u["reason"] for u in plan["unconsolidatable"]}
    assert "already backs another Node" in left["dup-2"]
    assert "capacity-type label 'SPOT' is none of" in left["upper-spot"]
    assert not any("is not offered" in r for r in left.values())
    for node in ("dup-2", "upper-spot"):
        (entry,) = plan["explain"][node]["entries"]
        assert entry["kind"] == "not-adopted" and entry["message"] == left[node]


def test_advise_counts_an_instance_once_and_names_what_it_leaves_out() -> None:
    """Regression: two Nodes with one providerID were both counted (cost doubled), and a
    Node of a NodePool missing from the dump was dropped without a word."""
    result = runner.invoke(
        app, ["advise", "-f", str(FIXTURES / "duplicate-provider-id.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (pool,) = doc["nodePools"]
    assert pool["runningNodes"] == 1 and pool["nodes"] == 1
    assert any("dup-b is left out" in w and "another Node" in w for w in doc["warnings"])
    missing = runner.invoke(
        app, ["advise", "-f", str(FIXTURES / "node-of-missing-nodepool.yaml"), "-o", "json"]
    )
    assert missing.exit_code == 0, missing.output
    warnings = json.loads(missing.stdout)["warnings"]
    assert any("orphan is left out" in w and "NodePool 'gone'" in w for w in warnings)


def test_every_node_explain_covers_is_listed_once_with_the_same_reason() -> None:
    """Regression (breaker): an unmanaged node being deleted was explained by ``--explain
    '*'`` but missing from the left-alone list."""
    dump = FIXTURES / "node-kinds.yaml"
    args = ["disrupt", "-f", str(dump), "--at", "2025-01-02T00:00:00Z", "--explain", "*"]
    result = runner.invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    left = {u["node"]: u["reason"] for u in plan["unconsolidatable"]}
    touched = {n for c in plan["commands"] for n in c["candidates"]}
    assert set(plan["explain"]) == set(left) | touched
    assert left["unmanaged-deleting"] == left["managed-deleting"] == "already being deleted"
    for node, reason in left.items():
        assert plan["explain"][node]["entries"][-1]["message"] == reason, node
