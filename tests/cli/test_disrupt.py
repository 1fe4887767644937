"""``joiner disrupt``: the dry run's output, its JSON Schema, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "nightly-consolidation"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "disruption.schema.json").read_text())
ARGS = [
    "disrupt",
    "-f",
    str(EXAMPLE / "running-cluster.yaml"),
    "-f",
    str(EXAMPLE / "nodepool.yaml"),
    "--at",
    "2025-01-07T21:00:00Z",
]
runner = CliRunner()


def test_json_matches_schema_and_explains_every_node():
    result = runner.invoke(app, [*ARGS, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    touched = {n for c in doc["commands"] for n in c["candidates"]}
    left = {u["node"]: u["reason"] for u in doc["unconsolidatable"]}
    nodes = {f"ip-10-0-{i}.ec2.internal" for i in ("1-10", "1-11", "2-12", "2-13", "3-14", "3-15")}
    assert touched | set(left) == nodes and not touched & set(left)
    assert left["ip-10-0-1-11.ec2.internal"] == "pod shop/db-0 has karpenter.sh/do-not-disrupt"
    assert left["ip-10-0-2-12.ec2.internal"].startswith("PDB shop/api allows 0 disruptions")
    assert doc["commands"][0]["method"] == "Emptiness"
    assert doc["commands"][0]["candidates"] == ["ip-10-0-3-14.ec2.internal"]
    assert doc["costPerHourAfter"] == pytest.approx(
        doc["costPerHourBefore"] - doc["savingsPerHour"], abs=1e-5
    )


def test_table_output():
    result = runner.invoke(app, ARGS)
    assert result.exit_code == 0, result.output
    assert "Emptiness" in result.stdout
    assert "has karpenter.sh/do-not-disrupt" in result.stdout


def test_morning_budget_window_blocks_the_web_pool_only():
    args = [*ARGS[:-1], "2025-01-07T08:30:00Z", "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # Only the batch pool's node (no scheduled budget) is disrupted.
    assert [c["candidates"] for c in doc["commands"]] == [["ip-10-0-3-15.ec2.internal"]]
    web = [u for u in doc["unconsolidatable"] if u["node"] == "ip-10-0-3-14.ec2.internal"]
    assert "budget" in web[0]["reason"] and 'schedule="0 8 * * 1-5"' in web[0]["reason"]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--at", "yesterday"], "--at"),
        (["--at", "2025-01-07T21:00:00"], "time zone"),
        (["--feature-gates", "Nope=true"], "unknown feature gate"),
        (["--region", "mars-1"], "unknown region"),
    ],
)
def test_bad_input_exits_2_with_a_located_message(extra, words):
    result = runner.invoke(app, [*ARGS, *extra])
    assert result.exit_code == 2
    assert words in result.output


def test_a_scenario_file_uses_its_vpc_and_settings(tmp_path):
    result = runner.invoke(
        app,
        [
            "disrupt",
            "-f",
            str(EXAMPLE / "scenario.yaml"),
            "-o",
            "json",
            "--at",
            "2025-01-07T21:00:00Z",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["commands"] == []  # no running nodes in the scenario's manifests
    assert not any("subnets are not known" in w for w in doc["warnings"])


@pytest.mark.parametrize("at", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_extreme_at_is_an_input_error(at):
    """Regression (breaker): these crashed with OverflowError/ValueError."""
    result = runner.invoke(app, [*ARGS[:-1], at])
    assert result.exit_code == 2
    assert "outside the years" in result.output


def test_pods_on_a_node_outside_the_dump_are_settled_not_reported_pending(tmp_path):
    """``disrupt`` places the pods whose node is not in the dump before it reads the
    cluster, so it never says they start pending (``adopt(settles_pending=True)``); the
    warning is chosen by a flag, not by filtering the English of ``simulate``'s."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: stray, namespace: shop}\n"
        "spec:\n  nodeName: ghost-node\n  containers:\n"
        "  - name: c\n    image: x\n    resources: {requests: {cpu: 100m, memory: 64Mi}}\n"
    )
    result = runner.invoke(app, [*ARGS, "-f", str(pod), "-o", "json"])
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert not [w for w in warnings if "start pending" in w], warnings


def _with_extra(tmp_path: Path, old: str, new: str, extra: str = "") -> str:
    """The example cluster with ``old`` replaced by ``new`` and ``extra`` items appended."""
    text = (EXAMPLE / "running-cluster.yaml").read_text()
    assert old in text
    out = tmp_path / "running-cluster.yaml"
    out.write_text(text.replace(old, new).rstrip("\n") + "\n" + extra)
    return str(out)


def _left_alone(dump: str) -> dict[str, str]:
    result = runner.invoke(app, ["disrupt", "-f", dump, *ARGS[3:], "-o", "json"])
    assert result.exit_code == 0, result.output
    return {u["node"]: u["reason"] for u in json.loads(result.stdout)["unconsolidatable"]}


_PDB_ALL = """  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {{name: all, namespace: shop}}
    spec: {{maxUnavailable: 0{selector}}}
"""


@pytest.mark.parametrize("selector", ["", ", selector: null"])
def test_pdb_without_selector_selects_no_pod(tmp_path, selector):
    # A nil PDB selector selects nothing (Karpenter pkg/utils/pdb newPdb through
    # metav1.LabelSelectorAsSelector); it used to block every pod of its namespace.
    dump = _with_extra(tmp_path, "shop", "shop", _PDB_ALL.format(selector=selector))
    left = _left_alone(dump)
    assert not any("PDB shop/all" in r for r in left.values()), left


def test_pdb_with_empty_selector_selects_every_pod_of_its_namespace(tmp_path):
    dump = _with_extra(tmp_path, "shop", "shop", _PDB_ALL.format(selector=", selector: {}"))
    left = _left_alone(dump)
    assert left["ip-10-0-1-10.ec2.internal"].startswith("PDB shop/all allows 0 disruptions")


@pytest.mark.parametrize("value", ["true ", " true", "true\\n", "TRUE", " 30m"])
def test_do_not_disrupt_is_compared_exactly(tmp_path, value):
    # Karpenter pkg/utils/pod IsDoNotDisruptActive: == "true", else time.ParseDuration (no
    # spaces); "true " used to be stripped and protect the node.
    old = 'karpenter.sh/do-not-disrupt: "true"'
    dump = _with_extra(tmp_path, old, f'karpenter.sh/do-not-disrupt: "{value}"')
    left = _left_alone(dump)
    assert (
        "ip-10-0-1-11.ec2.internal" not in left
        or "do-not-disrupt" not in (left["ip-10-0-1-11.ec2.internal"])
    ), left


def test_do_not_disrupt_reader_keeps_true_and_durations():
    from joiner.api import durations

    assert durations.do_not_disrupt("true") == (True, None)
    assert durations.do_not_disrupt("30m") == (False, 1800.0)
    assert durations.do_not_disrupt("true ") == (False, None)
    assert durations.do_not_disrupt("30m ") == (False, None)
