"""Issue 19, the class for FIS experiment templates: every field the template parser accepts
changes the parsed experiment, draws a "not modelled" warning, is rejected where it cannot
apply, or is bookkeeping that stays silent.

The fields come from the parser's own tables (top-level keys, target and action keys, each
supported action's parameters, target parameters), so a field the parser starts accepting
without an entry here fails ``test_every_field_has_an_entry``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from joiner.api.errors import InputError
from joiner.faults import template as fis

ROLE = "arn:aws:iam::123456789012:role/fis"
SPOT_TARGET = {
    "resourceType": "aws:ec2:spot-instance",
    "resourceTags": {"Name": "my-node"},
    "selectionMode": "ALL",
}


def _base(action_id: str = fis.SPOT_INTERRUPTIONS) -> dict[str, Any]:
    """A valid template running ``action_id`` once with its required parameters."""
    spec = fis.ACTIONS[action_id]
    params = {
        "durationBeforeInterruption": "PT2M",
        "duration": "PT10M",
    }
    action: dict[str, Any] = {
        "actionId": action_id,
        "parameters": {k: params[k] for k in spec.required},
    }
    targets: dict[str, Any] = {}
    if spec.resource_type == "aws:iam:role":
        targets["t"] = {
            "resourceType": "aws:iam:role",
            "resourceArns": [ROLE],
            "selectionMode": "ALL",
        }
    elif spec.resource_type == "aws:ec2:subnet":
        targets["t"] = {
            "resourceType": "aws:ec2:subnet",
            "parameters": {"availabilityZoneIdentifier": "us-east-1a"},
            "selectionMode": "ALL",
        }
    elif spec.resource_type is not None:
        targets["t"] = {**SPOT_TARGET, "resourceType": spec.resource_type}
    if spec.target_key is not None:
        action["targets"] = {spec.target_key: "t"}
    doc: dict[str, Any] = {"roleArn": ROLE, "actions": {"a": action}, "targets": targets}
    doc["stopConditions"] = [{"source": "none"}]
    return doc


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        target = doc
        for p in parents:
            target = target.setdefault(p, {})
        target[leaf] = value

    return mutate


def _second_action(doc: dict[str, Any]) -> None:
    doc["actions"]["b"] = copy.deepcopy(doc["actions"]["a"])
    doc["actions"]["b"]["startAfter"] = ["a"]


def _arns(doc: dict[str, Any]) -> None:
    t = doc["targets"]["t"]
    del t["resourceTags"]
    t["resourceArns"] = ["arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0"]


#: Top-level field -> (mutation of the spot-interruption template, how it shows).
TOP: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "description": (_set("description", "my experiment"), "model"),
    "targets": (_set("targets.t.resourceTags", {"Name": "other"}), "model"),
    "actions": (_second_action, "model"),
    "stopConditions": (
        _set(
            "stopConditions",
            [{"source": "aws:cloudwatch:alarm", "value": "arn:aws:cloudwatch:alarm:x"}],
        ),
        "warn",
    ),
    "roleArn": (_set("roleArn", "not-an-arn"), "error"),
    "tags": (_set("tags", {"team": "a"}), "silent"),
    "clientToken": (_set("clientToken", "abc"), "silent"),
    "logConfiguration": (_set("logConfiguration", {"logSchemaVersion": 2}), "silent"),
    "experimentOptions": (_set("experimentOptions", {"emptyTargetResolutionMode": "skip"}), "warn"),
    "experimentReportConfiguration": (
        _set("experimentReportConfiguration", {"outputs": {}}),
        "silent",
    ),
}

TARGET: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "resourceType": (_set("targets.t.resourceType", "aws:ec2:instance"), "error"),
    "resourceArns": (_arns, "model"),
    "resourceTags": (_set("targets.t.resourceTags", {"Name": "other"}), "model"),
    "filters": (
        _set("targets.t.filters", [{"path": "State.Name", "values": ["running"]}]),
        "model",
    ),
    "selectionMode": (_set("targets.t.selectionMode", "COUNT(1)"), "model"),
    "parameters": (_set("targets.t.parameters", {"availabilityZoneIdentifier": "b"}), "error"),
}

ACTION: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "actionId": (_set("actions.a.actionId", "aws:ec2:reboot-instances"), "error"),
    "description": (_set("actions.a.description", "why"), "silent"),
    "parameters": (_set("actions.a.parameters", {"durationBeforeInterruption": "PT5M"}), "model"),
    "targets": (_set("actions.a.targets", {"Instances": "t"}), "error"),
    "startAfter": (_second_action, "model"),
}

#: (action id, parameter) -> (value, how it shows) on that action's template.
ACTION_PARAMETERS: dict[tuple[str, str], tuple[str, str]] = {
    (fis.SPOT_INTERRUPTIONS, "durationBeforeInterruption"): ("PT5M", "model"),
    (fis.STOP, "startInstancesAfterDuration"): ("PT5M", "model"),
    (fis.STOP, "completeIfInstancesTerminated"): ("true", "model"),
    (fis.ICE, "duration"): ("PT20M", "model"),
    (fis.ICE, "availabilityZoneIdentifiers"): ("us-east-1a", "model"),
    (fis.ICE, "percentage"): ("50", "model"),
    (fis.DISRUPT, "duration"): ("PT20M", "model"),
    (fis.DISRUPT, "scope"): ("s3", "warn"),
    (fis.WAIT, "duration"): ("PT20M", "model"),
}

#: (resource type, target parameter) -> value (changes the parsed target).
TARGET_PARAMETERS: dict[tuple[str, str], str] = {
    ("aws:ec2:subnet", "availabilityZoneIdentifier"): "us-east-1b",
    ("aws:ec2:subnet", "vpc"): "vpc-0123",
}


def test_every_field_has_an_entry():
    assert set(TOP) == fis._TOP_KEYS
    assert set(TARGET) == fis.TARGET_KEYS
    assert set(ACTION) == fis.ACTION_KEYS
    accepted = {
        (aid, p) for aid, spec in fis.ACTIONS.items() for p in (*spec.required, *spec.optional)
    }
    assert set(ACTION_PARAMETERS) == accepted
    assert set(TARGET_PARAMETERS) == {
        (rtype, p) for rtype, params in fis.TARGET_PARAMETERS.items() for p in params
    }


def _parse(doc: dict[str, Any]) -> fis.Template:
    return fis.parse_template(json.dumps(doc), "t.json")


def _shape(t: fis.Template) -> str:
    return repr((t.description, t.targets, t.actions, t.role_arn))


def _check(before: dict[str, Any], after: dict[str, Any], how: str, field: str) -> None:
    base = _parse(before)
    if how == "error":
        with pytest.raises(InputError):
            _parse(after)
        return
    got = _parse(after)
    if how == "warn":
        assert any("not modelled" in w and field in w for w in got.warnings), got.warnings
    elif how == "silent":
        assert _shape(got) == _shape(base) and got.warnings == base.warnings
    else:
        assert _shape(got) != _shape(base), f"{field}: no effect on the parsed experiment"
        assert got.warnings == base.warnings


@pytest.mark.parametrize(
    ("table", "field"),
    [("top", f) for f in sorted(TOP)]
    + [("target", f) for f in sorted(TARGET)]
    + [("action", f) for f in sorted(ACTION)],
)
def test_template_field_has_an_effect_or_warns(table, field):
    mutate, how = {"top": TOP, "target": TARGET, "action": ACTION}[table][field]
    before = _base()
    after = copy.deepcopy(before)
    mutate(after)
    _check(before, after, how, field)


@pytest.mark.parametrize(("action_id", "param"), sorted(ACTION_PARAMETERS))
def test_action_parameter_has_an_effect_or_warns(action_id, param):
    value, how = ACTION_PARAMETERS[(action_id, param)]
    before = _base(action_id)
    after = copy.deepcopy(before)
    after["actions"]["a"]["parameters"][param] = value
    _check(before, after, how, param)


@pytest.mark.parametrize(("rtype", "param"), sorted(TARGET_PARAMETERS))
def test_target_parameter_changes_the_target(rtype, param):
    before = _base(fis.DISRUPT)
    after = copy.deepcopy(before)
    after["targets"]["t"]["parameters"][param] = TARGET_PARAMETERS[(rtype, param)]
    _check(before, after, "model", param)


def test_unknown_action_field_is_an_error():
    doc = _base()
    doc["actions"]["a"]["startsAfter"] = ["x"]
    with pytest.raises(InputError, match="startsAfter"):
        _parse(doc)


def test_scenario_carries_template_warnings(tmp_path):
    """A template's not-modelled warning reaches the scenario's warnings (summary, CLI)."""
    import shutil
    from pathlib import Path

    from joiner.sim.scenario import load_scenario

    seed = Path(__file__).resolve().parents[2] / "examples" / "seed-spot"
    for name in ("provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml", "scenario.yaml"):
        shutil.copy(seed / name, tmp_path / name)
    doc = json.loads((seed / "fis-spot-interruption.json").read_text())
    doc["experimentOptions"] = {"emptyTargetResolutionMode": "skip"}
    (tmp_path / "fis.json").write_text(json.dumps(doc))
    text = (tmp_path / "scenario.yaml").read_text()
    text = text.replace(
        "  workloads:", "  faults:\n    - at: 5m\n      template: fis.json\n  workloads:"
    )
    (tmp_path / "scenario.yaml").write_text(text)
    sc = load_scenario(tmp_path / "scenario.yaml")
    assert any("experimentOptions" in w for w in sc.manifests.warnings)
