"""Static NodePools as a user meets them on the command line: the ``StaticCapacity`` gate
reaches ``joiner lint`` and ``joiner advise`` as it reaches ``plan`` (``--feature-gates`` on
both, and a Scenario's ``settings.featureGates`` in advise; before, lint could not turn the
gate on for manifests, so every static pool drew the gate-off warning and exit 1, and advise
ignored the Scenario's gate: it warned the gate was off, reported the static pool's
pods-driven overlap and counted none of its nodes); disrupt's cost line; the reason pods stay
pending when only static pools are defined."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.cli.test_static_capacity import (
    GATE,
    PINNED,
    _plan,
    _three_running,
    _write,
    static_pool,
)
from tests.controllers.disruption_fixtures import node

runner = CliRunner()

#: A Spot static pool of 3 nodes in a one-zone VPC (its gate given by ``{gate}``).
SCENARIO = """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: static-advice}}
spec:
  region: us-east-1
  duration: 10m
  manifests: [cluster.yaml]
  settings: {{featureGates: {{staticCapacity: {gate}}}}}
  cloud:
    subnets:
      - {{id: subnet-0a1, zone: us-east-1a, tags: {{karpenter.sh/discovery: demo}}}}
    securityGroups: [{{id: sg-0b2, tags: {{karpenter.sh/discovery: demo}}}}]
"""


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_lint_takes_the_static_capacity_gate(tmp_path):
    path = str(_write(tmp_path, static_pool(3)))
    code, _out, err = _invoke("lint", path)
    assert code == 1 and "StaticCapacity feature gate is off" in err
    code, _out, err = _invoke("lint", path, *GATE)
    assert code == 0, err
    assert "spec.replicas" not in err
    code, _out, err = _invoke("lint", path, "--feature-gates", "StaticCapacty=true")
    assert code == 2 and "unknown feature gate 'StaticCapacty'" in err


def _scenario(tmp_path: Path, gate: str) -> str:
    _write(tmp_path, static_pool(3).replace("[on-demand]", "[spot]"))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(gate=gate))
    return str(path)


def _advice(*args: str) -> dict:
    code, out, err = _invoke("advise", *args, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def _fixed(advice: dict) -> dict:
    (fixed,) = [p for p in advice["nodePools"] if p["name"] == "fixed"]
    return fixed


def test_advise_counts_a_static_pools_nodes_with_the_scenarios_gate(tmp_path):
    advice = _advice("-f", _scenario(tmp_path, "true"))
    assert not any("spec.replicas" in w for w in advice["warnings"])
    assert _fixed(advice)["nodes"] == 3 and _fixed(advice)["spotNodes"] == 3
    # --feature-gates overrides the Scenario's gate: off, the pool follows the (no) pods.
    off = _advice("-f", _scenario(tmp_path, "true"), "--feature-gates", "StaticCapacity=false")
    assert any("StaticCapacity feature gate is off" in w for w in off["warnings"])
    assert _fixed(off)["nodes"] == 0


def test_advise_takes_the_gate_for_manifests(tmp_path):
    path = str(_write(tmp_path, static_pool(2)))
    assert _fixed(_advice("-f", path, *GATE))["nodes"] == 2
    assert _fixed(_advice("-f", path))["nodes"] == 0


def test_disrupts_cost_line_says_what_the_static_scale_down_saves(tmp_path):
    """Regression: with a static scale-down and no command, the human line read
    ``cost: $0.2550/h -> $0.0850/h (saving $0.0000/h)``, the saving counting the commands
    only."""
    path = str(_three_running(tmp_path))
    code, out, err = _invoke("disrupt", "-f", path, *GATE)
    assert code == 0, err
    text = " ".join(out.split())
    assert (
        "cost: $0.2550/h -> $0.0850/h (commands save $0.0000/h, static scale-down $0.1700/h)"
        in text
    )


def test_pods_pending_with_only_static_pools_are_told_why(tmp_path):
    """Regression: a pending pod with only a static NodePool (gate on) was unschedulable
    because "no NodePool is defined", though one is. The pod is too large for the static
    pool's new node, so kube-scheduler cannot bind it there either."""
    too_large = PINNED.replace("cpu: 500m", "cpu: '64'")
    plan = _plan(_write(tmp_path, static_pool(1), too_large), *GATE)
    (pinned,) = plan["unschedulable"]
    assert pinned["reason"] == (
        "no NodePool launches nodes for pending pods: only static NodePools "
        "(spec.replicas: fixed) are defined, and they keep their node count whatever the "
        "pods want"
    )
    # No NodePool at all keeps the scheduler's own words.
    path = tmp_path / "bare.yaml"
    path.write_text(PINNED)
    (bare,) = _plan(path, *GATE)["unschedulable"]
    assert bare["reason"] == "no NodePool is defined"


