"""``joiner plan`` places a pod and the pod its required pod affinity selects in one round
when the selected pod comes later in Karpenter's queue (larger pods first): the pod that
failed is tried again after its partner is placed (Karpenter ``queue.go`` ``Queue``,
``scheduler.go`` ``Solve``). It used to stay unschedulable for the round, and, its affinity
being on the hostname, for good: the partner's node had been sized for the partner alone."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests.manifests import EC2NODECLASS

runner = CliRunner()

MANIFESTS = (
    """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
---
"""
    + EC2NODECLASS
    + """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: cache}}
              topologyKey: kubernetes.io/hostname
      containers: [{name: web, resources: {requests: {cpu: "2", memory: 1Gi}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: cache, resources: {requests: {cpu: 500m, memory: 4Gi}}}]
"""
)


def test_a_pod_and_its_later_affinity_partner_get_one_nodeclaim(tmp_path: Path) -> None:
    # web (2 CPU) comes before cache (500m) in the queue and needs cache on its node.
    path = tmp_path / "cluster.yaml"
    path.write_text(MANIFESTS)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["unschedulable"] == []
    assert [sorted(c["pods"]) for c in plan["nodeClaims"]] == [["shop/cache-1", "shop/web-1"]]
