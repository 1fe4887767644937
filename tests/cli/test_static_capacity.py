"""Static NodePools (``spec.replicas``, Karpenter's alpha ``StaticCapacity`` gate) in
``joiner plan`` and ``joiner disrupt``: written as a user would, with and without the gate,
and the NodePool CRD's rules on static pools."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.cli.test_upstream_fidelity import pool
from tests.controllers.disruption_fixtures import node, pod
from tests.manifests import EC2NODECLASS

runner = CliRunner()
GATE = ("--feature-gates", "StaticCapacity=true")

#: On-demand m5.large ($0.096/h) or c5.large ($0.085/h) in one zone: c5.large is cheaper.
REQUIREMENTS = """\
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
"""


def static_pool(replicas: int, extra: str = "") -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: fixed}}
spec:
  replicas: {replicas}
{extra}  template:
    metadata: {{labels: {{tier: fixed}}}}
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
{REQUIREMENTS}"""


#: A dynamic pool whose nodes lack the static pool's ``tier: fixed`` label.
DYNAMIC = pool("general", REQUIREMENTS.split("\n", 1)[1]).removeprefix("\n---\n")


#: One pending pod that only the static pool's nodes (``tier: fixed``) can take.
PINNED = """
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeSelector: {tier: fixed}
  containers: [{name: app, image: nginx, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""


def _write(tmp_path: Path, *docs: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join([EC2NODECLASS, *docs]))
    return path


def _plan(path: Path, *args: str) -> dict:
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_static_pool_gets_its_replicas_of_the_cheapest_type(tmp_path):
    plan = _plan(_write(tmp_path, static_pool(3)), *GATE)
    static = plan["staticNodeClaims"]
    assert [c["name"] for c in static] == ["fixed-1", "fixed-2", "fixed-3"]
    assert {c["launch"]["instanceType"] for c in static} == {"c5.large"}
    assert all(c["pods"] == [] and c["nodePool"] == "fixed" for c in static)
    # Every type the pool allows is offered to the launch, not narrowed by pods.
    assert static[0]["instanceTypes"] == ["c5.large", "m5.large"]
    assert plan["nodeClaims"] == [] and plan["costPerHour"] == 0
    assert plan["staticCostPerHour"] == round(3 * static[0]["launch"]["pricePerHour"], 6)
    assert not any("spec.replicas" in w for w in plan["warnings"])


def test_the_human_plan_lists_the_static_nodeclaims_apart(tmp_path):
    result = runner.invoke(app, ["plan", "-f", str(_write(tmp_path, static_pool(2))), *GATE])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "no new NodeClaims" in text
    assert "Static NodePools (spec.replicas): 2 NodeClaims" in text and "static capacity:" in text


def test_node_limit_caps_the_static_pool(tmp_path):
    plan = _plan(_write(tmp_path, static_pool(3, "  limits: {nodes: 2}\n")), *GATE)
    assert len(plan["staticNodeClaims"]) == 2


def test_a_pending_pod_never_gets_a_static_pools_new_nodeclaim(tmp_path):
    """Karpenter's round plans nothing for the pod (no NodeClaim, none of the static
    pool's); kube-scheduler binds it to the static pool's new NodeClaim once that
    registers (``Placement.afterLaunch``)."""
    plan = _plan(_write(tmp_path, static_pool(1), DYNAMIC, PINNED), *GATE)
    assert plan["nodeClaims"] == []
    (static,) = plan["staticNodeClaims"]
    assert static["pods"] == []
    assert plan["unschedulable"] == []
    assert plan["placements"] == [
        {
            "pod": "default/pinned",
            "node": static["name"],
            "boundBy": "kube-scheduler",
            "onNodeClaim": True,
            "afterLaunch": True,
        }
    ]


def test_gate_off_keeps_the_warning_and_provisions_the_pool_for_pods(tmp_path):
    plan = _plan(_write(tmp_path, static_pool(3), PINNED))
    assert plan["staticNodeClaims"] == [] and plan["staticDeletions"] == []
    (claim,) = plan["nodeClaims"]
    assert claim["nodePool"] == "fixed" and claim["pods"] == ["default/pinned"]
    (warning,) = [w for w in plan["warnings"] if "spec.replicas" in w]
    assert "NodePool/fixed" in warning and "StaticCapacity feature gate is off" in warning
    assert "--feature-gates StaticCapacity=true" in warning


def _refused(tmp_path: Path, extra: str) -> str:
    result = runner.invoke(app, ["plan", "-f", str(_write(tmp_path, static_pool(2, extra)))])
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def test_the_crds_rules_on_static_pools_are_enforced(tmp_path):
    limits = _refused(tmp_path, "  limits: {cpu: '8', nodes: 3}\n")
    assert "cluster.yaml" in limits and "NodePool/fixed" in limits
    assert "spec.limits.cpu" in limits and "only 'limits.nodes' is supported" in limits
    weight = _refused(tmp_path, "  weight: 10\n")
    assert "NodePool/fixed" in weight and "spec.weight" in weight
    assert "'weight' is not supported on static NodePools" in weight
    path = _write(tmp_path, static_pool(-1))
    result = runner.invoke(app, ["plan", "-f", str(path)])
    assert result.exit_code == 2 and "spec.replicas" in " ".join(result.output.split())


def test_a_static_pool_beyond_the_simulation_limit_is_refused_at_once(tmp_path):
    """``replicas: 1000000`` planned its NodeClaims one by one for minutes (int64 2^40
    never ended); a ``limits.nodes`` within the limit keeps such a pool plannable."""
    path = _write(tmp_path, static_pool(1_000_000))
    for command in ("plan", "disrupt", "advise"):
        result = runner.invoke(app, [command, "-f", str(path), *GATE])
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "cluster.yaml" in text and "NodePool/fixed" in text and "spec.replicas" in text
        assert "1,000,000 is above Joiner's simulation limit of 10,000 NodeClaims" in text
    plan = _plan(_write(tmp_path, static_pool(2**40, "  limits: {nodes: 2}\n")), *GATE)
    assert len(plan["staticNodeClaims"]) == 2


NODES = ("busy", "guarded", "idle")


def _three_running(tmp_path: Path) -> Path:
    """Three nodes of a pool scaled to 1: ``busy`` runs a pod, ``idle`` none, ``guarded`` a
    do-not-disrupt pod."""
    return _write(
        tmp_path,
        static_pool(1),
        *(node(n, "c5.large", pool="fixed", labels="tier: fixed") for n in NODES),
        pod("web", "busy", cpu="100m"),
        pod("job", "guarded", cpu="100m", annotations='karpenter.sh/do-not-disrupt: "true"'),
    )


def test_scale_down_deletes_the_surplus_in_upstream_order(tmp_path):
    path = _three_running(tmp_path)
    plan = _plan(path, *GATE)
    # Empty first, then the others with do-not-disrupt last.
    assert [(d["nodeClaim"], d["node"]) for d in plan["staticDeletions"]] == [
        ("idle", "idle"),
        ("busy", "busy"),
    ]
    assert plan["staticNodeClaims"] == []
    result = runner.invoke(app, ["disrupt", "-f", str(path), "-o", "json", *GATE])
    assert result.exit_code == 0, result.output
    dry = json.loads(result.stdout)
    assert [d["node"] for d in dry["staticDeletions"]] == ["idle", "busy"]
    assert dry["costPerHourAfter"] < dry["costPerHourBefore"]
    # The node kept is left alone by consolidation and emptiness: its pool is static.
    (kept,) = [u for u in dry["unconsolidatable"] if u["node"] == "guarded"]
    assert "NodePool fixed is static (spec.replicas)" in kept["reason"]


def test_a_static_pool_is_no_overlap_nor_unused_pool_with_the_gate_on(tmp_path):
    """Pods never launch a static pool's nodes: ``joiner lint``'s checks between pools leave
    it out with the gate on, and see the dynamic pool Joiner makes of it with the gate off."""
    overlapping = pool("general", REQUIREMENTS).removeprefix("\n---\n")
    path = _write(tmp_path, static_pool(1), overlapping, PINNED)
    on = _plan(path, *GATE)["warnings"]
    assert not any("overlaps" in w for w in on)
    off = _plan(path)["warnings"]
    assert any("NodePool/general" in w and "overlaps NodePool/fixed" in w for w in off)
