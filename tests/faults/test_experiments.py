"""Each FIS action, target type and selection mode, run against the seed scenario, and the
``joiner chaos`` command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.faults.template import parse_template
from joiner.operator.chaos import run_experiment
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
ROLE = "arn:aws:iam::123456789012:role/fis"
#: Where the seed's nodes run: c5.xlarge's cheaper pool of the two (both in the best-capacity
#: band) in the Spot market of seed 42; subnet-123456, zone id use1-az1.
SEED_ZONE = "us-east-1b"
runner = CliRunner()


def _template(actions: dict, targets: dict) -> object:
    return parse_template(
        json.dumps({"description": "t", "roleArn": ROLE, "actions": actions, "targets": targets}),
        "t.json",
    )


SPOT_TARGET = {
    "spot": {
        "resourceType": "aws:ec2:spot-instance",
        "resourceTags": {"Name": "my-node"},
        "selectionMode": "ALL",
    }
}


def _spot(duration="PT2M", mode="ALL"):
    targets = json.loads(json.dumps(SPOT_TARGET))
    targets["spot"]["selectionMode"] = mode
    return _template(
        {
            "i": {
                "actionId": "aws:ec2:send-spot-instance-interruptions",
                "parameters": {"durationBeforeInterruption": duration},
                "targets": {"SpotInstances": "spot"},
            }
        },
        targets,
    )


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SEED / "scenario.yaml")


def test_seed_experiment_survives_with_every_spot_node_targeted(scenario):
    v = run_experiment(
        scenario, parse_template((SEED / "fis-spot-interruption.json").read_text(), "f"), 3600.0
    )
    b = v.body
    assert v.survived and b["podsLost"] == 0 and b["pdbViolations"] == 0
    assert b["targets"] == 7  # the seed run has 7 spot nodes at 1h
    assert b["replacementLeadTimeSeconds"]["min"] > 0  # every replacement Ready before reclaim


@pytest.mark.parametrize(("mode", "count"), [("ALL", 7), ("COUNT(2)", 2), ("PERCENT(50)", 3)])
def test_selection_modes(scenario, mode, count):
    assert run_experiment(scenario, _spot(mode=mode), 3600.0).body["targets"] == count


def test_longer_notice_gives_rebalance_first(scenario):
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 1200))
    rt.add_experiment(_spot("PT10M", "COUNT(1)"), 3600.0)
    s = rt.run().summary
    rebalance = next(
        e["atSeconds"] for e in s["timeline"] if e["kind"] == "rebalanceRecommendation"
    )
    notice = next(e["atSeconds"] for e in s["timeline"] if e["kind"] == "notice")
    assert (rebalance, notice) == (3600.0, 3600.0 + 480.0)


def test_terminate_instances_under_a_pdb_loses_pods_and_exits_1(tmp_path):
    # The running cluster's node holds 4 pods behind maxUnavailable 1: 5 s between
    # shutting-down and gone is not enough to drain it, so pods are lost.
    template = {
        "description": "kill",
        "roleArn": ROLE,
        "targets": {
            "n": {
                "resourceType": "aws:ec2:instance",
                "resourceArns": ["arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0"],
                "selectionMode": "ALL",
                "filters": [{"path": "State.Name", "values": ["running"]}],
            }
        },
        "actions": {
            "t": {"actionId": "aws:ec2:terminate-instances", "targets": {"Instances": "n"}}
        },
    }
    path = tmp_path / "kill.json"
    path.write_text(json.dumps(template))
    scenario = SEED.parent / "spot-interruptions" / "captured-event.yaml"
    result = runner.invoke(
        app, ["chaos", "run", str(path), "--scenario", str(scenario), "--at", "5m", "-o", "json"]
    )
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["targets"] == 1 and body["podsLost"] == 3 and not body["survived"]


def test_terminate_instances_without_a_pdb_drains_in_time(scenario):
    t = _template(
        {"t": {"actionId": "aws:ec2:terminate-instances", "targets": {"Instances": "n"}}},
        {
            "n": {
                "resourceType": "aws:ec2:instance",
                "resourceTags": {"Name": "my-node"},
                "selectionMode": "COUNT(1)",
            }
        },
    )
    v = run_experiment(scenario, t, 3600.0)
    assert v.survived and v.body["targets"] == 1


def test_stop_instances_drain_before_the_stop(scenario):
    t = _template(
        {"s": {"actionId": "aws:ec2:stop-instances", "targets": {"Instances": "n"}}},
        {
            "n": {
                "resourceType": "aws:ec2:instance",
                "resourceTags": {"Name": "my-node"},
                "selectionMode": "COUNT(1)",
            }
        },
    )
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 600))
    rt.add_experiment(t, 3600.0)
    s = rt.run().summary
    kinds = [e["kind"] for e in s["timeline"]]
    assert "stateChange" in kinds and "drainStarted" in kinds


def test_ice_error_blocks_launches_in_the_zone(scenario):
    t = _template(
        {
            "ice": {
                "actionId": "aws:ec2:api-insufficient-instance-capacity-error",
                "parameters": {
                    "duration": "PT30M",
                    "availabilityZoneIdentifiers": "us-east-1b",
                    "percentage": "100",
                },
                "targets": {"Roles": "joiner"},
            }
        },
        {
            "joiner": {
                "resourceType": "aws:iam:role",
                "resourceArns": [ROLE],
                "selectionMode": "ALL",
            }
        },
    )
    rt = SimulationRuntime(scenario)
    rt.add_experiment(t, 0.0)
    s = rt.run().summary
    # Without the fault the seed's nodes launch in us-east-1b (SEED_ZONE); blocked, 1a.
    assert {n["zone"] for n in s["nodes"]} == {"us-east-1a"}
    assert s["pods"]["scheduled"] == 20


def test_zone_outage_and_wait(scenario):
    t = _template(
        {
            "w": {"actionId": "aws:fis:wait", "parameters": {"duration": "PT5M"}},
            "cut": {
                "actionId": "aws:network:disrupt-connectivity",
                "parameters": {"duration": "PT10M"},
                "targets": {"Subnets": "a"},
                "startAfter": ["w"],
            },
        },
        {
            "a": {
                "resourceType": "aws:ec2:subnet",
                "resourceArns": ["arn:aws:ec2:us-east-1:123456789012:subnet/subnet-123456"],
                "selectionMode": "ALL",
            }
        },
    )
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 1800))
    rt.add_experiment(t, 3600.0)
    s = rt.run().summary
    down = [e for e in s["timeline"] if e["kind"] == "unreachable"]
    up = [e for e in s["timeline"] if e["kind"] == "reachable"]
    assert down and all(e["atSeconds"] == 3900.0 for e in down)
    assert up and all(e["atSeconds"] == 4500.0 for e in up)


def test_chaos_validate_and_bad_input(tmp_path):
    ok = runner.invoke(app, ["chaos", "validate", str(SEED / "fis-spot-interruption.json")])
    assert ok.exit_code == 0 and "valid" in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = runner.invoke(app, ["chaos", "validate", str(bad)])
    assert result.exit_code == 2 and "line 1" in result.output


def test_default_start_is_when_the_workload_first_runs(scenario):
    v = run_experiment(scenario, _spot(mode="COUNT(1)"), None)
    assert 25.0 < v.at_s < 60.0 and v.body["targets"] == 1


def test_scenario_faults_key(tmp_path):
    import shutil

    d = tmp_path / "seed"
    shutil.copytree(SEED, d)
    text = (
        d / "scenario.yaml"
    ).read_text() + "  faults:\n    - {at: 1h, template: fis-spot-interruption.json}\n"
    (d / "scenario.yaml").write_text(text)
    s = SimulationRuntime(load_scenario(d / "scenario.yaml")).run().summary
    assert s["interruptions"]["count"] == 7 and s["pods"]["lost"] == 0


def _az_outage(target: dict) -> object:
    """AWS's "AZ Availability: Power Interruption" shape: a subnet target chosen by zone."""
    return _template(
        {
            "cut": {
                "actionId": "aws:network:disrupt-connectivity",
                "parameters": {"duration": "PT10M", "scope": "all"},
                "targets": {"Subnets": "az"},
            }
        },
        {"az": target},
    )


