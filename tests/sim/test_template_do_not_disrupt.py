"""A pod template's ``karpenter.sh/do-not-disrupt`` reaches the pods the simulation makes
from it: a DaemonSet's pods on each new node, which then block graceful disruption
(Karpenter ``statenode.go`` ``ValidatePodsDisruptable`` checks DaemonSet pods too), and a
Job's pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.manifests import load_text
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.clock import SimClock
from joiner.sim.scenario import load_scenario
from joiner.sim.workloads import JobController, PodFactory
from joiner.state.cluster import ClusterState
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


JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: default}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata: {annotations: {karpenter.sh/do-not-disrupt: "45m"}}
    spec:
      restartPolicy: Never
      containers: [{name: t, image: t, resources: {requests: {cpu: "1"}}}]
"""


def test_a_jobs_pods_take_its_templates_do_not_disrupt():
    """Every pod the simulation makes from a template carries the template's annotation
    (Jobs and CronJobs too, not only Deployments)."""
    (job,) = load_text(JOB, "job.yaml").workloads
    state, clock = ClusterState(), SimClock()
    factory = PodFactory(state, clock)
    JobController(
        job.key, job.template, state, clock, factory, parallelism=2, completions=2, run_for_s=60
    ).start()
    pods = list(state.pods.values())
    assert len(pods) == 2
    assert all((p.do_not_disrupt, p.do_not_disrupt_for_s) == (False, 2700.0) for p in pods)
