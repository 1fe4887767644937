"""``joiner plan`` over a running cluster's manifests, validated against its JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from tests.manifests import EC2NODECLASS, deployment

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "plan.schema.json").read_text())
runner = CliRunner()

CLUSTER = (
    """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  limits: {cpu: "64"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}
---
"""
    + EC2NODECLASS
    + """---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-1
  labels:
    karpenter.sh/nodepool: general
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    node.kubernetes.io/instance-type: m5.xlarge
    kubernetes.io/hostname: ip-10-0-0-1
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-2
  deletionTimestamp: "2026-11-29T10:00:00Z"
  labels:
    karpenter.sh/nodepool: general
    topology.kubernetes.io/zone: us-east-1b
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: ip-10-0-0-2
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 4
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-running, namespace: shop, labels: {app: api}}
spec:
  nodeName: ip-10-0-0-1
  containers: [{name: api, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api-evicting, namespace: shop, labels: {app: api}}
spec:
  nodeName: ip-10-0-0-2
  containers: [{name: api, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: gpu-job, namespace: ml}
spec:
  containers: [{name: train, resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}}}]
"""
)


def _plan(tmp_path: Path, text: str, *extra: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return runner.invoke(app, ["plan", "-f", str(path), "-o", "json", *extra])


def test_plan_reads_a_running_cluster(tmp_path):
    result = _plan(tmp_path, CLUSTER)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    jsonschema.validate(plan, SCHEMA)
    placed = {p["pod"]: p["node"] for p in plan["placements"]}
    new_pods = [p for c in plan["nodeClaims"] for p in c["pods"]]
    # 4 replicas, 2 listed as Pods: 2 more named after the Deployment; the pod on the
    # deleting node is demand too. The running node has room for 2 more 1-vCPU pods.
    demand = {"shop/api-1", "shop/api-2", "shop/api-evicting"}
    assert set(placed) | set(new_pods) == demand
    assert set(placed.values()) == {"ip-10-0-0-1"}
    assert "ip-10-0-0-2" not in placed.values()
    (gpu,) = plan["unschedulable"]
    assert gpu["pod"] == "ml/gpu-job"
    assert "nvidia.com/gpu" in gpu["reason"] and "NodePool general" in gpu["reason"]
    for claim in plan["nodeClaims"]:
        assert (
            claim["launch"]["instanceType"] == claim["instanceTypes"][0]
            or claim["launch"]["instanceType"] in claim["instanceTypes"]
        )
        assert len(claim["instanceTypes"]) <= 60
        assert claim["labels"]["karpenter.sh/nodepool"] == "general"
        assert claim["labels"]["topology.kubernetes.io/zone"] == claim["launch"]["zone"]
    assert plan["costPerHour"] == pytest.approx(
        sum(c["launch"]["pricePerHour"] for c in plan["nodeClaims"])
    )


def test_limit_counts_existing_nodes(tmp_path):
    text = CLUSTER.replace('limits: {cpu: "64"}', 'limits: {cpu: "9"}').replace(
        "replicas: 4", "replicas: 12"
    )
    plan = json.loads(_plan(tmp_path, text).stdout)
    # Two 4-vCPU nodes already count against cpu=9: new NodeClaims may add at most 1 vCPU of
    # capacity, which no type has, so the overflow is unschedulable, naming the limit.
    reasons = " ".join(u["reason"] for u in plan["unschedulable"])
    assert not plan["nodeClaims"]
    assert "the NodePool's limits leave" in reasons


def test_plan_table_and_seed(tmp_path):
    result = runner.invoke(
        app,
        [
            "plan",
            "-f",
            str(SEED / "provisioner.yaml"),
            "-f",
            str(SEED / "awsnodetemplate.yaml"),
            "-f",
            str(SEED / "deployment.yaml"),
        ],
    )
    assert result.exit_code == 0
    assert "7 NodeClaims" in result.stdout and "c5.xlarge" in result.stdout


def test_plan_with_scenario_uses_its_subnets():
    result = runner.invoke(app, ["plan", "-f", str(SEED / "scenario.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    jsonschema.validate(plan, SCHEMA)
    assert {c["launch"]["zone"] for c in plan["nodeClaims"]} <= {"us-east-1a", "us-east-1b"}
    assert not any("not known here" in w for w in plan["warnings"])


def test_plan_bad_input_exits_2(tmp_path):
    result = _plan(tmp_path, CLUSTER.replace("replicas: 4", "replicas: four"))
    assert result.exit_code == 2
    assert "Deployment/api: field spec.replicas" in " ".join(result.output.split())


def test_min_values_policy_flag(tmp_path):
    text = CLUSTER.replace(
        "        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}",
        "        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}\n"
        "        - {key: node.kubernetes.io/instance-type, operator: In,\n"
        "           values: [m5.large, c5.large], minValues: 2}",
    ).replace('cpu: "1", memory: 1Gi', 'cpu: "1", memory: 5Gi')
    strict = json.loads(_plan(tmp_path, text).stdout)
    relaxed = json.loads(_plan(tmp_path, text, "--min-values-policy", "BestEffort").stdout)
    assert any("minValues 2" in u["reason"] for u in strict["unschedulable"])
    assert len(relaxed["nodeClaims"]) > len(strict["nodeClaims"])


def _deployment(name: str, replicas: int, cpu: str, memory: str) -> str:
    containers = f"[{{name: c, resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}}}]"
    return "\n" + deployment(f"      containers: {containers}\n", name, replicas, "shop")


# CLUSTER's NodePool without limits, on-demand, c/m/r; its EC2NodeClass; CPU-heavy and
# memory-heavy Deployments.
def _packing(crunch: int, cache: int) -> str:
    return "---".join(
        [
            CLUSTER.split("---")[0]
            .replace('  limits: {cpu: "64"}\n', "")
            .replace("values: [spot, on-demand]", "values: [on-demand]")
            .replace("values: [c, m]", "values: [c, m, r]"),
            CLUSTER.split("---")[1],
            _deployment("crunch", crunch, "1500m", "256Mi"),
            _deployment("cache", cache, "250m", "6Gi"),
        ]
    )


#: 120 pods (a small launch, ``solver.COMPARE_UP_TO``) and 1,020 pods (a large one).
PACKING = _packing(100, 20)
PACKING_LARGE = _packing(850, 170)


def test_plan_packing_cost_optimal_buys_less_and_places_every_pod(tmp_path):
    # Karpenter packs the CPU-heavy pods first into NodeClaims that grow to the largest
    # type; the cost-optimal packing buys smaller types that the pods fill.
    karpenter = json.loads(_plan(tmp_path, PACKING_LARGE).stdout)
    cheap_run = _plan(tmp_path, PACKING_LARGE, "--packing", "cost-optimal")
    assert cheap_run.exit_code == 0, cheap_run.output
    cheap = json.loads(cheap_run.stdout)
    jsonschema.validate(cheap, SCHEMA)
    assert not cheap["unschedulable"] and not karpenter["unschedulable"]
    placed = sorted(p for c in cheap["nodeClaims"] for p in c["pods"])
    assert placed == sorted(p for c in karpenter["nodeClaims"] for p in c["pods"])
    assert len(placed) == 1020
    assert cheap["costPerHour"] < 0.8 * karpenter["costPerHour"]
    explicit = json.loads(_plan(tmp_path, PACKING_LARGE, "--packing", "karpenter").stdout)
    assert explicit["costPerHour"] == karpenter["costPerHour"]


def test_plan_packing_cost_optimal_keeps_karpenters_fewer_nodeclaims_on_small_launches(
    tmp_path,
):
    """120 pods: Karpenter's one c6a.48xlarge ($7.34/h) against three NodeClaims ($5.44/h);
    on a launch of up to 1,000 pods a cheaper plan with more NodeClaims is not taken for a
    saving under half (more nodes to empty and consolidate later;
    docs/concepts/how-joiner-decides.md, "Packing"), so both plans are the same."""
    karpenter = json.loads(_plan(tmp_path, PACKING).stdout)
    cheap = json.loads(_plan(tmp_path, PACKING, "--packing", "cost-optimal").stdout)
    assert len(karpenter["nodeClaims"]) == 1
    assert cheap["costPerHour"] == karpenter["costPerHour"]
    assert cheap["nodeClaims"] == karpenter["nodeClaims"]


GPU_SERVING = REPO / "examples" / "gpu-serving"


def _gpu_burst(tmp_path: Path, replicas: int) -> Path:
    """examples/gpu-serving with its diffusion Deployment (1 GPU, 3 vCPU, 12 GiB a pod) at
    ``replicas``: the burst its HPA asks for when traffic jumps."""
    for name in ("scenario.yaml", "nodepools.yaml", "traffic.csv"):
        (tmp_path / name).write_text((GPU_SERVING / name).read_text())
    app = (GPU_SERVING / "app.yaml").read_text()
    head = "metadata: {name: diffusion, namespace: genai}\nspec:\n  replicas: 2\n"
    assert head in app
    (tmp_path / "app.yaml").write_text(app.replace(head, head.replace("2", str(replicas))))
    return tmp_path / "scenario.yaml"


def _gpu_claims(plan: dict) -> list[dict]:
    return [c for c in plan["nodeClaims"] if c["nodePool"] == "gpu"]


def test_plan_packing_cost_optimal_does_not_buy_a_metal_gpu_node_for_a_burst(tmp_path):
    """Seven one-GPU pods of examples/gpu-serving: Karpenter packs them into one NodeClaim
    whose options are the 8-GPU types (Karpenter ``Scheduler.addToInflightNode``; the AWS
    provider's ``ExoticInstanceTypeFilter`` keeps metal because every option has a GPU) and
    launches a Spot g4dn.metal; with SpotToSpotConsolidation off that node is never replaced
    by a cheaper one, and over a 22 h day it was most of the cost. The cost-optimal packing
    used to keep that plan (a cheaper plan with more NodeClaims was never taken on a small
    launch); seven g4dn.xlarge cost about a third, so it now takes them."""
    scenario = str(_gpu_burst(tmp_path, 7))
    runs = {
        p: runner.invoke(app, ["plan", "-f", scenario, "-o", "json", "--packing", p])
        for p in ("karpenter", "cost-optimal")
    }
    for result in runs.values():
        assert result.exit_code == 0, result.output
    karpenter, cheap = (json.loads(runs[p].stdout) for p in ("karpenter", "cost-optimal"))
    jsonschema.validate(cheap, SCHEMA)
    (metal,) = _gpu_claims(karpenter)
    assert metal["launch"]["instanceType"] == "g4dn.metal"
    assert len(metal["pods"]) == 7
    claims = _gpu_claims(cheap)
    assert [c["launch"]["instanceType"] for c in claims] == ["g4dn.xlarge"] * 7
    assert sorted(p for c in claims for p in c["pods"]) == sorted(metal["pods"])
    assert not cheap["unschedulable"]

    def gpu_price(plan: dict) -> float:
        return sum(c["launch"]["pricePerHour"] for c in _gpu_claims(plan))

    assert gpu_price(cheap) < 0.5 * gpu_price(karpenter)
    assert cheap["costPerHour"] < 0.5 * karpenter["costPerHour"]


def test_plan_packing_rejects_unknown_policies(tmp_path):
    result = _plan(tmp_path, PACKING, "--packing", "first-fit")
    assert result.exit_code == 2
    assert "first-fit" in result.output


def test_plan_names_static_capacity_and_gated_pods_as_disrupt_and_simulate_do():
    """A dump's Nodes outside any NodePool and its gated pods draw the same warnings in
    ``plan`` as in ``disrupt`` and ``simulate`` (``api.manifests.cluster_notes``)."""
    from typer.testing import CliRunner

    from joiner.cli.main import app

    dump = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "eks-cluster" / "dump.yaml"
    result = CliRunner().invoke(app, ["plan", "-f", str(dump), "-o", "json"])
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert any("outside any NodePool" in w and "static capacity" in w for w in warnings)
    assert any("held by spec.schedulingGates" in w and "shop/canary-gated" in w for w in warnings)
