"""``--explain NODE`` of ``joiner disrupt`` and ``joiner simulate``: the node's verdict
history as a table and in the JSON documents (schema-valid), unknown nodes, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "nightly-consolidation"
DISRUPT = [
    "disrupt",
    "-f",
    str(EXAMPLE / "running-cluster.yaml"),
    "-f",
    str(EXAMPLE / "nodepool.yaml"),
    "--at",
    "2025-01-07T21:00:00Z",
]
PDB_NODE = "ip-10-0-2-12.ec2.internal"
runner = CliRunner()


def _schema(name: str) -> dict[str, object]:
    return json.loads((REPO / "docs" / "schemas" / f"{name}.schema.json").read_text())


def test_disrupt_explain_shows_the_pdb_that_keeps_the_node():
    result = runner.invoke(app, [*DISRUPT, "--explain", PDB_NODE])
    assert result.exit_code == 0, result.output
    table = result.stdout.split(f"{PDB_NODE}: disruption verdict changes", 1)[1]
    assert "pdb-blocks" in table and "PDB shop/api allows 0 disruptions" in table
    assert "MultiNodeConsolidation" in table


def test_disrupt_json_carries_the_typed_history_and_matches_the_schema():
    result = runner.invoke(app, [*DISRUPT, "--explain", PDB_NODE, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, _schema("disruption"))
    assert list(doc["explain"]) == [PDB_NODE]
    last = doc["explain"][PDB_NODE]["entries"][-1]
    assert last["kind"] == "pdb-blocks" and last["fields"]["pdb"] == "shop/api"
    assert last["outcome"] == "kept" and last["method"] == "MultiNodeConsolidation"


def test_disrupt_json_without_explain_has_no_explain_key():
    result = runner.invoke(app, [*DISRUPT, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "explain" not in json.loads(result.stdout)


def test_disrupt_explain_all_covers_every_managed_node():
    result = runner.invoke(app, [*DISRUPT, "--explain", "*", "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, _schema("disruption"))
    touched = {n for c in doc["commands"] for n in c["candidates"]}
    assert set(doc["explain"]) == touched | {u["node"] for u in doc["unconsolidatable"]}
    for name in touched:
        assert doc["explain"][name]["entries"][-1]["outcome"] == "disrupted"


def test_disrupt_unknown_node_is_a_clear_error_naming_the_nodes():
    result = runner.invoke(app, [*DISRUPT, "--explain", "ip-10-9-9-9.ec2.internal"])
    assert result.exit_code == 2
    assert "--explain" in result.output
    assert "no node named 'ip-10-9-9-9.ec2.internal'" in result.output
    assert PDB_NODE in result.output and "--explain '*'" in result.output


def test_disrupt_explains_several_nodes_repeated_or_joined_by_commas():
    """Regression (breaker): a repeated ``--explain`` kept only the last node, silently."""
    every = json.loads(runner.invoke(app, [*DISRUPT, "--explain", "*", "-o", "json"]).stdout)
    other = next(n for n in sorted(every["explain"]) if n != PDB_NODE)
    repeated = runner.invoke(
        app, [*DISRUPT, "--explain", PDB_NODE, "--explain", other, "-o", "json"]
    )
    assert repeated.exit_code == 0, repeated.output
    doc = json.loads(repeated.stdout)
    jsonschema.validate(doc, _schema("disruption"))
    assert sorted(doc["explain"]) == sorted([PDB_NODE, other])
    assert doc["explain"] == {n: every["explain"][n] for n in (PDB_NODE, other)}
    joined = runner.invoke(app, [*DISRUPT, "--explain", f"{other},{PDB_NODE},", "-o", "json"])
    assert json.loads(joined.stdout)["explain"] == doc["explain"]
    table = runner.invoke(app, [*DISRUPT, "--explain", PDB_NODE, "--explain", other])
    assert f"{PDB_NODE}: disruption verdict changes" in table.stdout
    assert f"{other}: disruption verdict changes" in table.stdout
    # one unknown name among known ones is still the clear error
    bad = runner.invoke(app, [*DISRUPT, "--explain", PDB_NODE, "--explain", "nope"])
    assert bad.exit_code == 2 and "no node named 'nope'" in bad.output


def test_explain_naming_no_node_is_an_input_error():
    result = runner.invoke(app, [*DISRUPT, "--explain", ","])
    assert result.exit_code == 2
    assert "--explain" in result.output and "names no node" in result.output


def test_explain_all_beside_a_name_is_an_input_error():
    """``*,nope`` explained every node and dropped the misspelt name without a word."""
    for args in (["--explain", "*,nope"], ["--explain", "nope", "--explain", " * "]):
        result = runner.invoke(app, [*DISRUPT, *args])
        assert result.exit_code == 2, result.output
        assert "'*' already gives every node" in result.output and "'nope'" in result.output
    both = runner.invoke(app, [*DISRUPT, "--explain", "*,*", "-o", "json"])
    assert both.exit_code == 0, both.output


def _simulate(out: Path, *extra: str):
    return runner.invoke(
        app,
        ["simulate", str(EXAMPLE / "scenario.yaml"), "--out", str(out), *extra],
        catch_exceptions=False,
    )


def _kept_then_consolidated(explain: dict[str, dict[str, list[dict[str, object]]]]) -> str:
    """A node kept because consolidateAfter had not passed that a later command took."""
    waiting = {"not-consolidatable-yet", "empty-not-yet"}
    for name, history in sorted(explain.items()):
        entries = history["entries"]
        kinds = [e["kind"] or e["outcome"] for e in entries]
        if "disrupted" in kinds and waiting & set(kinds[: kinds.index("disrupted")]):
            return name
    raise AssertionError("no node was kept for consolidateAfter and consolidated later")


def test_simulate_history_shows_consolidate_after_then_the_command_with_their_times(tmp_path):
    first = _simulate(tmp_path / "a", "-q", "--explain", "*")
    assert first.exit_code == 0, first.output
    text = (tmp_path / "a" / "summary.json").read_text()
    summary = json.loads(text)
    jsonschema.validate(summary, _schema("summary"))
    name = _kept_then_consolidated(summary["explain"])
    entries = summary["explain"][name]["entries"]
    disrupted = next(e for e in entries if e["outcome"] == "disrupted")
    waited = [
        e
        for e in entries
        if e["kind"] in ("not-consolidatable-yet", "empty-not-yet")
        and e["atSeconds"] < disrupted["atSeconds"]
    ]
    assert waited and waited[-1]["fields"] == {"seconds": 60.0}  # consolidateAfter: 1m
    command = next(c for c in summary["disruptions"]["commands"] if name in c["nodes"])
    assert disrupted["atSeconds"] == command["atSeconds"]
    assert disrupted["method"] == command["method"] and disrupted["action"] == command["action"]
    times = [e["atSeconds"] for e in entries]
    assert times == sorted(times)
    # The same seed gives the same history, byte for byte; asking changes no decision.
    again = _simulate(tmp_path / "b", "-q", "--explain", "*")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "b" / "summary.json").read_text() == text
    plain = _simulate(tmp_path / "c", "-q")
    assert plain.exit_code == 0, plain.output
    summary.pop("explain")
    assert json.loads((tmp_path / "c" / "summary.json").read_text()) == summary

    table = _simulate(tmp_path / "d", "--explain", name)
    assert table.exit_code == 0, table.output
    shown = table.stdout.split(f"{name}: disruption verdict changes", 1)[1]
    assert "consolidateAfter (1m) has not passed" in shown and "disrupted" in shown
    assert list(json.loads((tmp_path / "d" / "summary.json").read_text())["explain"]) == [name]

    # several nodes: each one's history, as '*' gave it
    other = next(n for n in sorted(json.loads(text)["explain"]) if n != name)
    both = _simulate(tmp_path / "e", "-q", "--explain", name, "--explain", other)
    assert both.exit_code == 0, both.output
    explained = json.loads((tmp_path / "e" / "summary.json").read_text())["explain"]
    assert explained == {n: json.loads(text)["explain"][n] for n in sorted((name, other))}


def test_simulate_unknown_node_exits_2_naming_the_nodes(tmp_path):
    result = _simulate(tmp_path / "out", "-q", "--explain", "no-such-node")
    assert result.exit_code == 2
    assert "no node named 'no-such-node'" in result.output and "--explain '*'" in result.output


class _Run:
    """A policy's run as ``_check_explained`` reads it."""

    def __init__(self, joiner: bool, explained: list[str], seen: set[str]) -> None:
        self.joiner = joiner
        self._explained = explained
        self._seen = seen

    def explained_nodes(self) -> list[str]:
        return self._explained

    def node_names_seen(self) -> set[str]:
        return self._seen


