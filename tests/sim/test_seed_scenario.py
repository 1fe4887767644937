"""The main job (`make demo`): the seed Spot example, end to end, and its reproducibility."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "examples" / "seed-spot" / "scenario.yaml"


@pytest.fixture(scope="module")
def summary():
    return SimulationRuntime(load_scenario(SCENARIO)).run().summary


def test_launches_only_what_the_defaulted_provisioner_allows(summary):
    nodes = summary["nodes"]
    assert nodes, "the Deployment needs several nodes"
    assert len(nodes) >= 3
    # c6g.xlarge is arm64 and the legacy default arch is amd64: only c5.xlarge can launch.
    assert {n["instanceType"] for n in nodes} == {"c5.xlarge"}
    assert {n["capacityType"] for n in nodes} == {"spot"}
    # subnet-123455 and subnet-123456 are declared in us-east-1a and us-east-1b.
    assert {n["zone"] for n in nodes} <= {"us-east-1a", "us-east-1b"}
    assert {n["nodePool"] for n in nodes} == {"my-provisioner"}
    assert all(n["readyAtSeconds"] is not None for n in nodes)
    assert all(n["deletedAtSeconds"] is None for n in nodes)


def test_every_pod_scheduled_none_lost(summary):
    pods = summary["pods"]
    assert pods["scheduled"] == 20
    assert pods["pending"] == 0
    assert pods["lost"] == 0
    # Batch window (1-10 s) plus boot (25-45 s): pods wait well under a minute.
    assert 25 <= pods["pendingSeconds"]["p50"] <= pods["pendingSeconds"]["max"] <= 60


def test_spot_cost_is_below_on_demand_equivalent(summary):
    cost = summary["cost"]
    assert 0 < cost["total"] < cost["onDemandEquivalent"]
    n = len(summary["nodes"])
    peak = sum(x["pricePerHour"] for x in summary["nodes"])
    assert cost["perHourPeak"] == pytest.approx(peak, abs=1e-5)
    # The on-demand equivalent prices the same node-hours at c5.xlarge's on-demand rate.
    assert cost["onDemandEquivalent"] == pytest.approx(n * 0.17 * 2, rel=1e-3)


def test_each_node_names_its_pool_and_why_price_capacity_optimized_chose_it(summary):
    """Per-zone pools have their own price and capacity score, so the fleet's choice is
    price-capacity-optimized over them, never the alphabetically first zone."""
    for n in summary["nodes"]:
        a = n["allocation"]
        assert a["strategy"] == "price-capacity-optimized"
        assert a["pool"] == f"{n['instanceType']}/{n['zone']}"
        assert a["pricePerHour"] == n["pricePerHour"]
        assert 1 <= a["capacityScore"] <= 10
        assert a["pools"] == 2  # c5.xlarge in the two zones of the subnets
        assert "price-capacity-optimized" in a["reason"] and a["pool"] in a["reason"]
    # The two pools differ in price; with both in the best-capacity band, the cheaper wins.
    rt = SimulationRuntime(load_scenario(SCENARIO))
    (c5,) = [t for t in rt.cloud.get_instance_types("default") if t.name == "c5.xlarge"]
    prices = {o.zone: o.price_per_hour for o in c5.offerings if o.capacity_type == "spot"}
    assert prices["us-east-1a"] != prices["us-east-1b"]
    cheaper = min(prices, key=prices.__getitem__)
    in_band = [
        n for n in summary["nodes"] if "lowest price of the 2 pools" in n["allocation"]["reason"]
    ]
    assert in_band and all(n["zone"] == cheaper for n in in_band)


def test_summary_warns_that_c6g_is_dead_configuration(summary):
    (warning,) = [w for w in summary["warnings"] if "c6g.xlarge" in w]
    assert "kubernetes.io/arch In [amd64]" in warning
    assert "legacy v1alpha5" in warning


def _run_in_process(out: Path, hash_seed: str) -> bytes:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "joiner.cli.main",
            "simulate",
            str(SCENARIO),
            "--out",
            str(out),
            "-q",
        ],
        check=True,
        env=env,
        cwd=REPO,
        capture_output=True,
    )
    return (out / "summary.json").read_bytes()


def test_two_processes_with_different_hash_seeds_write_identical_summaries(tmp_path):
    a = _run_in_process(tmp_path / "a", "1")
    b = _run_in_process(tmp_path / "b", "4242")
    assert a == b
    assert json.loads(a)["scenario"] == "seed-spot"


def test_a_different_seed_changes_the_run():
    sc = load_scenario(SCENARIO)
    from dataclasses import replace

    other = SimulationRuntime(replace(sc, seed=7)).run().summary
    base = SimulationRuntime(sc).run().summary
    assert [n["name"] for n in other["nodes"]] != [n["name"] for n in base["nodes"]]
