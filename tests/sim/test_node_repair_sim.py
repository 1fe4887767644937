"""Node repair in the simulation (``settings.featureGates.nodeRepair``): a node whose node
monitoring agent condition fails is replaced after its toleration; an AZ outage that takes
every node of the NodePool is not repaired (more than 20 % unhealthy); gate off, nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from joiner.api.featuregates import FeatureGates
from joiner.faults.template import parse_template
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
OUTAGE = {
    "description": "AZ outage",
    "roleArn": "arn:aws:iam::123456789012:role/fis",
    "actions": {
        "cut": {
            "actionId": "aws:network:disrupt-connectivity",
            "parameters": {"duration": "PT10M"},
            "targets": {"Subnets": "az"},
        }
    },
    "targets": {
        "az": {
            "resourceType": "aws:ec2:subnet",
            "resourceArns": ["arn:aws:ec2:us-east-1:123456789012:subnet/subnet-123456"],
            "selectionMode": "ALL",
        }
    },
}


@pytest.fixture(scope="module")
def seed():
    return load_scenario(SEED / "scenario.yaml")


def _runtime(seed, gate: bool, **tolerations: float) -> SimulationRuntime:
    return SimulationRuntime(
        replace(
            seed,
            duration_s=3000.0,
            feature_gates=FeatureGates(node_repair=gate),
            repair_tolerations_s=tuple(sorted(tolerations.items())),
        )
    )


def _kernel_fault(rt: SimulationRuntime, at_s: float) -> list[str]:
    """At ``at_s`` the node monitoring agent reports KernelReady False on the first node."""
    hit: list[str] = []

    def fail() -> None:
        node = min(
            (n for n in rt.state.nodes.values() if n.deleted_at_s is None), key=lambda n: n.name
        )
        node.set_condition("KernelReady", "False", rt.clock.now())
        hit.append(node.name)

    rt.clock.at(at_s, fail, label="kernel-fault")
    return hit


def _kinds(summary, kind):
    return [e for e in summary["timeline"] if e["kind"] == kind]


def test_a_failed_condition_is_repaired_after_its_toleration(seed):
    rt = _runtime(seed, True, KernelReady=60.0)
    hit = _kernel_fault(rt, 1800.0)
    s = rt.run().summary
    (repair,) = _kinds(s, "unhealthy")
    assert repair["node"] == hit[0]
    assert repair["atSeconds"] == pytest.approx(1860.0)  # not before the toleration
    assert repair["detail"].startswith("KernelReady False for 60 s")
    assert rt.state.nodes[hit[0]].deleted_at_s == pytest.approx(1860.0)
    claim = rt.state.claim_of(rt.state.nodes[hit[0]])
    assert claim is not None and claim.repaired_condition == "KernelReady"  # typed, for metrics
    # Its pods were placed again: every node but the repaired one still runs, and a
    # replacement node was launched after the repair.
    later = [n for n in s["nodes"] if n["launchedAtSeconds"] > 1860.0]
    assert later, "no replacement node"
    assert not _kinds(s, "nodeRepairBlocked")


def test_gate_off_nothing_is_repaired(seed):
    rt = _runtime(seed, False, KernelReady=60.0)
    hit = _kernel_fault(rt, 1800.0)
    s = rt.run().summary
    assert not _kinds(s, "unhealthy") and not _kinds(s, "nodeRepairBlocked")
    assert rt.state.nodes[hit[0]].deleted_at_s is None
    assert rt.health is None


def test_an_az_outage_of_the_whole_pool_is_not_repaired(seed):
    rt = _runtime(seed, True, Ready=120.0)
    rt.add_experiment(parse_template(json.dumps(OUTAGE), "t.json"), 1800.0)
    s = rt.run().summary
    down = {e["node"] for e in _kinds(s, "unreachable")}
    assert len(down) >= 2
    assert not _kinds(s, "unhealthy")  # every node unhealthy: more than 20 %
    assert {e["node"] for e in _kinds(s, "nodeRepairBlocked")} == down
    assert all(e["atSeconds"] >= 1800.0 + 120.0 for e in _kinds(s, "nodeRepairBlocked"))


def test_scenario_settings_carry_the_gate_and_tolerations(tmp_path):
    import shutil

    from joiner.api.errors import InputError

    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    text = (d / "scenario.yaml").read_text()
    assert "settings:" not in text
    (d / "scenario.yaml").write_text(
        text.replace(
            "spec:\n",
            "spec:\n  settings:\n    featureGates: {nodeRepair: true}\n"
            "    nodeRepairTolerations: {Ready: 2m}\n",
            1,
        )
    )
    sc = load_scenario(d / "scenario.yaml")
    assert sc.feature_gates.node_repair and sc.repair_tolerations_s == (("Ready", 120.0),)
    (d / "scenario.yaml").write_text(
        text.replace("spec:\n", "spec:\n  settings:\n    nodeRepairTolerations: {Foo: 2m}\n", 1)
    )
    with pytest.raises(InputError, match=r"nodeRepairTolerations\.Foo"):
        load_scenario(d / "scenario.yaml")
    # The breaker's input: the error names the file and the Scenario, as other fields do.
    (d / "scenario.yaml").write_text(
        text.replace("spec:\n", "spec:\n  settings:\n    nodeRepairTolerations: {Ready: -5m}\n", 1)
    )
    with pytest.raises(InputError) as bad:
        load_scenario(d / "scenario.yaml")
    assert bad.value.file == str(d / "scenario.yaml") and bad.value.obj.startswith("Scenario/")
    assert "nodeRepairTolerations.Ready" in str(bad.value)


def test_tolerations_without_the_gate_draw_a_warning(seed):
    """A field Joiner accepts has its effect or draws a warning: tolerations with node repair
    off change nothing, and the run says so; with the gate on it does not."""
    off = _runtime(seed, False, KernelReady=60.0).warnings()
    assert any("nodeRepairTolerations has no effect" in w and "NodeRepair" in w for w in off)
    on = _runtime(seed, True, KernelReady=60.0).warnings()
    assert not any("nodeRepairTolerations" in w for w in on)
    assert not any("nodeRepairTolerations" in w for w in _runtime(seed, False).warnings())
