"""Shared helpers of the history tests: an in-memory series source and a small cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joiner.history.queries import BY_NAME
from joiner.history.series import Series

#: 2025-01-06T00:00:00Z, the ranges' start in these tests.
T0 = 1736121600.0


class MemorySource:
    """A ``SeriesSource`` answering each query name from a dict (missing: no series);
    records the PromQL it was asked, to check it is the catalog's."""

    def __init__(self, answers: Mapping[str, list[Series]]) -> None:
        unknown = set(answers) - set(BY_NAME)
        assert not unknown, unknown
        self.answers = answers
        self.asked: list[tuple[str, str]] = []
        self.steps: dict[str, float | None] = {}

    def fetch(self, name: str, promql: str, step_s: float | None = None) -> list[Series]:
        self.asked.append((name, promql))
        self.steps[name] = step_s
        return list(self.answers.get(name, []))


def series(labels: Mapping[str, str], points: Sequence[tuple[float, float]]) -> Series:
    """A series from (seconds after T0, value) points."""
    return Series(
        dict(labels), tuple(T0 + t for t, _ in points), tuple(float(v) for _, v in points)
    )


def flat(
    labels: Mapping[str, str], value: float, start: float, end: float, step: float = 60.0
) -> Series:
    """A constant series sampled every ``step`` from ``start`` to ``end`` (seconds after T0)."""
    n = int((end - start) // step) + 1
    return series(labels, [(start + i * step, value) for i in range(n)])


CLUSTER = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop}
  spec:
    replicas: 3
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        initContainers:
          - name: mesh
            image: mesh:1
            restartPolicy: Always
            resources: {requests: {cpu: 100m, memory: 64Mi}}
        containers:
          - name: web
            image: web:1
            resources: {requests: {cpu: 500m, memory: 1Gi}}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: shop}
  spec:
    replicas: 2
    serviceName: db
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec:
        containers:
          - name: db
            image: db:1
            resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 4Gi}}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: loner, namespace: shop}
  spec:
    replicas: 1
    selector: {matchLabels: {app: loner}}
    template:
      metadata: {labels: {app: loner}}
      spec:
        containers:
          - name: loner
            image: loner:1
            resources: {requests: {cpu: 250m, memory: 256Mi}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: idle, namespace: shop}
  spec:
    replicas: 1
    selector: {matchLabels: {app: idle}}
    template:
      metadata: {labels: {app: idle}}
      spec:
        containers:
          - name: idle
            image: idle:1
            resources: {requests: {cpu: 100m, memory: 128Mi}}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: backfill, namespace: batch}
  spec:
    parallelism: 2
    template:
      spec:
        restartPolicy: Never
        containers:
          - name: backfill
            image: backfill:1
            resources: {requests: {cpu: "2", memory: 4Gi}}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: old-migration, namespace: batch}
  spec:
    template:
      spec:
        restartPolicy: Never
        containers:
          - name: m
            image: m:1
            resources: {requests: {cpu: 100m, memory: 128Mi}}
- apiVersion: batch/v1
  kind: CronJob
  metadata: {name: nightly, namespace: batch}
  spec:
    schedule: "30 * * * *"
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: OnFailure
            containers:
              - name: report
                image: report:1
                resources: {requests: {cpu: "1", memory: 1Gi}}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: shop}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
    minReplicas: 2
    maxReplicas: 20
    metrics:
      - type: Resource
        resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
- apiVersion: v1
  kind: Node
  metadata:
    name: ip-10-0-0-1.ec2.internal
    labels: {node.kubernetes.io/instance-type: m5.large, topology.kubernetes.io/zone: us-east-1a}
  spec: {providerID: "aws:///us-east-1a/i-0123"}
  status:
    allocatable: {cpu: 1930m, memory: 7Gi, pods: "29"}
    capacity: {cpu: "2", memory: 8Gi, pods: "29"}
"""


def joined(*parts: Series) -> Series:
    """One series from parts with the same labels (a value that changed over time)."""
    return Series(
        parts[0].labels,
        tuple(t for p in parts for t in p.times_s),
        tuple(v for p in parts for v in p.values),
    )
