"""``joiner advise``: Spot risk per NodePool, JSON and table, on the seed and a broad pool."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
DIVERSITY = REPO / "examples" / "spot-diversity"
SEED_FILES = [
    arg
    for name in ("provisioner.yaml", "awsnodetemplate.yaml", "deployment.yaml")
    for arg in ("-f", str(SEED / name))
]
runner = CliRunner()


def _advise(*args: str) -> dict:
    result = runner.invoke(app, ["advise", *args, "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    schema = json.loads((REPO / "docs" / "schemas" / "advice.schema.json").read_text())
    jsonschema.validate(doc, schema)
    return doc


def test_seed_files_report_the_single_pool_risk_with_expected_reclaims() -> None:
    doc = _advise(*SEED_FILES)
    (pool,) = doc["nodePools"]
    assert pool["name"] == "my-provisioner"
    assert pool["spotInstanceTypes"] == 1  # c6g.xlarge cannot launch (arm64)
    assert pool["spotPools"] == 5  # c5.xlarge in the us-east-1 zones offering it (no VPC)
    assert pool["nodes"] == pool["spotNodes"] == 7 and pool["pods"] == 20
    assert any(f.startswith("single-pool risk") and "c5.xlarge" in f for f in pool["findings"])
    # c5.xlarge in us-east-1 is in the <5% bucket: 2.5% of instances a month, per node.
    assert pool["expectedReclaimsPerMonth"] > 0
    per_node = pool["expectedReclaimsPerMonth"] / pool["nodes"]
    assert abs(per_node - 0.0253) < 0.001
    assert pool["podsDisruptedPerMonth"] > pool["expectedReclaimsPerMonth"]
    assert pool["costPerMonth"] > 0 and not doc["priceEstimated"]


def test_seed_scenario_table_names_the_risk_and_the_pool() -> None:
    result = runner.invoke(app, ["advise", "-f", str(SEED / "scenario.yaml")])
    assert result.exit_code == 0, result.output
    assert "Spot risk per NodePool" in result.output
    assert "expected reclaims / month" in result.output
    assert "single-pool risk" in result.output and "c5.xlarge/us-east-1" in result.output
    # The findings are the advice: on stdout, so `joiner advise ... > file` keeps them.
    assert "single-pool risk" in result.stdout


def test_estimated_prices_are_said_aloud_outside_packaged_regions() -> None:
    args = ["advise", *SEED_FILES, "--region", "ap-northeast-2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "prices are estimated" in result.output and "us-east-1" in result.output
    doc = _advise(*SEED_FILES, "--region", "ap-northeast-2")
    assert doc["priceEstimated"] and "ap-northeast-2" in doc["priceNote"]


def test_a_broad_nodepool_spreads_over_many_pools() -> None:
    doc = _advise("-f", str(DIVERSITY / "broad.yaml"))
    (pool,) = doc["nodePools"]
    assert pool["spotInstanceTypes"] >= 15 and pool["spotPools"] >= 60
    assert pool["findings"] == []
    narrow = _advise("-f", str(DIVERSITY / "narrow.yaml"))["nodePools"][0]
    assert [f.split(":")[0] for f in narrow["findings"]] == ["single-pool risk", "concentration"]
    # Same pods, same market: the broad pool expects fewer reclaims and disrupted pods.
    assert narrow["pods"] == pool["pods"] == 20
    assert pool["expectedReclaimsPerMonth"] < narrow["expectedReclaimsPerMonth"]
    assert pool["podsDisruptedPerMonth"] < narrow["podsDisruptedPerMonth"]


def test_simulate_says_estimated_prices_aloud_and_reports_reclaim_events(tmp_path) -> None:
    """ap-northeast-2 has no packaged on-demand table: the table, the summary and the HTML
    report say the prices are estimated and from where; the report lists reclaim events."""
    report = tmp_path / "report"
    args = ["simulate", str(DIVERSITY / "narrow.yaml"), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*args, "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "prices are estimated" in result.output and "us-east-1" in result.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["cost"]["pricesEstimated"]
    assert "ap-northeast-2" in summary["cost"]["priceNote"]
    events = summary["interruptions"]["reclaimEvents"]
    assert events and max(e["nodes"] for e in events) >= 3
    page = (report / "index.html").read_text()
    assert "Prices are estimated:" in page and "spot-pools" in page
    assert (report / "spot-pools.png").read_bytes().startswith(b"\x89PNG")
    rows = page.split("<h2>Spot reclaim events</h2>")[1]
    assert all(f"{e['instanceType']}/{e['zone']}" in rows for e in events)


def test_region_defaults_to_the_clusters_and_help_says_so(tmp_path) -> None:
    """Regression: advise defaulted --region to us-east-1, so its help showed that default
    and a dump of a cluster in another region failed as contradicting it; convert too."""
    for command in ("advise", "convert"):
        help_text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        assert "[default: us-east-1]" not in help_text
        assert "default: the cluster's" in help_text
    dump = REPO / "tests" / "fixtures" / "eks-cluster" / "dump.yaml"
    eu = tmp_path / "dump.yaml"
    eu.write_text(dump.read_text().replace("us-east-1", "eu-west-1"))
    assert _advise("-f", str(eu))["region"] == "eu-west-1"
    result = runner.invoke(app, ["convert", str(eu)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["advise", "-f", str(eu), "--region", "us-east-1"])
    assert result.exit_code == 2 and "contradicts the cluster" in result.output


def test_a_region_contradicting_the_scenario_is_an_error_not_ignored() -> None:
    """Regression: --region with a Scenario was ignored without a word (plan, advise,
    disrupt, lint ran in the Scenario's region whatever was given)."""
    scenario = str(SEED / "scenario.yaml")
    for args in (["advise", "-f"], ["plan", "-f"], ["disrupt", "-f"], ["lint"]):
        result = runner.invoke(app, [*args, scenario, "--region", "eu-west-1"])
        message = " ".join(result.output.split())
        assert result.exit_code == 2, (args, message)
        assert "--region eu-west-1 contradicts the Scenario, which runs in us-east-1" in message
    assert _advise("-f", scenario, "--region", "us-east-1")["region"] == "us-east-1"


def test_no_nodepool_is_an_error_not_an_empty_table() -> None:
    """The breaker's input: an app with no NodePool printed a table with no columns, exit 0."""
    app_only = ["-f", str(REPO / "examples" / "nightly-consolidation" / "app.yaml")]
    for extra in ([], ["-o", "json"]):
        result = runner.invoke(app, ["advise", *app_only, *extra])
        assert result.exit_code == 2
        assert "no NodePool or Provisioner in the manifests" in result.output


def test_advise_counts_the_nodes_a_nodepool_already_runs() -> None:
    """Regression: advise sized only one provisioning round, so a NodePool running three
    Spot nodes read as one node. The dump's running nodes (the one being deleted left out,
    the NodeClaim launched whose Node has not registered counted) are counted with their
    pods, beside the new NodeClaim."""
    dump = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "eks-cluster" / "dump.yaml"
    result = CliRunner().invoke(app, ["advise", "-f", str(dump), "-o", "json"])
    assert result.exit_code == 0, result.output
    (pool,) = json.loads(result.stdout)["nodePools"]
    assert pool["name"] == "default"
    assert pool["runningNodes"] == 4 and pool["nodes"] == 5
    assert sum(p["nodes"] for p in pool["pools"]) == 5
    assert "c5.2xlarge/us-east-1b" in {p["pool"] for p in pool["pools"]}  # in flight
    assert pool["pods"] > 1  # the running nodes' pods count, not only the new one's
    table = CliRunner().invoke(app, ["advise", "-f", str(dump)])
    assert "4 + 1" in table.stdout
