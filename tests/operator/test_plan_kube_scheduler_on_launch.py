"""kube-scheduler binds a pod Karpenter's round left out to a new NodeClaim once it registers
(``operator/plan.py`` ``_bind_on_launch``).

The regression (generated differential case gen-2121-2, seed 2121, 2026-12-06): an anchor pod
and three pods that need it on their node (required pod affinity by hostname) with a zone
spread of maxSkew 2. Karpenter counts the spread over every zone its NodePool can launch
into, so its round put the anchor and two pods on one new node and left the third out (3 to
0). Once that node registered, kube-scheduler bound the third pod to it: its
``PodTopologySpread`` filter counts only the zones of the nodes that exist, one zone here.
Joiner reported the third pod unschedulable where the cluster runs it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from joiner.api.plan_output import Plan
from joiner.cli.main import app
from tests.manifests import deployment, on_demand_plan

REPO = Path(__file__).resolve().parents[2]

_ANCHOR = """\
      nodeSelector: {node.kubernetes.io/instance-type: c6a.xlarge}
      containers: [{name: c, resources: {requests: {cpu: 250m, memory: 128Mi}}}]
"""


def _follower(max_skew: int, cpu: str = "600m") -> str:
    return f"""\
      nodeSelector: {{node.kubernetes.io/instance-type: c6a.xlarge}}
      topologySpreadConstraints:
      - maxSkew: {max_skew}
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {{matchLabels: {{app: web}}}}
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {{matchLabels: {{app: anchor}}}}
      containers: [{{name: c, resources: {{requests: {{cpu: {cpu}, memory: 512Mi}}}}}}]
"""


def _plan(follower: str, replicas: int = 3) -> Plan:
    return on_demand_plan(
        deployment(_ANCHOR, name="anchor")
        + "---\n"
        + deployment(follower, name="web", replicas=replicas)
    )


def test_a_pod_left_out_for_zone_spread_is_bound_to_the_new_node_once_it_registers() -> None:
    plan = _plan(_follower(max_skew=2))
    assert len(plan.nodeClaims) == 1
    claim = plan.nodeClaims[0]
    assert sorted(claim.pods) == ["default/anchor-1", "default/web-1", "default/web-2"]
    later = [p for p in plan.placements if p.onNodeClaim]
    assert [(p.pod, p.node, p.boundBy) for p in later] == [
        ("default/web-3", claim.name, "kube-scheduler")
    ]
    assert plan.unschedulable == []


def test_a_pod_left_out_that_fits_no_new_node_stays_unschedulable() -> None:
    """The same spread with pods too large for the room the new node has left: kube-scheduler
    cannot bind the third either, and it stays pending (Karpenter cannot launch a second
    node for it: its affinity needs the anchor's node)."""
    plan = _plan(_follower(max_skew=2, cpu="1500m"))
    assert len(plan.nodeClaims) == 1
    assert [p for p in plan.placements if p.onNodeClaim] == []
    assert [u.pod for u in plan.unschedulable] == ["default/web-3"]


def test_without_a_pod_left_out_nothing_is_bound_later() -> None:
    plan = _plan(_follower(max_skew=3))
    assert len(plan.nodeClaims) == 1
    assert len(plan.nodeClaims[0].pods) == 4
    assert plan.placements == [] and plan.unschedulable == []


def test_the_table_and_json_show_the_pod_bound_once_the_nodeclaim_registers(
    tmp_path: Path,
) -> None:
    """The table counts the pod on its NodeClaim as ``+1`` and names it in one line; the JSON
    keeps it out of the NodeClaim's ``pods`` (Karpenter's round) and lists it as an
    ``onNodeClaim`` placement, valid against the published schema."""
    from tests.manifests import EC2NODECLASS, nodepool

    pool = nodepool("[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]")
    text = pool + "---\n" + EC2NODECLASS + "---\n" + deployment(_ANCHOR, name="anchor")
    path = tmp_path / "m.yaml"
    path.write_text(text + "---\n" + deployment(_follower(max_skew=2), name="web", replicas=3))
    table = CliRunner().invoke(app, ["plan", "-f", str(path)], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert " 3+1 " in table.output
    assert "1 pod left out of Karpenter's round is bound by kube-scheduler" in table.output
    assert "default/web-3 on general-1" in table.output
    out = CliRunner().invoke(app, ["plan", "-f", str(path), "-o", "json"])
    doc = json.loads(out.output)
    schema = json.loads((REPO / "docs" / "schemas" / "plan.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert len(doc["nodeClaims"][0]["pods"]) == 3
    assert doc["placements"] == [
        {
            "pod": "default/web-3",
            "node": "general-1",
            "boundBy": "kube-scheduler",
            "onNodeClaim": True,
        }
    ]
