"""FIS template parsing and validation: the seed's published template and every error kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.faults.template import ACTIONS, load_template, parse_template

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "examples" / "seed"


def _doc(**over):
    doc = json.loads((SEED / "fis-spot-interruption.json").read_text())
    doc.update(over)
    return doc


def _errors(doc) -> str:
    with pytest.raises(InputError) as err:
        parse_template(json.dumps(doc) if not isinstance(doc, str) else doc, "t.json")
    return str(err.value)


def test_seed_template_is_valid():
    t = load_template(SEED / "fis-spot-interruption.json")
    (action,) = t.actions.values()
    assert action.target == "spot" and action.seconds("durationBeforeInterruption") == 120
    assert t.targets["spot"].tags == (("Name", "my-node"),)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared examples not present")
def test_as_published_template_reports_the_json_error_position():
    text = (SHARED / "fis-spot-interruption.as-published.json").read_text()
    message = _errors(text)
    assert "invalid JSON at line 30, column 2" in message
    lines = text.split("\n")
    lines[29] = ","  # the extra closing brace, fixed
    message = _errors("\n".join(lines))
    assert message.startswith("t.json: 3 problems")
    assert "field roleArn" in message
    assert "field targets: holds one target's fields directly" in message
    assert "actions.rbr_node.targets.SpotInstances: names target 'spot'" in message
    assert '"resourceType": "aws:ec2:spot-instance"' in message


def test_unknown_action_lists_supported_ones():
    doc = _doc()
    doc["actions"]["rbr_node"]["actionId"] = "aws:ec2:melt"
    message = _errors(doc)
    assert "'aws:ec2:melt' is not supported" in message
    assert all(a in message for a in ACTIONS)


@pytest.mark.parametrize("mode", ["SOME", "COUNT(x)", "PERCENT(0)", "PERCENT(101)"])
def test_bad_selection_mode(mode):
    doc = _doc()
    doc["targets"]["spot"]["selectionMode"] = mode
    assert "targets.spot.selectionMode" in _errors(doc)


@pytest.mark.parametrize("duration", ["PT1M", "PT16M", "soon", "P1M"])
def test_duration_out_of_range(duration):
    doc = _doc()
    doc["actions"]["rbr_node"]["parameters"]["durationBeforeInterruption"] = duration
    assert "parameters.durationBeforeInterruption" in _errors(doc)


def test_undefined_target_and_wrong_target_type():
    doc = _doc()
    doc["actions"]["rbr_node"]["targets"]["SpotInstances"] = "nope"
    assert "names target 'nope', which is not defined" in _errors(doc)
    doc = _doc()
    doc["targets"]["spot"]["resourceType"] = "aws:ec2:instance"
    assert "takes aws:ec2:spot-instance" in _errors(doc)


def test_inline_target_definition_is_rejected():
    doc = _doc()
    doc["actions"]["rbr_node"]["targets"]["SpotInstances"] = doc["targets"]["spot"]
    assert "must name a top-level target" in _errors(doc)


def test_circular_start_after():
    doc = _doc()
    doc["actions"] = {
        "a": {"actionId": "aws:fis:wait", "parameters": {"duration": "PT1M"}, "startAfter": ["b"]},
        "b": {"actionId": "aws:fis:wait", "parameters": {"duration": "PT1M"}, "startAfter": ["a"]},
    }
    assert "circular startAfter" in _errors(doc)


def test_start_after_unknown_action_and_missing_parameter():
    doc = _doc()
    doc["actions"]["w"] = {"actionId": "aws:fis:wait", "startAfter": ["ghost"]}
    message = _errors(doc)
    assert "names action 'ghost'" in message and "actions.w.parameters.duration" in message


def test_role_targets_take_arns_only():
    doc = _doc()
    doc["targets"]["role"] = {
        "resourceType": "aws:iam:role",
        "resourceTags": {"a": "b"},
        "selectionMode": "ALL",
    }
    assert "aws:iam:role targets take resourceArns only" in _errors(doc)
