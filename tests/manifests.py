"""Manifest text, and Pod documents as kube-scheduler leaves them, that several tests share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from joiner.api.plan_output import Plan

#: The condition kube-scheduler sets on a pod it tried and found no room for.
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def unschedulable(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` (a Pod document, changed in place and returned) as kube-scheduler leaves
    one it tried and found no room for: ``Pending`` with the ``PodScheduled`` condition of
    reason ``Unschedulable``, the pods Karpenter provisions for (``FailedToSchedule``) and
    controller mode counts as demand."""
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    kept = [c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"]
    status["conditions"] = [*kept, dict(UNSCHEDULABLE)]
    return pod


def ec2nodeclass(
    subnets: str = "{tags: {karpenter.sh/discovery: demo}}",
    groups: str | None = None,
    role: str = "NodeRole",
) -> str:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass named ``default`` (AL2023) whose subnet and
    security-group selector terms are the flow-style ``subnets`` and ``groups`` (``groups``
    defaults to ``subnets``)."""
    return f"""\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: default}}
spec:
  role: {role}
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{subnets}]
  securityGroupSelectorTerms: [{groups or subnets}]
"""


#: Selecting by the ``karpenter.sh/discovery: demo`` tag (planning needs no VPC).
EC2NODECLASS = ec2nodeclass()


def nodepool(requirements: str, name: str = "general") -> str:
    """A ``karpenter.sh/v1`` NodePool ``name`` on the EC2NodeClass ``default`` whose
    template requirements are the flow-style list ``requirements``."""
    return f"""\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements: {requirements}
"""


def deployment(
    pod_spec: str, name: str = "web", replicas: int = 1, namespace: str = "default"
) -> str:
    """An ``apps/v1`` Deployment ``namespace/name`` (label ``app: <name>``) whose pod spec
    is the block ``pod_spec``, indented as the template's ``spec:`` children (six spaces)."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{pod_spec}"""


def daemonset(pod_spec: str, name: str = "agent", namespace: str = "kube-system") -> str:
    """An ``apps/v1`` DaemonSet ``namespace/name`` (label ``app: <name>``) whose pod spec is
    the block ``pod_spec``, indented as the template's ``spec:`` children (six spaces)."""
    return f"""\
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{pod_spec}"""


def existing_node(allocatable: str, name: str = "old", zone: str = "us-east-1a") -> str:
    """A ``v1`` Node ``name`` of NodePool ``general`` (an on-demand m5.large in ``zone``,
    initialized) whose ``status.allocatable`` is the flow-style mapping ``allocatable``."""
    return f"""\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/initialized: 'true'
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.large
    topology.kubernetes.io/zone: {zone}
    kubernetes.io/hostname: {name}
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
spec:
  providerID: aws:///{zone}/i-{name}
status:
  allocatable: {allocatable}
"""


def on_demand_plan(body: str) -> Plan:
    """``joiner plan`` (us-east-1, the packaged catalog) of the on-demand NodePool
    ``general``, the EC2NodeClass ``default`` and ``body`` (YAML documents, the first
    without its leading ``---``)."""
    from joiner.api.manifests import load_text
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.plan import build_plan

    pool = nodepool("[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]")
    text = pool + "---\n" + EC2NODECLASS + "---\n" + body
    return build_plan(load_text(text), Catalog.load(), "us-east-1")
