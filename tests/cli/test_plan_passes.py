"""``joiner plan`` solves again what a pass left pending, with the NodeClaims it launched in
flight (``operator/plan_passes.py``), as Karpenter's provisioner requeues at once and the
pods left pending trigger its next batch. The regression: a NodePool limit met in the first
pass (each new NodeClaim charged at its largest option) left four of five zone-spread pods
pending, where Karpenter's next batches, charging each NodeClaim at the type it launched
as, launch three more (generated differential case gen-202-1)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.manifests import EC2NODECLASS, nodepool

runner = CliRunner()


def _manifests(limit: str) -> str:
    pool = nodepool("[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]")
    return (
        pool.replace("spec:\n  template:", f"spec:\n  limits: {{cpu: '{limit}'}}\n  template:")
        + "---\n"
        + EC2NODECLASS
        + """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
           whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: web, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
"""
    )


def _plan(tmp_path: Path, limit: str) -> dict:
    f = tmp_path / "cluster.yaml"
    f.write_text(_manifests(limit))
    result = runner.invoke(
        app, ["plan", "-f", str(f), "--region", "us-east-1", "-o", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    plan: dict = json.loads(result.stdout)
    return plan


def test_a_limit_met_in_one_pass_leaves_room_for_the_next(tmp_path: Path) -> None:
    """Limit 8 CPUs, m5 types: the first pass charges its NodeClaim 8 CPUs (its largest
    option, m5.2xlarge) and stops; it launches as an m5.large (2 CPUs), so the next pass
    has 6 left, and so on until the launched m5.large NodeClaims use the 8 CPUs: four
    NodeClaims, one pod each, in four zones, and one pod pending."""
    plan = _plan(tmp_path, "8")
    claims = plan["nodeClaims"]
    assert [c["launch"]["instanceType"] for c in claims] == ["m5.large"] * 4
    assert sorted(len(c["pods"]) for c in claims) == [1, 1, 1, 1]
    # Zone spread (maxSkew 1) over the region's six zones: one NodeClaim per zone.
    zones = Counter(c["launch"]["zone"] for c in claims)
    assert len(zones) == 4, zones
    assert len(plan["unschedulable"]) == 1
    assert len({c["name"] for c in claims}) == 4


def test_without_a_limit_one_pass_places_everything(tmp_path: Path) -> None:
    """A limit that is never met: the first pass launches for every pod and no second pass
    changes anything."""
    plan = _plan(tmp_path, "1000")
    assert sum(len(c["pods"]) for c in plan["nodeClaims"]) == 5
    assert plan["unschedulable"] == []
