"""A DaemonSet whose pod template carries ``karpenter.sh/do-not-disrupt`` gives it to the
pods the simulation creates on each new node, and those pods block graceful disruption
(Karpenter ``statenode.go`` ``ValidatePodsDisruptable`` checks DaemonSet pods too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import APP, NODECLASS

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}
"""

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}ANNOTATIONS}
    spec:
      containers: [{name: a, image: a, resources: {requests: {cpu: 50m, memory: 64Mi}}}]
"""


def _run(tmp_path: Path, annotations: str) -> dict:
    ds = DAEMONSET.replace("ANNOTATIONS", annotations)
    (tmp_path / "np.yaml").write_text("---\n".join([NODEPOOL, NODECLASS, APP, ds]))
    (tmp_path / "web.csv").write_text(
        "minute,value\n" + "".join(f"{m},{9 if m < 20 else 1}\n" for m in range(60))
    )
    (tmp_path / "scenario.yaml").write_text(
        """\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: ds-keep}
spec:
  duration: 1h
  seed: 3
  manifests: [np.yaml]
  cloud:
    subnets: [{id: s-a, zone: us-east-1a, tags: {t: "1"}}]
    securityGroups: [{id: sg, tags: {t: "1"}}]
    interruptionRateMultiplier: 0
  workloads:
    - deployment: default/web
      trace: {file: web.csv, targetPerReplica: 1, min: 1, max: 9}
"""
    )
    return SimulationRuntime(load_scenario(tmp_path / "scenario.yaml")).run().summary


@pytest.mark.parametrize(
    ("annotations", "disrupted"),
    [("", True), (', annotations: {karpenter.sh/do-not-disrupt: "true"}', False)],
)
def test_daemonset_pods_do_not_disrupt_keeps_the_scaled_down_nodes(
    tmp_path, annotations, disrupted
):
    s = _run(tmp_path, annotations)
    assert len(s["nodes"]) >= 3  # nine one-vCPU pods on c5.xlarge nodes
    assert bool(s["disruptions"]["commands"]) is disrupted
    live = [n for n in s["nodes"] if n["deletedAtSeconds"] is None]
    assert (len(live) < len(s["nodes"])) is disrupted
