"""Issue 19: fields Joiner accepts behave as upstream (Karpenter, kube-scheduler). Each test
is a manifest as a user writes it, run through ``joiner plan`` or ``joiner lint``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from tests import manifests
from tests.manifests import EC2NODECLASS

runner = CliRunner()

NODECLASS = "\n" + EC2NODECLASS


def pool(name: str, requirements: str, extra: str = "") -> str:
    return f"""
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
{requirements}{extra}
"""


GENERAL = pool(
    "general",
    "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}\n"
    "        - {key: topology.kubernetes.io/zone, operator: In,"
    " values: [us-east-1a, us-east-1b]}\n",
)


def deployment(name: str, replicas: int, pod_spec: str, cpu: str = "500m") -> str:
    containers = f"""\
      containers:
        - name: app
          image: nginx
          resources: {{requests: {{cpu: {cpu}, memory: 512Mi}}}}
"""
    return "\n---\n" + manifests.deployment(pod_spec + containers, name, replicas)


def plan(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "manifests.yaml"
    path.write_text(NODECLASS + text)
    result = runner.invoke(app, ["plan", "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def lint(tmp_path: Path, text: str):
    path = tmp_path / "manifests.yaml"
    path.write_text(NODECLASS + text)
    return runner.invoke(app, ["lint", str(path)])


def pods_planned(p: dict) -> int:
    return sum(len(c["pods"]) for c in p["nodeClaims"]) + len(p["placements"])


# -- topology spread nodeTaintsPolicy ---------------------------------------------------------

GPU_POOL = pool(
    "gpu",
    "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}\n",
    "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n",
)


def _zone_spread(policy: str) -> str:
    return (
        "      topologySpreadConstraints:\n"
        "        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, "
        "whenUnsatisfiable: DoNotSchedule, "
        f"labelSelector: {{matchLabels: {{app: web}}}}{policy}}}\n"
    )


def test_node_taints_policy_honor_ignores_a_tainted_pools_zone(tmp_path):
    honored = plan(
        tmp_path,
        GENERAL + GPU_POOL + deployment("web", 6, _zone_spread(", nodeTaintsPolicy: Honor")),
    )
    assert honored["unschedulable"] == [] and pods_planned(honored) == 6
    zones = sorted(c["labels"]["topology.kubernetes.io/zone"] for c in honored["nodeClaims"])
    assert set(zones) == {"us-east-1a", "us-east-1b"}
    # The default (Ignore) counts the tainted pool's empty zone: kube-scheduler and Karpenter
    # then keep one pod per usable zone and the rest pending.
    ignored = plan(tmp_path, GENERAL + GPU_POOL + deployment("web", 6, _zone_spread("")))
    assert len(ignored["unschedulable"]) == 4


# -- DaemonSet host ports ---------------------------------------------------------------------

NODE_EXPORTER = """
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-exporter, namespace: monitoring}
spec:
  selector: {matchLabels: {app: node-exporter}}
  template:
    metadata: {labels: {app: node-exporter}}
    spec:
      containers:
        - name: node-exporter
          image: prom/node-exporter
          ports: [{containerPort: 9100, hostPort: 9100}]
          resources: {requests: {cpu: 100m, memory: 64Mi}}
"""


def test_daemonset_host_ports_are_reserved_on_new_nodeclaims(tmp_path):
    wants_9100 = deployment(
        "exporter",
        1,
        "",
    ).replace(
        "          resources:",
        "          ports: [{containerPort: 9100, hostPort: 9100}]\n          resources:",
    )
    p = plan(tmp_path, GENERAL + NODE_EXPORTER + wants_9100)
    assert p["nodeClaims"] == []
    assert "DaemonSet" in p["unschedulable"][0]["reason"]
    other_port = wants_9100.replace("hostPort: 9100", "hostPort: 9200")
    assert plan(tmp_path, GENERAL + NODE_EXPORTER + other_port)["unschedulable"] == []


# -- anti-affinity on a key no node carries ---------------------------------------------------


def test_anti_affinity_on_a_key_no_node_carries_does_not_block(tmp_path):
    anti = (
        "      affinity:\n        podAntiAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            - {topologyKey: example.com/rack, "
        "labelSelector: {matchLabels: {app: web}}}\n"
    )
    p = plan(tmp_path, GENERAL + deployment("web", 3, anti))
    assert p["unschedulable"] == [] and pods_planned(p) == 3
    # kube-scheduler requires the key for affinity and spread: those still fail.
    spread = (
        "      topologySpreadConstraints:\n"
        "        - {maxSkew: 1, topologyKey: example.com/rack, whenUnsatisfiable: DoNotSchedule,"
        " labelSelector: {matchLabels: {app: web}}}\n"
    )
    assert len(plan(tmp_path, GENERAL + deployment("web", 3, spread))["unschedulable"]) == 3


# -- hostname spread over existing nodes ------------------------------------------------------


def _node(name: str) -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{karpenter.sh/nodepool: general, topology.kubernetes.io/zone: us-east-1a,
           kubernetes.io/arch: amd64, kubernetes.io/os: linux, kubernetes.io/hostname: {name},
           node.kubernetes.io/instance-type: m5.xlarge, karpenter.sh/capacity-type: spot}}
status:
  capacity: {{cpu: "4", memory: 16Gi, pods: "58"}}
  allocatable: {{cpu: 3920m, memory: 14Gi, pods: "58"}}
"""