@pytest.mark.parametrize(
    "target",
    [
        {
            "resourceType": "aws:ec2:subnet",
            "parameters": {"availabilityZoneIdentifier": "us-east-1b", "vpc": "vpc-0abc"},
            "selectionMode": "ALL",
        },
        {
            "resourceType": "aws:ec2:subnet",
            "parameters": {"availabilityZoneIdentifier": "use1-az1", "vpc": "vpc-0abc"},
            "selectionMode": "ALL",
        },
        {
            "resourceType": "aws:ec2:subnet",
            "resourceArns": [
                "arn:aws:ec2:us-east-1:123456789012:subnet/subnet-123455",
                "arn:aws:ec2:us-east-1:123456789012:subnet/subnet-123456",
            ],
            "filters": [{"path": "AvailabilityZone", "values": ["us-east-1b"]}],
            "selectionMode": "ALL",
        },
    ],
    ids=["zone-name-parameter", "zone-id-parameter", "availability-zone-filter"],
)
def test_az_outage_templates_as_aws_writes_them(scenario, target):
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 1200))
    exp = rt.add_experiment(_az_outage(target), 3600.0)
    s = rt.run().summary
    assert exp.targets == {"subnet-123456"} and not exp.empty
    down = {e["node"] for e in s["timeline"] if e["kind"] == "unreachable"}
    zones = {n["name"]: n["zone"] for n in s["nodes"]}
    assert down and {zones[n] for n in down} == {SEED_ZONE}


