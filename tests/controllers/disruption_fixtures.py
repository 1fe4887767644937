"""Running clusters written as manifests, for the disruption tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import load_files
from joiner.cloudprovider.catalog import Catalog
from joiner.operator.disrupt import DryRun
from tests.manifests import EC2NODECLASS

AT = datetime(2025, 1, 7, 21, 0, tzinfo=UTC)  # a Tuesday evening

NODECLASS = "\n" + EC2NODECLASS


def nodepool(
    name: str = "general",
    *,
    capacity_types: str = "on-demand",
    requirements: str = (
        "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}\n"
        '        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}\n'
    ),
    disruption: str = "",
    labels: str = "",
    extra_spec: str = "",
) -> str:
    """A v1 NodePool; ``disruption`` is YAML under spec.disruption (indented 4)."""
    meta_labels = f"    metadata:\n      labels: {{{labels}}}\n" if labels else ""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
{meta_labels}    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
{extra_spec}      requirements:
        - {{key: karpenter.sh/capacity-type, operator: In, values: [{capacity_types}]}}
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
{requirements}  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
{disruption}"""


def node(
    name: str,
    instance_type: str,
    *,
    pool: str = "general",
    zone: str = "us-east-1a",
    capacity_type: str = "on-demand",
    labels: str = "",
    annotations: str = "",
) -> str:
    """A Node of ``pool`` (allocatable from the catalog)."""
    ann = f"  annotations: {{{annotations}}}\n" if annotations else ""
    extra = f"    {labels}\n" if labels else ""
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
{ann}  labels:
    karpenter.sh/nodepool: {pool}
    karpenter.sh/capacity-type: {capacity_type}
    node.kubernetes.io/instance-type: {instance_type}
    topology.kubernetes.io/zone: {zone}
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
{extra}spec:
  providerID: aws:///{zone}/i-{name}
"""


def pod(
    name: str,
    node_name: str,
    *,
    cpu: str = "500m",
    memory: str = "1Gi",
    app: str = "web",
    namespace: str = "default",
    annotations: str = "",
) -> str:
    """A running Pod on ``node_name``."""
    ann = f", annotations: {{{annotations}}}" if annotations else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}, labels: {{app: {app}}}{ann}}}
spec:
  nodeName: {node_name}
  containers: [{{name: main, resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}}}]
"""


def pdb(name: str, app: str, *, min_available: int, namespace: str = "default") -> str:
    """A PodDisruptionBudget with ``minAvailable``."""
    return f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{minAvailable: {min_available}, selector: {{matchLabels: {{app: {app}}}}}}}
"""


def dry_run(
    tmp_path: Path, *docs: str, gates: FeatureGates | None = None, at: datetime = AT
) -> DryRun:
    """Write ``docs`` (plus the default EC2NodeClass) and read them as a running cluster."""
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join([NODECLASS, *docs]))
    return DryRun(load_files([path]), Catalog.load(), "us-east-1", at=at, feature_gates=gates)