#: A NodeClaim of the static pool not launched yet (no ``status.providerID``).
UNRESOLVED = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: waiting, labels: {karpenter.sh/nodepool: fixed}}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}]
"""


def test_disrupt_deletes_an_unlaunched_static_nodeclaim_first_as_plan_does(tmp_path):
    """Regression: a static pool one NodeClaim over its replicas, the surplus not launched:
    plan deleted it (Karpenter deletes unresolved NodeClaims first), disrupt ignored it and
    deleted nothing."""
    path = _write(
        tmp_path,
        static_pool(2),
        node("n1", "c5.large", pool="fixed"),
        node("n2", "c5.large", pool="fixed"),
        UNRESOLVED,
    )
    expected = [{"nodePool": "fixed", "nodeClaim": "waiting", "node": None}]
    assert _plan(path, *GATE)["staticDeletions"] == expected
    code, out, err = _invoke("disrupt", "-f", str(path), "-o", "json", *GATE)
    assert code == 0, err
    dry = json.loads(out)
    assert dry["staticDeletions"] == expected
    assert dry["costPerHourAfter"] == dry["costPerHourBefore"]


def test_a_dumps_drifted_condition_draws_a_not_modelled_warning(tmp_path):
    """Regression: a dump's NodeClaim with ``Drifted: True`` (which Karpenter's StaticDrift
    and Drift act on) was silently ignored: Joiner recomputes drift from the manifests."""
    drifted = UNRESOLVED.replace("name: waiting", "name: old") + (
        "status:\n  providerID: aws:///us-east-1a/i-n1\n  nodeName: n1\n"
        "  conditions: [{type: Drifted, status: 'True', reason: AMIDrift}]\n"
    )
    path = _write(tmp_path, static_pool(1), node("n1", "c5.large", pool="fixed"), drifted)
    code, out, err = _invoke("disrupt", "-f", str(path), "-o", "json", *GATE)
    assert code == 0, err
    (warning,) = [w for w in json.loads(out)["warnings"] if "Drifted" in w]
    assert warning.startswith("not modelled: status.conditions[Drifted] (Joiner works drift")
    assert warning.endswith("cluster.yaml: NodeClaim/old")


def test_plan_says_when_limits_nodes_holds_a_static_pool_short(tmp_path):
    """Regression: replicas 5 under ``limits.nodes: 2`` planned 2 NodeClaims without a word
    on the 3 missing."""
    plan = _plan(_write(tmp_path, static_pool(5, "  limits: {nodes: 2}\n")), *GATE)
    assert len(plan["staticNodeClaims"]) == 2
    (warning,) = [w for w in plan["warnings"] if "limits.nodes" in w]
    assert warning.endswith(
        "cluster.yaml: NodePool/fixed: field spec.limits.nodes: the static pool needs 5 more "
        "NodeClaims to reach spec.replicas 5, but limits.nodes 2 (counting its 0 NodeClaims) "
        "leaves room for 2"
    )
    # Within the limit: no warning.
    plan = _plan(_write(tmp_path, static_pool(2, "  limits: {nodes: 2}\n")), *GATE)
    assert not any("limits.nodes" in w for w in plan["warnings"])
