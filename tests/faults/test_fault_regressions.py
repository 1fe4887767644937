"""Regressions from trying to break chaos and interruption inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.faults.template import parse_template
from joiner.operator.chaos import run_experiment
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
SPOT = REPO / "examples" / "spot-interruptions"
ROLE = "arn:aws:iam::123456789012:role/fis"
runner = CliRunner()


def _validate(tmp_path: Path, text: str):
    path = tmp_path / "t.json"
    path.write_text(text)
    return runner.invoke(app, ["chaos", "validate", str(path)])


def _wait_chain(n: int) -> str:
    actions = {
        f"a{i:04d}": {
            "actionId": "aws:fis:wait",
            "parameters": {"duration": "PT1S"},
            **({"startAfter": [f"a{i - 1:04d}"]} if i else {}),
        }
        for i in range(n)
    }
    return json.dumps({"roleArn": ROLE, "targets": {}, "actions": actions})


def _ice(params: dict) -> str:
    return json.dumps(
        {
            "roleArn": ROLE,
            "targets": {
                "r": {
                    "resourceType": "aws:iam:role",
                    "resourceArns": [ROLE],
                    "selectionMode": "ALL",
                }
            },
            "actions": {
                "i": {
                    "actionId": "aws:ec2:api-insufficient-instance-capacity-error",
                    "parameters": params,
                    "targets": {"Roles": "r"},
                }
            },
        }
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (_ice({"duration": "PT5M", "percentage": "²"}), "percentage"),
        ("[" * 100000, "nested too deeply"),
        ('{"description": ' + "1" * 5000 + "}", "cannot be read"),
        (_ice({"duration": "PT100000000000000000000H"}), "parameters.duration"),
        (_ice({"duration": "P1MT5M"}), "years and months"),
        ('{"roleArn": "x", "roleArn": "y"}', "duplicate key"),
    ],
)
def test_bad_templates_exit_2_without_traceback(tmp_path, text, needle):
    result = _validate(tmp_path, text)
    assert result.exit_code == 2, result.output
    assert needle in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_long_start_after_chain_is_fine(tmp_path):
    assert _validate(tmp_path, _wait_chain(2000)).exit_code == 0


def test_unknown_filter_path_and_count_zero_are_errors(tmp_path):
    doc = json.loads((SEED / "fis-spot-interruption.json").read_text())
    doc["targets"]["spot"]["filters"].append({"path": "InstanceType", "values": ["m5.large"]})
    doc["targets"]["spot"]["selectionMode"] = "COUNT(0)"
    message = " ".join(_validate(tmp_path, json.dumps(doc)).output.split())
    assert "'InstanceType' is not supported" in message and "COUNT(n) needs n >= 1" in message


def test_ice_in_an_unknown_zone_blocks_nothing():
    sc = load_scenario(SEED / "scenario.yaml")
    rt = SimulationRuntime(sc)
    rt.add_experiment(
        parse_template(
            _ice({"duration": "PT30M", "availabilityZoneIdentifiers": "eu-west-1a"}), "t"
        ),
        0.0,
    )
    s = rt.run().summary
    assert s["pods"]["pendingSeconds"]["max"] < 60


def test_experiment_with_no_targets_fails():
    doc = json.loads((SEED / "fis-spot-interruption.json").read_text())
    doc["targets"]["spot"]["resourceTags"] = {"Name": "nobody"}
    v = run_experiment(
        load_scenario(SEED / "scenario.yaml"), parse_template(json.dumps(doc), "t"), 3600.0
    )
    assert not v.survived and v.body["targets"] == 0 and v.body["failedTargets"]


def test_running_cluster_instances_carry_tags():
    doc = json.loads((SEED / "fis-spot-interruption.json").read_text())
    doc["targets"]["spot"]["resourceTags"] = {"karpenter.sh/nodepool": "spot"}
    v = run_experiment(
        load_scenario(SPOT / "captured-event.yaml"), parse_template(json.dumps(doc), "t"), 300.0
    )
    assert v.body["targets"] == 1


def test_captured_terminated_event_takes_the_node(tmp_path):
    d = tmp_path / "ex"
    shutil.copytree(SPOT, d)
    message = {
        "version": "0",
        "id": "x",
        "source": "aws.ec2",
        "detail-type": "EC2 Instance State-change Notification",
        "detail": {"instance-id": "i-1234567890abcdef0", "state": "terminated"},
    }
    (d / "spot-itn-sample.json").write_text(json.dumps(message))
    s = SimulationRuntime(load_scenario(d / "captured-event.yaml")).run().summary
    kinds = [e["kind"] for e in s["timeline"] if e["node"] == "ip-10-0-1-17.ec2.internal"]
    assert "reclaimed" in kinds


def test_at_beyond_the_scenario_is_bad_input():
    result = runner.invoke(
        app,
        [
            "chaos",
            "run",
            str(SEED / "fis-spot-interruption.json"),
            "--scenario",
            str(SEED / "scenario.yaml"),
            "--at",
            "9999h",
        ],
    )
    assert result.exit_code == 2 and "--at" in result.output


def test_interruption_file_errors_are_located(tmp_path):
    d = tmp_path / "ex"
    shutil.copytree(SPOT, d)
    sc = d / "scenario.yaml"
    sc.write_text(sc.read_text().replace("{file: nth-values.yaml,", "{file: missing.yaml,"))
    result = runner.invoke(app, ["simulate", str(sc), "--out", str(tmp_path / "o")])
    message = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "Scenario/spot-interruptions" in message and "spec.interruption.file" in message


def test_an_action_after_a_spot_interruption_starts_at_its_notice():
    """Regression (breaker): a line lost in a merge made every Spot-interruption action last
    0 s, so an action with ``startAfter`` it started at once instead of at the notice."""
    from joiner.faults.experiment import experiment_length_s, schedule

    doc = {
        "roleArn": ROLE,
        "targets": {
            "spot": {
                "resourceType": "aws:ec2:spot-instance",
                "resourceTags": {"team": "web"},
                "selectionMode": "ALL",
            }
        },
        "actions": {
            "spot": {
                "actionId": "aws:ec2:send-spot-instance-interruptions",
                "parameters": {"durationBeforeInterruption": "PT10M"},
                "targets": {"SpotInstances": "spot"},
            },
            "after": {
                "actionId": "aws:fis:wait",
                "parameters": {"duration": "PT1M"},
                "startAfter": ["spot"],
            },
        },
    }
    template = parse_template(json.dumps(doc), "t.json")
    assert schedule(template) == {"spot": (0.0, 480.0), "after": (480.0, 540.0)}
    assert experiment_length_s(template) == 600.0
