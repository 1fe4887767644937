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
from tests.manifests import EC2NODECLASS, deployment, existing_node, nodepool, on_demand_plan

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
    later = {"boundBy": "kube-scheduler", "afterLaunch": True, "onNodeClaim": True}
    assert doc["placements"] == [{"pod": "default/web-3", "node": "general-1", **later}]


def _grouped(name: str, replicas: int) -> str:
    """A Deployment ``name`` of the group ``grp: x`` that needs the anchor's node and
    spreads the group over zones (maxSkew 2): with two replicas before it, its pod is
    left out by Karpenter's round and bound once the anchor's node registers."""
    return deployment(
        _follower(max_skew=2).replace("{app: web}", "{grp: x}"), name=name, replicas=replicas
    ).replace(f"labels: {{app: {name}}}", f"labels: {{app: {name}, grp: x}}")


def _needs_g(topology_key: str) -> str:
    """A Deployment ``f`` whose pod needs a pod of ``g`` in its ``topology_key`` domain."""
    return deployment(
        f"""\
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: {topology_key}
            labelSelector: {{matchLabels: {{app: g}}}}
      containers: [{{name: c, resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}}}]
""",
        name="f",
    )


def _plan_with_f(topology_key: str, extra: str = "") -> Plan:
    """The anchor, ``f`` (created before ``g``), two replicas of ``web`` and one of ``g``."""
    return on_demand_plan(
        extra
        + deployment(_ANCHOR, name="anchor")
        + "---\n"
        + _needs_g(topology_key)
        + "---\n"
        + _grouped("web", 2)
        + "---\n"
        + _grouped("g", 1)
    )


def test_a_pod_that_needs_a_pod_bound_on_launch_is_bound_after_it() -> None:
    """``f`` needs ``g`` on its node; Karpenter's round finds no ``g`` and leaves ``f`` out,
    and kube-scheduler, trying ``f`` first, finds none either. Binding ``g`` to the new
    node is an assigned pod added, on which kube-scheduler tries ``f`` again: it follows
    ``g`` there. Joiner tried each pod once and reported ``f`` unschedulable."""
    plan = _plan_with_f("kubernetes.io/hostname")
    assert len(plan.nodeClaims) == 1
    claim = plan.nodeClaims[0].name
    later = [(p.pod, p.node, p.onNodeClaim, p.afterLaunch) for p in plan.placements]
    assert later == [
        ("default/g-1", claim, True, True),
        ("default/f-1", claim, True, True),
    ]
    assert plan.unschedulable == []


def test_a_pod_bound_on_launch_to_an_existing_node_is_placed_not_unschedulable() -> None:
    """``f`` needs ``g`` in its zone; once ``g`` is bound to the new node in zone a,
    kube-scheduler binds ``f`` to the emptier existing node of zone a. Joiner dropped a
    binding to an existing node and reported ``f`` unschedulable."""
    old = existing_node("{cpu: 1900m, memory: 7Gi, pods: '29'}", zone="us-east-1a")
    plan = _plan_with_f("topology.kubernetes.io/zone", extra=old + "---\n")
    assert len(plan.nodeClaims) == 1
    claim = plan.nodeClaims[0]
    assert claim.launch.zone == "us-east-1a"
    later = [(p.pod, p.node, p.onNodeClaim, p.afterLaunch) for p in plan.placements]
    assert later == [
        ("default/g-1", claim.name, True, True),
        ("default/f-1", "old", False, True),
    ]
    assert plan.unschedulable == []


def test_pods_only_a_static_pool_serves_are_bound_to_its_new_nodeclaims() -> None:
    """Karpenter's provisioner leaves static NodePools out, so a pod only a static pool
    serves is left out of its round; once the static pool's new NodeClaims register,
    kube-scheduler binds it there. Joiner reported the pods unschedulable ("they keep their
    node count whatever the pods want") beside the two NodeClaims they run on."""
    from joiner.api.featuregates import FeatureGates
    from joiner.api.manifests import load_text
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.plan import build_plan

    fixed = nodepool(
        "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}, "
        "{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]",
        name="fixed",
    ).replace("spec:\n  template:", "spec:\n  replicas: 2\n  template:")
    web = deployment(
        """\
      nodeSelector: {karpenter.sh/nodepool: fixed}
      containers: [{name: c, resources: {requests: {cpu: 700m, memory: 128Mi}}}]
""",
        replicas=5,
    )
    text = fixed + "---\n" + EC2NODECLASS + "---\n" + web
    plan = build_plan(
        load_text(text),
        Catalog.load(),
        "us-east-1",
        feature_gates=FeatureGates(static_capacity=True),
    )
    assert plan.nodeClaims == [] and len(plan.staticNodeClaims) == 2
    names = {c.name for c in plan.staticNodeClaims}
    bound = [p for p in plan.placements if p.afterLaunch and p.onNodeClaim]
    assert len(bound) == 4 and {p.node for p in bound} == names  # two 700m on each m5.large
    assert [u.pod for u in plan.unschedulable] == ["default/web-5"]


def _with_old_node_in_b(follower: str) -> Plan:
    """``_plan(follower)`` beside an existing m5.large with room in zone b."""
    old = existing_node("{cpu: 1900m, memory: 7Gi, pods: '29'}", zone="us-east-1b")
    return on_demand_plan(
        old
        + "---\n"
        + deployment(_ANCHOR, name="anchor")
        + "---\n"
        + deployment(follower, name="web", replicas=3)
    )


def test_a_zone_whose_nodes_the_pods_node_selector_refuses_is_no_spread_domain() -> None:
    """kube-scheduler counts a spread over the nodes its inclusion policies keep, each node
    judged whole: with ``nodeAffinityPolicy: Honor`` (the default) the m5.large of zone b
    fails the pods' c6a.xlarge node selector, so zone b is no domain and the third pod
    binds to the new node (1 zone, no skew). Joiner judged the zone value alone (the pods
    allow zone b) and kept zone b, 3 to 0: unschedulable."""
    plan = _with_old_node_in_b(_follower(max_skew=2))
    (claim,) = plan.nodeClaims
    assert [(p.pod, p.node) for p in plan.placements if p.onNodeClaim] == [
        ("default/web-3", claim.name)
    ]
    assert plan.unschedulable == []
    # Ignore counts every node's zone, zone b included: 3 to 0, as before
    ignore = _follower(max_skew=2).replace(
        "      - maxSkew: 2\n", "      - maxSkew: 2\n        nodeAffinityPolicy: Ignore\n"
    )
    plan = _with_old_node_in_b(ignore)
    assert [p for p in plan.placements if p.afterLaunch] == []
    assert [u.pod for u in plan.unschedulable] == ["default/web-3"]
