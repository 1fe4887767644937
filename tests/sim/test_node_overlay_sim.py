"""NodeOverlays in the simulation (Karpenter's ``NodeOverlay`` gate): the overlaid price
steers the launch and the bill stays the catalog's; a capacity overlay reaches the Node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario
from tests.sim.test_baseline import APP, _write

GPU_APP = APP.replace("memory: 1Gi}", "memory: 1Gi, example.com/gpu: 1}")

OVERLAYS = """\
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: m5-discount}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]
  price: "0.01"
  capacity: {example.com/gpu: "4"}
"""


def _run(tmp_path: Path, *, gate: bool, app: str = APP) -> tuple[SimulationRuntime, dict[str, Any]]:
    gates = f"  settings:\n    featureGates: {{nodeOverlay: {str(gate).lower()}}}\n"
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}",
        extra_spec=gates,
        duration="30m",
        capacity="on-demand",
        app=app + OVERLAYS,
    )
    rt = SimulationRuntime(load_scenario(path))
    return rt, rt.run().summary


def test_the_overlaid_price_chooses_the_type_and_the_catalog_price_is_billed(tmp_path):
    _, off = _run(tmp_path / "off", gate=False)
    assert [n["instanceType"] for n in off["nodes"]] == ["c5.xlarge"]
    assert any("enable the NodeOverlay feature gate" in w for w in off["warnings"])
    _, on = _run(tmp_path / "on", gate=True)
    assert [n["instanceType"] for n in on["nodes"]] == ["m5.xlarge"]
    # The run's cost is m5.xlarge's on-demand price (0.192/h), not the overlay's 0.01.
    assert on["nodes"][0]["pricePerHour"] == 0.192
    assert not any("NodeOverlay" in w for w in on["warnings"])


def test_a_capacity_overlay_gives_the_simulated_node_the_extended_resource(tmp_path):
    rt, s = _run(tmp_path, gate=True, app=GPU_APP)
    assert s["pods"]["scheduled"] == 1
    (node,) = rt.state.nodes.values()
    assert node.allocatable["example.com/gpu"] == 4
    _, off = _run(tmp_path / "off", gate=False, app=GPU_APP)
    assert off["pods"]["scheduled"] == 0 and off["nodes"] == []


def test_a_spot_launch_with_an_overlaid_price_asks_for_the_prioritized_strategy(tmp_path):
    # Karpenter-AWS: capacity-optimized-prioritized, each override's priority its overlaid
    # price; the instance is billed at its Spot pool's price, not the overlay's.
    gates = "  settings:\n    featureGates: {nodeOverlay: true}\n"
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}",
        extra_spec=gates,
        duration="30m",
        capacity="spot",
        types="m5.xlarge",
        app=APP + OVERLAYS,
    )
    rt = SimulationRuntime(load_scenario(path))
    s = rt.run().summary
    (claim,) = [c for c in rt.state.nodeclaims.values() if c.instance is not None]
    assert claim.instance is not None and claim.instance.allocation is not None
    assert claim.instance.allocation.strategy == "capacity-optimized-prioritized"
    offering = claim.instance.offering
    assert offering.price_per_hour == 0.01
    (node,) = s["nodes"]
    assert node["pricePerHour"] == round(offering.cost_per_hour, 6) > 0.02
    assert node["allocation"]["pricePerHour"] == node["pricePerHour"]


def test_a_conflicting_overlay_is_named_in_the_summary_s_warnings(tmp_path):
    twin = OVERLAYS.replace("name: m5-discount", "name: another").replace(
        'price: "0.01"', 'price: "0.02"'
    )
    gates = "  settings:\n    featureGates: {nodeOverlay: true}\n"
    path = _write(
        tmp_path,
        workloads="    - {deployment: default/web, replicas: 1}",
        extra_spec=gates,
        duration="10m",
        capacity="on-demand",
        app=APP + OVERLAYS + twin,
    )
    s = SimulationRuntime(load_scenario(path)).run().summary
    conflicts = [w for w in s["warnings"] if "conflicts with another overlay" in w]
    assert len(conflicts) == 1 and "NodeOverlay/another" in conflicts[0]
    assert [n["instanceType"] for n in s["nodes"]] == ["m5.xlarge"]
