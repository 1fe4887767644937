"""A pod whose PersistentVolumeClaims cannot be used stays pending in a simulation, as
``joiner plan`` counts it unschedulable: neither the provisioner (Karpenter
``ValidatePersistentVolumeClaims``) nor the kube-scheduler model (its VolumeBinding
plugin) nor the Cluster Autoscaler baseline places it, and its reason is ``plan``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3-now}
provisioner: ebs.csi.aws.com
volumeBindingMode: Immediate
"""

#: Pod name -> its claim's spec: four claims no pod may use, and one it may.
CLAIMS = {
    "no-sc": "{}",
    "sc-missing": "{storageClassName: gp9}",
    "pv-missing": "{storageClassName: gp3, volumeName: pv-nope}",
    "immediate": "{storageClassName: gp3-now}",
    "usable": "{storageClassName: gp3}",
}


def _pod(name: str, claim: str) -> str:
    return f"""\
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: claim-{name}, namespace: t}}
spec: {claim}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: t}}
spec:
  volumes: [{{name: v, persistentVolumeClaim: {{claimName: claim-{name}}}}}]
  containers: [{{name: c, resources: {{requests: {{cpu: 1500m}}}}}}]
"""


#: A running node outside any NodePool with room for every pod.
BIG_NODE = """\
---
apiVersion: v1
kind: Node
metadata:
  name: big
  labels:
    node.kubernetes.io/instance-type: m5.4xlarge
    topology.kubernetes.io/zone: us-east-1a
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "15", memory: 60Gi, pods: "110"}
"""


def _write(tmp_path: Path, extra: str = "") -> Path:
    pods = "".join(_pod(n, c) for n, c in CLAIMS.items())
    (tmp_path / "m.yaml").write_text(POOL + pods + extra)
    (tmp_path / "scenario.yaml").write_text(
        """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: claims}
spec:
  region: us-east-1
  duration: 10m
  seed: 1
  manifests: [m.yaml]
  cloud:
    subnets:
      - {id: subnet-a, zone: us-east-1a, tags: {a: b}}
      - {id: subnet-b, zone: us-east-1b, tags: {a: b}}
    securityGroups: [{id: sg-1, tags: {a: b}}]
"""
    )
    return tmp_path / "scenario.yaml"


def _plan_reasons(path: Path) -> dict[str, str]:
    """``joiner plan``'s unschedulable pods (name -> reason) for the scenario's manifests."""
    result = CliRunner().invoke(app, ["plan", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    unschedulable = json.loads(result.stdout)["unschedulable"]
    return {u["pod"].split("/")[-1]: u["reason"] for u in unschedulable}


@pytest.mark.parametrize("policy", ["joiner", "cluster-autoscaler"])
def test_pods_with_unusable_claims_stay_pending_with_plans_reason(
    tmp_path: Path, policy: str
) -> None:
    path = _write(tmp_path)
    expected = _plan_reasons(path)
    assert set(expected) == {"no-sc", "sc-missing", "pv-missing", "immediate"}
    rt = SimulationRuntime(load_scenario(path), policy=policy)
    result = rt.run()
    pods = {p.name: p for p in result.state.pods.values() if not p.daemon}
    # Never bound, still pending at the end, each with the reason plan gives.
    for name, reason in expected.items():
        assert pods[name].bound_at_s is None and pods[name].pending, name
        assert pods[name].unschedulable_reason == reason, name
    assert pods["usable"].bound_at_s is not None
    # One node, for the one pod that may run (the four others launch nothing).
    assert len(result.summary["nodes"]) == 1
    assert {(r["reason"], r["pods"]) for r in result.summary["pods"]["unschedulableReasons"]} == {
        (reason, 1) for reason in expected.values()
    }
    assert result.summary["pods"]["scheduled"] == 1


def test_kube_scheduler_leaves_them_pending_on_a_node_with_room(tmp_path: Path) -> None:
    result = SimulationRuntime(load_scenario(_write(tmp_path, BIG_NODE))).run()
    where = {p.name: p.node_name for p in result.state.pods.values() if not p.daemon}
    assert where == {
        "no-sc": None,
        "sc-missing": None,
        "pv-missing": None,
        "immediate": None,
        "usable": "big",
    }
    assert not result.state.nodeclaims  # nothing launched for them either


def test_the_warning_says_the_pod_is_not_placed(tmp_path: Path) -> None:
    rt = SimulationRuntime(load_scenario(_write(tmp_path)))
    (warning,) = [w for w in rt.volume_warnings if "Pod/t/no-sc " in w]
    assert "ignored" not in warning
    assert warning.endswith(
        "PersistentVolumeClaim t/claim-no-sc is not bound and names no StorageClass; "
        "pending, it is neither provisioned for nor scheduled"
    )


NOWHERE = """\
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3-1z}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1z]}]
""" + _pod("nowhere", "{storageClassName: gp3-1z}")


def test_a_pod_whose_class_allows_no_zone_offered_has_plans_reason_naming_the_class(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, NOWHERE)
    expected = _plan_reasons(path)["nowhere"]
    assert "(StorageClass gp3-1z: topology.kubernetes.io/zone In [us-east-1z])" in expected
    result = SimulationRuntime(load_scenario(path)).run()
    (pod,) = [p for p in result.state.pods.values() if p.name == "nowhere"]
    assert pod.pending and pod.unschedulable_reason == expected
