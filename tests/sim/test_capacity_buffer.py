"""Karpenter's CapacityBuffer (``autoscaling.x-k8s.io/v1beta1``) in the simulation."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.operator.wiring import SimulationRuntime
from joiner.scheduling import Scheduler, SchedulingInput
from joiner.sim.scenario import load_scenario
from joiner.state.snapshot import pod_requests, ready_nodes
from tests.sim.step_scenario import SEED, step_scenario

BUFFER = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: spare, namespace: default}
template:
  metadata: {labels: {app: spare}}
  spec:
    nodeSelector: {type: my-provisioner}
    containers:
      - name: pause
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: "1", memory: 1536Mi}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: spare, namespace: default}
spec:
  podTemplateRef: {name: spare}
  replicas: 3
"""


def _scenario(tmp_path: Path, gate: bool) -> Path:
    settings = "{featureGates: {capacityBuffer: true}}" if gate else ""
    return step_scenario(tmp_path, "buffer.yaml", BUFFER, settings)


def _room_for_three(rt: SimulationRuntime) -> bool:
    (buffer,) = rt.scenario.manifests.capacitybuffers
    pods = rt.provisioner.buffers.virtual_pods() if rt.provisioner.buffers else []
    if not pods:
        from joiner.controllers.provisioning.buffers import Buffers

        pods = Buffers([buffer], lambda _k: 0).virtual_pods()
    existing, bound = ready_nodes(rt.state)
    result = Scheduler().solve(
        SchedulingInput(
            pods=pod_requests(rt.state, pods),
            existing=tuple(existing),
            bound_pods=tuple(bound),
            mode="kube-scheduler",
        )
    )
    return len(pods) == 3 and not result.unschedulable


def test_a_capacity_buffer_keeps_its_spare_capacity_after_real_pods_land(tmp_path):
    rt = SimulationRuntime(load_scenario(_scenario(tmp_path, gate=True)))
    summary = rt.run().summary
    late = [p for p in rt.state.pods.values() if p.owner == "default/web" and p.created_at_s >= 600]
    assert len(late) == 3
    # The buffer's room takes the three new pods at once ...
    assert all(p.bound_at_s == p.created_at_s for p in late)
    # ... and Karpenter launches at once to keep room for three more, which is there at the end.
    launched = [c for c in rt.state.nodeclaims.values() if c.created_at_s >= 600]
    assert launched and min(c.created_at_s for c in launched) <= 601.0
    assert all(not c.nominated for c in launched)  # only virtual pods asked for it
    assert _room_for_three(rt)
    # Virtual pods never run, never count as pods, and the spare nodes are not consolidated.
    assert not any(p.owner.startswith("CapacityBuffer/") for p in rt.state.pods.values())
    assert summary["pods"]["pending"] == 0
    assert not any("CapacityBuffer" in w for w in summary["warnings"])


def test_without_the_feature_gate_buffers_are_ignored_with_a_warning(tmp_path):
    rt = SimulationRuntime(load_scenario(_scenario(tmp_path, gate=False)))
    summary = rt.run().summary
    assert any("CapacityBuffer feature gate" in w for w in summary["warnings"])
    late = [p for p in rt.state.pods.values() if p.owner == "default/web" and p.created_at_s >= 600]
    assert any(p.bound_at_s is not None and p.bound_at_s - p.created_at_s > 20 for p in late)


PERCENT_OF_WEB = """\
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: pct, namespace: default}
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 15
  limits: {cpu: "2"}
"""


def test_buffer_size_follows_karpenter_compute_replicas():
    deployment = (SEED / "deployment.yaml").read_text()
    pct = PERCENT_OF_WEB
    (b,) = load_text(deployment + pct).capacitybuffers
    assert b.template is not None and b.template.priority == -(2**31)
    assert b.workload == "default/web"
    assert b.desired(20) == 2  # ceil(20 * 15%) = 3, capped by limits cpu 2 / 1 vCPU
    assert b.desired(5) == 1  # ceil(0.75) = 1
    assert b.desired(0) == 2  # neither count applies: limits alone
    bad = pct.replace("percentage: 15", "percentage: 15\n  podTemplateRef: {name: x}")
    with pytest.raises(InputError, match="not both"):
        load_text(deployment + bad)
    missing = load_text(BUFFER.split("---\n")[1])
    assert missing.capacitybuffers[0].template is None
    assert any("PodTemplate default/spare is not in the manifests" in w for w in missing.warnings)


def test_a_huge_buffer_is_refused_or_capped_not_simulated_pod_by_pod():
    """Regression (breaker): ``replicas: 2147483647`` built a pod per replica every pass."""
    from joiner.api.manifests.capacitybuffer import MAX_BUFFER_PODS
    from joiner.controllers.provisioning.buffers import Buffers

    with pytest.raises(InputError, match=r"spec.replicas"):
        load_text(BUFFER.replace("replicas: 3", "replicas: 2147483647"))
    deployment = (SEED / "deployment.yaml").read_text()
    pct = PERCENT_OF_WEB.replace("percentage: 15", "percentage: 100000").replace(
        '  limits: {cpu: "2"}\n', ""
    )
    (b,) = load_text(deployment + pct).capacitybuffers
    assert b.desired(20) == 20_000
    buffers = Buffers([b], lambda _k: 20)
    assert len(buffers.virtual_pods()) == MAX_BUFFER_PODS
    assert buffers.capped == {("default", "pct")}  # warned once, in the log