def test_stop_with_restart_brings_the_node_back_or_fails_when_terminated(scenario):
    stop = {
        "s": {
            "actionId": "aws:ec2:stop-instances",
            "parameters": {"startInstancesAfterDuration": "PT5M"},
            "targets": {"Instances": "n"},
        },
        "after": {
            "actionId": "aws:fis:wait",
            "parameters": {"duration": "PT1M"},
            "startAfter": ["s"],
        },
    }
    target = {
        "n": {
            "resourceType": "aws:ec2:instance",
            "resourceTags": {"Name": "my-node"},
            "selectionMode": "COUNT(1)",
        }
    }
    t = _template(stop, target)
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 900))
    exp = rt.add_experiment(t, 3600.0)
    s = rt.run().summary
    waits = [e for e in s["timeline"] if e["kind"] == "faultInjected" and "wait" in e["detail"]]
    # The stop action ends at the restart: what starts after it waits 5 minutes.
    assert waits and waits[0]["atSeconds"] == 3600.0 + 300.0
    # Karpenter terminates a stopping instance, so FIS's restart finds it gone: the action
    # fails unless completeIfInstancesTerminated is true.
    assert any("terminated before its restart" in e for e in exp.empty)
    stop["s"]["parameters"]["completeIfInstancesTerminated"] = "true"
    rt = SimulationRuntime(replace(scenario, duration_s=3600 + 900))
    exp = rt.add_experiment(_template(stop, target), 3600.0)
    rt.run()
    assert not exp.empty


def test_start_after_cycle_through_an_invalid_action_is_reported(tmp_path):
    doc = {
        "description": "t",
        "roleArn": ROLE,
        "targets": {},
        "actions": {
            "a": {
                "actionId": "aws:fis:wait",
                "parameters": {"duration": "PT1M"},
                "startAfter": ["b"],
            },
            "b": {"actionId": "aws:fis:nap", "startAfter": ["c"]},
            "c": {
                "actionId": "aws:fis:wait",
                "parameters": {"duration": "PT1M"},
                "startAfter": ["a"],
            },
        },
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["chaos", "validate", str(path)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "circular startAfter among a, b, c" in text and "aws:fis:nap" in text