def test_simulate_explain_of_a_cluster_autoscaler_node_says_it_has_no_verdicts(capsys):
    # A node of the cluster-autoscaler run of spec.compare used to draw "no node named".
    import typer

    from joiner.cli.simulate import _check_explained

    prepared = [
        ("joiner", _Run(True, ["karp-1"], {"karp-1"})),
        ("cluster-autoscaler", _Run(False, [], {"ca-node-7"})),
    ]
    with pytest.raises(typer.Exit) as info:
        _check_explained("ca-node-7", prepared)  # type: ignore[arg-type]
    assert info.value.exit_code == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "a node of the cluster-autoscaler run only" in said
    assert "Cluster Autoscaler's nodes have no disruption verdicts" in said
    assert "no node named" not in said
    with pytest.raises(typer.Exit):
        _check_explained("nowhere", prepared)  # type: ignore[arg-type]
    assert "no node named 'nowhere'" in " ".join(capsys.readouterr().err.split())
    _check_explained("karp-1", prepared)  # type: ignore[arg-type]


def test_simulate_explain_names_a_cluster_autoscaler_node_of_spec_compare(tmp_path):
    # The broad-bursty example compares Joiner with Cluster Autoscaler; --explain with a node
    # only the Cluster Autoscaler run had used to say "no node named".
    scenario = str(REPO / "examples" / "broad-bursty" / "scenario.yaml")
    first = runner.invoke(app, ["simulate", scenario, "-q", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    timeline = summary["policies"]["cluster-autoscaler"]["timeline"]
    node = next(e["node"] for e in timeline if e["kind"] == "scaleDown")
    args = ["simulate", scenario, "-q", "--out", str(tmp_path / "b"), "--explain", node]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"node '{node}' is a node of the cluster-autoscaler run only" in said
    assert "no node named" not in said


EKS_DUMP = REPO / "tests" / "fixtures" / "eks-cluster" / "dump.yaml"


def test_disrupt_explains_a_node_it_leaves_alone_instead_of_refusing():
    """A Node outside every NodePool is listed as left alone; --explain gives that verdict
    (candidate selection's, typed) and exits 0, in the table and in the JSON."""
    node = "ip-192-168-12-34.ec2.internal"
    result = runner.invoke(app, ["disrupt", "-f", str(EKS_DUMP), "--explain", node])
    assert result.exit_code == 0, result.output
    assert f"{node}: disruption verdict changes" in result.stdout
    assert "not managed by a NodePool" in result.stdout.split("verdict changes", 1)[1]
    doc = runner.invoke(app, ["disrupt", "-f", str(EKS_DUMP), "--explain", "*", "-o", "json"])
    assert doc.exit_code == 0, doc.output
    plan = json.loads(doc.stdout)
    jsonschema.validate(plan, _schema("disruption"))
    assert set(plan["explain"]) == {u["node"] for u in plan["unconsolidatable"]}
    entry = plan["explain"][node]["entries"][0]
    assert (entry["kind"], entry["method"], entry["outcome"]) == (
        "not-managed",
        "Candidates",
        "kept",
    )
    left = {u["node"]: u["reason"] for u in plan["unconsolidatable"]}
    assert entry["message"] == left[node]


def test_simulate_quiet_still_prints_the_table_of_a_node_asked_for_by_name(tmp_path):
    """Regression (newcomer): ``-q`` hid the table ``--explain NODE`` asks for."""
    first = _simulate(tmp_path / "all", "-q", "--explain", "*")
    assert first.exit_code == 0, first.output
    summary = json.loads((tmp_path / "all" / "summary.json").read_text())
    node = sorted(summary["explain"])[0]
    result = _simulate(tmp_path / "one", "-q", "--explain", node)
    assert result.exit_code == 0, result.output
    assert f"{node}: disruption verdict changes" in result.stdout
    assert "disruption verdict changes" not in first.stdout  # '*' goes to summary.json
