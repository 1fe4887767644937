"""Pods Karpenter's provisioner ignores (Karpenter pkg/controllers/provisioning/
provisioner.go ``Validate``): a required restricted label (``kubernetes.io/hostname``, a
``karpenter.sh`` or ``karpenter.k8s.aws`` label that is not well known) or
``karpenter.sh/nodepool DoesNotExist``. No NodeClaim is launched for them, in ``plan`` and
in the simulation, and the reason is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api import labels
from joiner.cli.main import app
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import NODECLASS

runner = CliRunner()


@pytest.mark.parametrize(
    ("key", "restricted"),
    [
        ("kubernetes.io/hostname", True),
        ("karpenter.sh/foo", True),
        ("karpenter.sh/initialized", True),
        ("team.karpenter.sh/x", True),
        ("karpenter.k8s.aws/ec2nodeclass", True),
        ("karpenter.sh/nodepool", False),
        ("karpenter.sh/capacity-type", False),
        ("karpenter.k8s.aws/instance-family", False),
        ("karpenter.k8s.aws/instance-tenancy", False),
        ("karpenter.sh/provisioner-name", False),
        ("karpenter.shop/x", False),
        ("example.com/team", False),
    ],
)
def test_restricted_labels_are_karpenters(key: str, restricted: bool) -> None:
    assert labels.restricted_label(key) is restricted


NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


def _pod(name: str, affinity: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{affinity}]
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def test_plan_launches_nothing_for_pods_karpenter_ignores(tmp_path: Path) -> None:
    """Regression: a pod requiring ``kubernetes.io/hostname NotIn`` (or another restricted
    label with NotIn) got a NodeClaim, which Karpenter never makes (and whose requirement
    the NodeClaim CRD would refuse); a plain pod beside them still gets one."""
    docs = [
        NODEPOOL,
        NODECLASS,
        _pod("host", "{key: kubernetes.io/hostname, operator: NotIn, values: [x]}"),
        _pod("domain", "{key: karpenter.sh/foo, operator: NotIn, values: [x]}"),
        _pod("offkarp", "{key: karpenter.sh/nodepool, operator: DoesNotExist}"),
        _pod("plain", "{key: kubernetes.io/arch, operator: In, values: [amd64]}"),
    ]
    (tmp_path / "m.yaml").write_text("---\n".join(docs))
    result = runner.invoke(app, ["plan", "-f", str(tmp_path / "m.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    placed = [p for c in plan["nodeClaims"] for p in c["pods"]]
    assert placed == ["default/plain"]
    reasons = {u["pod"]: u["reason"] for u in plan["unschedulable"]}
    assert "label kubernetes.io/hostname is restricted" in reasons["default/host"]
    assert "label karpenter.sh/foo is restricted" in reasons["default/domain"]
    assert "not to run on a Karpenter provisioned node" not in reasons["default/offkarp"]
    assert "karpenter.sh/nodepool DoesNotExist" in reasons["default/offkarp"]


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: kubernetes.io/hostname, operator: NotIn, values: [x]}]
      containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_the_simulation_provisions_nothing_for_ignored_pods(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("---\n".join([NODEPOOL, NODECLASS, DEPLOYMENT]))
    (tmp_path / "scenario.yaml").write_text(
        """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: ignored}
spec:
  duration: 10m
  seed: 1
  manifests: [m.yaml]
  cloud:
    subnets: [{id: s-a, zone: us-east-1a, tags: {t: "1"}}]
    securityGroups: [{id: sg, tags: {t: "1"}}]
"""
    )
    summary = SimulationRuntime(load_scenario(tmp_path / "scenario.yaml")).run().summary
    assert summary["nodes"] == [] or all(n["nodePool"] is None for n in summary["nodes"])
    assert summary["pods"]["pending"] == 3
    reasons = [r["reason"] for r in summary["pods"]["unschedulableReasons"]]
    assert any("ignoring pod, label kubernetes.io/hostname is restricted" in r for r in reasons)


def test_plan_places_an_ignored_pod_on_an_existing_node_as_kube_scheduler_would() -> None:
    """Regression (breaker): a pending pod pinned by hostname to an existing node with room
    was reported unschedulable; Karpenter ignores it, but kube-scheduler binds it there, and
    no NodeClaim is made."""
    dump = Path(__file__).resolve().parents[1] / "fixtures" / "ignored-pods"
    result = runner.invoke(
        app, ["plan", "-f", str(dump / "hostname-pod-fits-existing.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["nodeClaims"] == [] and plan["unschedulable"] == []
    assert plan["placements"] == [
        {
            "pod": "t/pinned-0",
            "node": "ip-10-0-1-10",
            "boundBy": "kube-scheduler",
            "onNodeClaim": False,
            "afterLaunch": False,
        }
    ]


def test_only_the_first_required_term_and_the_heaviest_preference_say_nodepool_dne(
    tmp_path: Path,
) -> None:
    """Karpenter builds the ``karpenter.sh/nodepool DoesNotExist`` check from the node
    selector, the heaviest preferred term and the first required term only
    (``NewPodRequirements``): DoesNotExist in a second required term is provisioned for;
    in the heaviest preference, ignored."""
    second = """\
apiVersion: v1
kind: Pod
metadata: {name: second, namespace: default}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
        - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
    preferred = """\
apiVersion: v1
kind: Pod
metadata: {name: preferred, namespace: default}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference: {matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}
      - weight: 50
        preference: {matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]}
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
    (tmp_path / "m.yaml").write_text("---\n".join([NODEPOOL, NODECLASS, second, preferred]))
    result = runner.invoke(app, ["plan", "-f", str(tmp_path / "m.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert [p for c in plan["nodeClaims"] for p in c["pods"]] == ["default/second"]
    (left,) = plan["unschedulable"]
    assert left["pod"] == "default/preferred" and "DoesNotExist" in left["reason"]


def test_lint_warns_about_a_workload_karpenter_never_provisions_for() -> None:
    """Regression (breaker): lint said nothing about a Deployment requiring a restricted
    label; one only avoiding Karpenter's nodes (nodepool DoesNotExist) is meant to be
    ignored and draws no warning."""
    dump = Path(__file__).resolve().parents[1] / "fixtures" / "ignored-pods" / "workloads.yaml"
    result = runner.invoke(app, ["lint", str(dump)])
    assert result.exit_code == 1, result.output
    assert "Deployment/t/mixed: field spec.template.spec: Karpenter never provisions" in (
        " ".join(result.output.split())
    )
    assert "prefer-unmanaged" not in result.output


def test_lint_takes_its_files_with_f_as_plan_does() -> None:
    """Regression (newcomer): ``joiner lint -f FILE`` was "No such option: -f"."""
    dump = Path(__file__).resolve().parents[1] / "fixtures" / "ignored-pods" / "workloads.yaml"
    with_f = runner.invoke(app, ["lint", "-f", str(dump)])
    positional = runner.invoke(app, ["lint", str(dump)])
    assert with_f.exit_code == positional.exit_code == 1
    assert with_f.output == positional.output
    none = runner.invoke(app, ["lint"])
    assert none.exit_code == 2 and "give manifest files" in none.output