def _running(name: str, node: str) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: web}}}}
spec:
  nodeName: {node}
  containers:
    - {{name: app, image: nginx, resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}}}
status: {{phase: Running}}
"""


def test_hostname_spread_binds_to_an_existing_node_within_max_skew(tmp_path):
    spread = (
        "      topologySpreadConstraints:\n"
        "        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, "
        "whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n"
    )
    text = (
        GENERAL
        + _node("n1")
        + _node("n2")
        + _running("web-0", "n1")
        + _running("web-1", "n2")
        + deployment("web", 3, spread)
    )
    p = plan(tmp_path, text)
    # kube-scheduler: min over n1, n2 is 1, so 1 + 1 - 1 <= maxSkew on either: no new node.
    assert p["nodeClaims"] == [] and len(p["placements"]) == 1
    # Four replicas: n1 and n2 take one each (skew stays 1), none needs a new node yet.
    p4 = plan(tmp_path, text.replace("replicas: 3", "replicas: 4"))
    assert p4["nodeClaims"] == [] and len(p4["placements"]) == 2


# -- minValues on keys with several values per instance type ----------------------------------


def test_min_values_count_every_value_of_capacity_type_and_zone(tmp_path):
    mv = pool(
        "diverse",
        "        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand],"
        " minValues: 2}\n"
        "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a,"
        " us-east-1b, us-east-1c], minValues: 3}\n"
        "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}\n",
    )
    p = plan(tmp_path, mv + deployment("web", 2, ""))
    assert p["unschedulable"] == [] and pods_planned(p) == 2
    assert lint(tmp_path, mv + deployment("web", 2, "")).exit_code == 0


def test_lint_warns_when_min_values_cannot_be_met(tmp_path):
    mv = pool(
        "narrow",
        "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, m6g],"
        " minValues: 2}\n"
        "        - {key: kubernetes.io/arch, operator: In, values: [arm64]}\n",
    )
    result = lint(tmp_path, mv + deployment("web", 1, ""))
    assert result.exit_code == 1
    assert "minValues 2" in result.output and "instance-family" in result.output
    assert len(plan(tmp_path, mv + deployment("web", 1, ""))["unschedulable"]) == 1


# -- karpenter.sh/nodepool requirement --------------------------------------------------------


def test_nodepool_requirement_excluding_the_pool_itself(tmp_path):
    self_excluding = pool(
        "general",
        "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}\n"
        "        - {key: karpenter.sh/nodepool, operator: NotIn, values: [general]}\n",
    )
    p = plan(tmp_path, self_excluding + deployment("web", 1, ""))
    assert p["nodeClaims"] == []
    assert "karpenter.sh/nodepool" in p["unschedulable"][0]["reason"]
    result = lint(tmp_path, self_excluding + deployment("web", 1, ""))
    assert result.exit_code == 1 and "karpenter.sh/nodepool" in result.output


# -- RuntimeClass overhead --------------------------------------------------------------------

KATA = """
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 500m, memory: 160Mi}}
scheduling:
  nodeSelector: {karpenter.k8s.aws/instance-family: m5}
"""


def test_runtime_class_overhead_and_scheduling_apply_to_template_pods(tmp_path):
    # 3.5 CPUs fit an m5.xlarge (3.92 allocatable); with the 0.5 CPU overhead they do not.
    kata = deployment("sandboxed", 1, "      runtimeClassName: kata\n", cpu="3500m")
    # The RuntimeClass comes after the Deployment in the file, as kubectl allows.
    p = plan(tmp_path, GENERAL + kata + KATA)
    (claim,) = p["nodeClaims"]
    assert all(t.startswith("m5.") for t in claim["instanceTypes"])
    assert "m5.xlarge" not in claim["instanceTypes"]
    plain = plan(tmp_path, GENERAL + kata.replace("      runtimeClassName: kata\n", ""))
    types = plain["nodeClaims"][0]["instanceTypes"]
    assert "m5.xlarge" in types and not all(t.startswith("m5.") for t in types)
    (tmp_path / "manifests.yaml").write_text(NODECLASS + GENERAL + kata)
    missing = runner.invoke(app, ["plan", "-f", str(tmp_path / "manifests.yaml")])
    assert "names no RuntimeClass" in missing.output


# -- NodeOverlay and static NodePools ---------------------------------------------------------


def test_node_overlay_and_static_replicas_are_accepted_with_a_warning(tmp_path):
    overlay = """
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: discount}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
  priceAdjustment: "-10%"
"""
    static = GENERAL.replace("spec:\n  template:", "spec:\n  replicas: 3\n  template:")
    (tmp_path / "manifests.yaml").write_text(
        NODECLASS + static + overlay + deployment("web", 1, "")
    )
    result = runner.invoke(app, ["plan", "-f", str(tmp_path / "manifests.yaml")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "NodeOverlay is not modelled" in text and "spec.priceAdjustment" in text
    assert "spec.replicas" in text and "not modelled" in text
