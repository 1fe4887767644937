"""A realistic EKS cluster dump (tests/fixtures/eks-cluster/dump.yaml) read by every command.

The dump: an EKS managed node group running coredns and the Karpenter controller, a Fargate
node, Karpenter nodes and NodeClaims in us-east-1a/b/c (one node being deleted, one NodeClaim
launched but not registered), pending pods (one held by a scheduling gate), PDBs, and the
EC2NodeClass status naming the cluster's three subnets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.api.manifests import load_files
from joiner.cli.main import app
from joiner.cloudprovider.catalog import Catalog
from joiner.operator.plan import build_plan
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

DUMP_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "eks-cluster"
DUMP = DUMP_DIR / "dump.yaml"
CLUSTER_ZONES = {"us-east-1a", "us-east-1b", "us-east-1c"}
STATIC = {
    "ip-192-168-12-34.ec2.internal",
    "ip-192-168-45-67.ec2.internal",
    "fargate-ip-192-168-90-12.ec2.internal",
}
runner = CliRunner()


def _moved_to(tmp_path: Path, region: str, zone_ids: tuple[str, str, str]) -> Path:
    """The same dump from another region (names, labels, providerIDs, subnets)."""
    text = DUMP.read_text()
    for old, new in zip(("use1-az6", "use1-az1", "use1-az2"), zone_ids, strict=True):
        text = text.replace(old, new)
    out = tmp_path / "dump.yaml"
    out.write_text(text.replace("us-east-1", region))
    (tmp_path / "scenario.yaml").write_text((DUMP_DIR / "scenario.yaml").read_text())
    return out


@pytest.fixture(scope="module")
def plan():
    catalog = Catalog.load()
    return build_plan(load_files([DUMP]), catalog, "us-east-1")


def test_plan_launches_only_in_the_clusters_zones(plan):
    assert plan.nodeClaims, "the 8-CPU report pod needs a new node"
    assert {c.launch.zone for c in plan.nodeClaims} <= CLUSTER_ZONES
    for c in plan.nodeClaims:
        assert c.labels["topology.kubernetes.io/zone"] in CLUSTER_ZONES


def test_plan_counts_the_unregistered_nodeclaim_and_ignores_the_gated_pod(plan):
    placed = {p.pod: p.node for p in plan.placements}
    # The two workers fit the NodeClaim launched for them: nothing is launched twice.
    assert placed["shop/worker-5b8d6c4f2-t3u4v"] == "default-t8rvd"
    assert placed["shop/worker-5b8d6c4f2-w5x6y"] == "default-t8rvd"
    launched_for = {pod for c in plan.nodeClaims for pod in c.pods}
    assert launched_for == {"shop/report-c7f9b2d4a-z9y8x"}
    # Karpenter does not provision for a gated pod; it is not placed either.
    everything = launched_for | set(placed) | {u.pod for u in plan.unschedulable}
    assert "shop/canary-gated" not in everything
    # The api pod on the node being deleted is demand, and fits an existing node.
    assert "shop/api-7d9f8c6b5-q1r2s" in placed
    # Pods running on the managed node group and Fargate are not demand.
    assert not any(p.startswith(("kube-system/", "karpenter/", "ops/")) for p in everything)


def test_plan_groups_skipped_kinds_into_one_warning(plan):
    skipped = [w for w in plan.warnings if "do not model" in w or "does not model" in w]
    assert len(skipped) == 1
    assert "3 objects" in skipped[0] and "Service/api" in skipped[0]


def test_plan_of_another_regions_dump_plans_there(tmp_path):
    dump = _moved_to(tmp_path, "us-west-2", ("usw2-az1", "usw2-az2", "usw2-az3"))
    result = runner.invoke(app, ["plan", "-f", str(dump), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["region"] == "us-west-2"
    zones = {c["launch"]["zone"] for c in out["nodeClaims"]}
    assert zones and zones <= {"us-west-2a", "us-west-2b", "us-west-2c"}


def test_a_region_the_dump_contradicts_is_refused_by_name(tmp_path):
    dump = _moved_to(tmp_path, "eu-west-1", ("euw1-az3", "euw1-az1", "euw1-az2"))
    result = runner.invoke(app, ["plan", "-f", str(dump), "--region", "us-east-1"])
    assert result.exit_code == 2
    assert "us-east-1" in result.output and "eu-west-1" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["disrupt", "-f", str(dump), "--region", "us-east-1"])
    assert result.exit_code == 2 and "eu-west-1" in result.output


def test_a_scenario_region_the_dump_contradicts_is_refused(tmp_path):
    _moved_to(tmp_path, "eu-west-1", ("euw1-az3", "euw1-az1", "euw1-az2"))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        scenario.read_text().replace("duration: 1h", "region: us-east-1\n  duration: 1h")
    )
    with pytest.raises(InputError, match="eu-west-1") as info:
        load_scenario(scenario)
    assert "spec.region" in str(info.value)


def test_a_dump_that_spans_two_regions_is_refused(tmp_path):
    west = _moved_to(tmp_path, "us-west-2", ("usw2-az1", "usw2-az2", "usw2-az3"))
    west.write_text(
        west.read_text()
        + "\n---\napiVersion: v1\nkind: Node\n"
        + "metadata:\n  name: stray\n  labels: {topology.kubernetes.io/region: us-east-1}\n"
    )
    with pytest.raises(InputError, match="more than one region"):
        load_scenario(tmp_path / "scenario.yaml")


@pytest.fixture(scope="module")
def run():
    sc = load_scenario(DUMP_DIR / "scenario.yaml")
    rt = SimulationRuntime(sc)
    return sc, rt.run()


def test_scenario_takes_region_and_vpc_from_the_dump(run):
    sc, _ = run
    assert sc.region == "us-east-1"
    assert {s.zone for s in sc.subnets} == CLUSTER_ZONES


def test_simulate_keeps_every_pod_that_ran_in_the_dump_running(run):
    sc, result = run
    state = result.state
    running_in_dump = {p.key for p in sc.manifests.pods if p.node_name and not p.terminal}
    by_key = {f"{p.namespace}/{p.name}": p for p in state.pods.values()}
    pending_at_end = [
        key
        for key in sorted(running_in_dump)
        if (pod := by_key.get(key)) is not None and pod.pending
    ]
    assert pending_at_end == []
    assert result.summary["pods"]["pending"] == 0
    # The system pods never moved: their nodes are static capacity, never disrupted.
    for key in (
        "kube-system/coredns-6d8f4b7c9-abcde",
        "karpenter/karpenter-5f7c9d8b4-k2m4n",
        "ops/log-router-84c6d9f7b-x7v2q",
    ):
        pod = by_key[key]
        assert pod.node_name in STATIC and pod.deleted_at_s is None and pod.bound_at_s == 0.0
    for name in STATIC:
        node = state.nodes[name]
        assert node.nodeclaim is None and node.deleted_at_s is None


def test_simulate_launches_only_in_the_clusters_zones_and_uses_the_inflight_claim(run):
    _, result = run
    nodes = result.summary["nodes"]
    assert {n["zone"] for n in nodes} <= CLUSTER_ZONES
    claim = result.state.nodeclaims["default-t8rvd"]
    assert claim.registered_at_s is not None  # the kubelet model registered it
    for name in ("worker-5b8d6c4f2-t3u4v", "worker-5b8d6c4f2-w5x6y"):
        (worker,) = [p for p in result.state.pods.values() if p.name == name]
        assert worker.node_name == claim.node_name  # it ran where its room was held
    # The node being deleted in the dump was drained and terminated.
    assert result.state.nodes["ip-192-168-79-104.ec2.internal"].deleted_at_s is not None


def test_disrupt_never_touches_static_nodes_and_names_them():
    result = runner.invoke(app, ["disrupt", "-f", str(DUMP), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    touched = {n for c in out["commands"] for n in c["nodes"]}
    assert not touched & STATIC
    left = {u["node"]: u["reason"] for u in out["unconsolidatable"]}
    for name in STATIC:
        assert "not managed by a NodePool" in left[name]
