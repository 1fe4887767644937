"""A zone spread counts the domains the pod's *required* node selection allows, not its
preferred node affinity (Karpenter ``scheduler.go`` ``updateCachedPodData``:
``StrictRequirements``). The regression (generated differential case gen-101-15): five
zone-spread pods preferring one zone were all put in that zone, as if the preference
narrowed the spread's domains to it; Karpenter spreads them, the preference giving way
once the skew forbids its zone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.manifests import EC2NODECLASS, nodepool

runner = CliRunner()

ZONES = "[us-east-1a, us-east-1b, us-east-1c]"
WORKLOAD = """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              preference:
                matchExpressions:
                  - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
           whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: web, resources: {requests: {cpu: 600m, memory: 1Gi}}}]
"""


def _zones(tmp_path: Path) -> Counter[str]:
    pool = nodepool(
        "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}, "
        f"{{key: topology.kubernetes.io/zone, operator: In, values: {ZONES}}}]"
    )
    f = tmp_path / "cluster.yaml"
    f.write_text(pool + "---\n" + EC2NODECLASS + WORKLOAD)
    result = runner.invoke(
        app, ["plan", "-f", str(f), "--region", "us-east-1", "-o", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["unschedulable"] == []
    pods: Counter[str] = Counter()
    for claim in plan["nodeClaims"]:
        pods[claim["launch"]["zone"]] += len(claim["pods"])
    return pods


def test_a_preferred_zone_does_not_narrow_the_spread(tmp_path: Path) -> None:
    """Five pods over three zones with maxSkew 1: 2, 2 and 1 pods, the preferred zone
    among those with two."""
    pods = _zones(tmp_path)
    assert sorted(pods.values()) == [1, 2, 2], pods
    assert pods["us-east-1b"] == 2
