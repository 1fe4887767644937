"""The simulated kube-scheduler tries a pod it left pending again when kube-scheduler's
queue would (Kubernetes ``pkg/scheduler/backend/queue/scheduling_queue.go``).

The failing input of the first test: web (2 CPU, required hostname pod affinity to cache)
and cache (500m), planned onto one NodeClaim. When the node was Ready, the pass went in
creation order: web failed (cache not bound yet), then cache was bound; nothing started
another pass, and web stayed pending for the whole run."""

from __future__ import annotations

from pathlib import Path

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.kube_scheduler import FLUSH_UNSCHEDULABLE_EVERY_S, MAX_IN_UNSCHEDULABLE_S
from joiner.sim.scenario import load_scenario
from joiner.state.cluster import Pod
from tests.cli.test_plan_affinity_in_one_batch import MANIFESTS
from tests.manifests import EC2NODECLASS, ec2nodeclass

NODECLASS = ec2nodeclass('{tags: {t: "1"}}')


def _scenario(tmp_path: Path, manifests: str, duration: str, workloads: str = "") -> Path:
    (tmp_path / "m.yaml").write_text(manifests.replace(EC2NODECLASS, NODECLASS))
    (tmp_path / "scenario.yaml").write_text(
        f"""\
apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {{name: t}}
spec:
  duration: {duration}
  seed: 3
  manifests: [m.yaml]
  cloud:
    subnets:
      - {{id: s-a, zone: us-east-1a, tags: {{t: "1"}}}}
    securityGroups: [{{id: sg, tags: {{t: "1"}}}}]
    interruptionRateMultiplier: 0
{workloads}"""
    )
    return tmp_path / "scenario.yaml"


def _run(path: Path) -> SimulationRuntime:
    rt = SimulationRuntime(load_scenario(path))
    rt.run()
    return rt


def _pod(rt: SimulationRuntime, name: str) -> Pod:
    return next(p for p in rt.state.pods.values() if p.name == name)


def test_a_pod_waiting_for_its_affinity_partner_is_bound_right_after_it(tmp_path):
    rt = _run(_scenario(tmp_path, MANIFESTS, "5m"))
    web, cache = _pod(rt, "web-1"), _pod(rt, "cache-2")
    assert cache.bound_at_s is not None
    assert web.bound_at_s is not None, "web stayed pending"
    assert web.node_name == cache.node_name
    # Requeued by cache's binding and tried at once (the backoff queue is popped when the
    # active queue is empty), not at a periodic flush minutes later.
    assert web.bound_at_s - cache.bound_at_s < 2.0


#: One m5.xlarge at most (the NodePool's CPU limit): three 1-CPU "busy" pods (two after
#: minute 10, by their trace) and "late" (1.5 CPU), which fits only once a busy pod is gone.
LIMITED = f"""\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: general}}
spec:
  limits: {{cpu: "4"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
---
{NODECLASS}---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: busy, namespace: default}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: busy}}}}
  template:
    metadata: {{labels: {{app: busy}}}}
    spec:
      containers: [{{name: busy, resources: {{requests: {{cpu: "1"}}}}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: late, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: late}}}}
  template:
    metadata: {{labels: {{app: late}}}}
    spec:
      containers: [{{name: late, resources: {{requests: {{cpu: 1500m}}}}}}]
"""


def test_an_unschedulable_pod_is_tried_again_within_the_flush_period(tmp_path):
    trace = tmp_path / "busy.csv"
    trace.write_text(
        "minute,value\n" + "".join(f"{m},{300 if m < 10 else 200}\n" for m in range(20))
    )
    workloads = (
        "  workloads:\n"
        f"    - deployment: default/busy\n      trace: {{file: {trace}, targetPerReplica: 100,"
        " min: 1, max: 3}\n"
    )
    rt = _run(_scenario(tmp_path, LIMITED, "20m", workloads))
    assert len(rt.state.nodes) == 1
    busy = [p for p in rt.state.pods.values() if p.owner == "default/busy"]
    freed_s = min(p.deleted_at_s for p in busy if p.deleted_at_s is not None)
    assert freed_s == 600.0
    late = _pod(rt, "late-4")
    # Nothing kicks a pass when a pod is deleted: the pod waits for the flush of pods
    # unschedulable longer than five minutes, checked every 30 s.
    assert late.bound_at_s is not None, "late stayed pending"
    assert (
        freed_s < late.bound_at_s <= freed_s + MAX_IN_UNSCHEDULABLE_S + FLUSH_UNSCHEDULABLE_EVERY_S
    )
    assert late.bound_at_s % FLUSH_UNSCHEDULABLE_EVERY_S == 0.0
