"""``as-run`` in ``spec.compare``: the nodes a cluster really ran (``spec.asRun``), priced at
the packaged on-demand prices and the Scenario's Spot price history (else the packaged Spot
estimate), clipped to the Scenario's duration, beside Joiner and Cluster Autoscaler."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.api.outputs import PolicyRun, SimulationSummary
from joiner.cli.main import app
from joiner.cloudprovider.catalog import Catalog, spot_price
from joiner.operator.compare import run_policies
from joiner.sim.asrun import as_run
from joiner.sim.htmlreport import comparison_rows
from joiner.sim.scenario import Scenario, load_scenario

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
NODES_HEADER = "node,instanceType,capacityType,zone,nodePool,startSeconds,endSeconds\n"
PODS_HEADER = "namespace,pod,createdSeconds,scheduledSeconds\n"
runner = CliRunner()


def _scenario(
    tmp_path: Path,
    nodes: str,
    pods: str | None = None,
    *,
    compare: str = "as-run",
    duration: str = "1h",
    extra: str = "",
) -> Path:
    """The seed example with ``spec.asRun`` naming ``nodes`` (and ``pods``) rows."""
    d = tmp_path / "sc"
    shutil.copytree(SEED, d, dirs_exist_ok=True)
    (d / "as-run").mkdir(exist_ok=True)
    (d / "as-run" / "nodes.csv").write_text(NODES_HEADER + nodes)
    as_run_spec = "  asRun:\n    nodes: as-run/nodes.csv\n"
    if pods is not None:
        (d / "as-run" / "pods.csv").write_text(PODS_HEADER + pods)
        as_run_spec += "    pods: as-run/pods.csv\n"
    text = (d / "scenario.yaml").read_text()
    text = text.replace("duration: 2h", f"duration: {duration}")
    text = text.replace(
        "  seed: 42\n", f"  seed: 42\n  compare: [{compare}]\n{as_run_spec}{extra}", 1
    )
    (d / "scenario.yaml").write_text(text)
    return d / "scenario.yaml"


def _as_run(path: Path) -> dict[str, Any]:
    sc = load_scenario(path)
    summary = as_run(sc, Catalog.load()).summary
    PolicyRun.model_validate(summary)
    return summary


def _od(instance_type: str) -> float:
    quote = Catalog.load().on_demand_price("us-east-1", instance_type)
    assert quote is not None
    return quote.price_per_hour


def _spot_estimate(instance_type: str) -> float:
    quote = Catalog.load().spot_quote("us-east-1", instance_type)
    assert quote is not None
    return spot_price(_od(instance_type), quote.savings_pct)


def _history(*rows: tuple[str, str]) -> dict[str, Any]:
    """A DescribeSpotPriceHistory output for c5.xlarge in us-east-1a: (price, HH:MM on
    2025-01-05 UTC) rows."""
    return {
        "SpotPriceHistory": [
            {
                "AvailabilityZone": "us-east-1a",
                "InstanceType": "c5.xlarge",
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": price,
                "Timestamp": f"2025-01-05T{at}:00+00:00",
            }
            for price, at in rows
        ]
    }


def _with_history(path: Path, history: dict[str, Any]) -> None:
    """Give the scenario at ``path`` a ``spec.cloud.spotPriceHistory`` of ``history``."""
    (path.parent / "history.json").write_text(json.dumps(history))
    text = path.read_text()
    path.write_text(text.replace("  cloud:\n", "  cloud:\n    spotPriceHistory: history.json\n", 1))


def test_seed_scenario_has_the_lines_this_file_edits():
    text = (SEED / "scenario.yaml").read_text()
    assert "  seed: 42\n" in text and "duration: 2h" in text and "\n  cloud:\n" in text


def test_on_demand_and_spot_without_a_history_are_priced_at_the_packaged_figures(tmp_path):
    s = _as_run(
        _scenario(
            tmp_path,
            "a,m5.large,on-demand,us-east-1a,default,0,3600\n"
            "b,c5.xlarge,spot,us-east-1b,default,0,1800\n"
            "r,m5.large,reserved,us-east-1a,,1800,\n",
        )
    )
    spot = _spot_estimate("c5.xlarge")
    assert spot < _od("c5.xlarge")
    # The reserved node counts as already paid for, as the simulation prices it.
    assert s["cost"]["total"] == pytest.approx(_od("m5.large") + spot * 0.5, abs=1e-6)
    assert s["cost"]["onDemandEquivalent"] == pytest.approx(
        _od("m5.large") * 1.5 + _od("c5.xlarge") * 0.5, abs=1e-6
    )
    assert s["nodeHours"] == {"spot": 0.5, "onDemand": 1.5}
    by_name = {n["name"]: n for n in s["nodes"]}
    assert by_name["b"]["pricePerHour"] == pytest.approx(spot)
    assert by_name["b"]["priceEstimated"] and not by_name["a"]["priceEstimated"]
    assert by_name["a"]["allocation"] is None and by_name["a"]["readyAtSeconds"] is None
    assert s["cost"]["pricesEstimated"]
    assert "packaged Spot estimate" in s["cost"]["priceNote"]
    assert "c5.xlarge" in s["cost"]["priceNote"]
    assert s["policy"]["name"] == "as-run"
    assert s["provisioning"] == {"passes": 0, "nodeClaimsCreated": 0, "launchFailures": 0}
    assert s["interruptions"]["count"] == 0 and not s["disruptions"]["commands"]
    assert by_name["r"]["pricePerHour"] == pytest.approx(_od("m5.large") / 1e7, abs=1e-6)
    (warning,) = [w for w in s["warnings"] if "reserved node" in w]
    assert "declares no reservation" in warning and warning.endswith(": r")


def test_a_reserved_node_in_a_declared_reservation_draws_no_warning(tmp_path):
    path = _scenario(tmp_path, "r,m5.large,reserved,us-east-1a,,0,\n")
    reservation = (
        "    capacityReservations:\n"
        "      - {id: cr-0a1b, instanceType: m5.large, zone: us-east-1a, instanceCount: 1}\n"
    )
    path.write_text(path.read_text().replace("  cloud:\n", "  cloud:\n" + reservation, 1))
    s = _as_run(path)
    assert s["cost"]["total"] == pytest.approx(_od("m5.large") / 1e7, abs=1e-6)
    assert s["cost"]["onDemandEquivalent"] == pytest.approx(_od("m5.large"))
    assert not [w for w in s["warnings"] if "reserved" in w]


def test_spot_nodes_follow_the_scenarios_price_history_over_their_lifetime(tmp_path):
    history = _history(("0.0500", "00:00"), ("0.0800", "00:30"))
    path = _scenario(
        tmp_path,
        # 00:15 to 00:45: a quarter hour at each price; the other in a pool without rows.
        "h,c5.xlarge,spot,us-east-1a,default,900,2700\ne,c5.xlarge,spot,us-east-1b,default,0,3600\n",
        extra="  startTime: 2025-01-05T00:00:00Z\n",
    )
    _with_history(path, history)
    s = _as_run(path)
    by_name = {n["name"]: n for n in s["nodes"]}
    assert by_name["h"]["pricePerHour"] == pytest.approx(0.065)
    assert not by_name["h"]["priceEstimated"]
    assert by_name["e"]["priceEstimated"]
    assert s["cost"]["total"] == pytest.approx(
        0.25 * 0.05 + 0.25 * 0.08 + _spot_estimate("c5.xlarge"), abs=1e-6
    )
    # Only the pool without rows is estimated, and the note says so.
    assert s["cost"]["pricesEstimated"] and "spotPriceHistory" in s["cost"]["priceNote"]


def test_spot_history_for_every_pool_leaves_nothing_estimated(tmp_path):
    history = _history(("0.0400", "00:10"))
    path = _scenario(
        tmp_path,
        "h,c5.xlarge,spot,us-east-1a,default,0,3600\n",
        extra="  startTime: 2025-01-05T00:00:00Z\n",
    )
    _with_history(path, history)
    s = _as_run(path)
    # Before the first row, the earliest row's price (as the simulated market reads it).
    assert s["cost"]["total"] == pytest.approx(0.04)
    assert not s["cost"]["pricesEstimated"] and s["cost"]["priceNote"] == ""


def test_unknown_instance_types_are_left_out_of_the_cost_and_named(tmp_path):
    s = _as_run(
        _scenario(
            tmp_path,
            "a,m5.large,on-demand,us-east-1a,default,0,3600\n"
            "x,,on-demand,us-east-1a,,0,1800\n"
            "z,zz9.huge,spot,us-east-1b,,0,3600\n",
        )
    )
    assert s["cost"]["total"] == pytest.approx(_od("m5.large"))
    assert s["nodeHours"] == {"spot": 1.0, "onDemand": 1.5}
    (warning,) = [w for w in s["warnings"] if "left out of the cost" in w]
    assert "2 nodes" in warning and "1.5 node-hours" in warning
    assert "x (no instanceType, 0.5 h)" in warning and "z (zz9.huge, 1.0 h)" in warning
    assert s["policy"]["stats"]["nodesUnpriced"] == 2


def test_unknown_capacity_type_is_priced_on_demand_with_a_warning(tmp_path):
    s = _as_run(_scenario(tmp_path, "u,c5.xlarge,,us-east-1a,,0,3600\n"))
    assert s["cost"]["total"] == pytest.approx(_od("c5.xlarge"))
    assert s["nodeHours"] == {"spot": 0.0, "onDemand": 1.0}
    assert any("without a capacity type" in w and w.endswith(": u") for w in s["warnings"])


def test_nodes_are_clipped_to_the_scenarios_duration(tmp_path):
    s = _as_run(
        _scenario(
            tmp_path,
            "running,m5.large,on-demand,us-east-1a,,0,\n"
            "past,m5.large,on-demand,us-east-1a,,1800,7200\n"
            "short,m5.large,on-demand,us-east-1a,,600,1200\n"
            "late,m5.large,on-demand,us-east-1a,,3600,\n",
        )
    )
    by_name = {n["name"]: n for n in s["nodes"]}
    assert sorted(by_name) == ["past", "running", "short"]
    assert by_name["running"]["deletedAtSeconds"] is None
    assert by_name["past"]["deletedAtSeconds"] is None
    assert by_name["short"]["deletedAtSeconds"] == 1200.0
    assert s["nodeHours"]["onDemand"] == pytest.approx(1 + 0.5 + 1 / 6, abs=1e-4)
    assert s["cost"]["total"] == pytest.approx(_od("m5.large") * (1 + 0.5 + 1 / 6), abs=1e-6)
    assert any("late" in w and "left out" in w for w in s["warnings"])
    kinds = [(e["atSeconds"], e["kind"], e["node"]) for e in s["timeline"]]
    assert kinds == [
        (0.0, "nodeStarted", "running"),
        (600.0, "nodeStarted", "short"),
        (1200.0, "nodeEnded", "short"),
        (1800.0, "nodeStarted", "past"),
    ]


def test_pending_percentiles_come_from_the_pods_created_in_the_range(tmp_path):
    pods = "".join(f"app,p{i},{i * 100},{i * 100 + 10 * i}\n" for i in range(1, 11))
    pods += "app,before,-50,20\napp,waiting,3000,\napp,after,3500,4000\n"
    s = _as_run(_scenario(tmp_path, "a,m5.large,on-demand,us-east-1a,,0,\n", pods))
    ps = s["pods"]["pendingSeconds"]
    # Waits 10..100 (nearest rank): p50 50, p95 100, max 100. "before" was created before the
    # start and "after" scheduled after the end: neither counts; "waiting" is pending.
    assert ps == {"p50": 50.0, "p95": 100.0, "max": 100.0}
    assert s["pods"]["scheduled"] == 11
    assert s["pods"]["pending"] == 2
    (warning,) = [w for w in s["warnings"] if "not scheduled by its end" in w]
    assert "2 pods" in warning and "app/waiting" in warning and "app/after" in warning


def test_without_pods_the_pending_time_is_zero_with_a_warning(tmp_path):
    s = _as_run(_scenario(tmp_path, "a,m5.large,on-demand,us-east-1a,,0,\n"))
    assert s["pods"]["pendingSeconds"] == {"p50": 0.0, "p95": 0.0, "max": 0.0}
    assert any("pending time could not be derived" in w for w in s["warnings"])


@pytest.mark.parametrize(
    ("row", "where", "message"),
    [
        ("a,m5.large,preemptible,us-east-1a,,0,", "line 2, column capacityType", "capacity"),
        ("a,m5.large,spot,us-east-1a,,-5,", "line 2, column startSeconds", "negative"),
        ("a,m5.large,spot,us-east-1a,,nan,", "line 2, column startSeconds", "not a number"),
        ("a,m5.large,spot,us-east-1a,,0,inf", "line 2, column endSeconds", "not a number"),
        ("a,m5.large,spot,us-east-1a,,100,50", "line 2, column endSeconds", "before"),
        ("a,m5.large,spot,us-east-1a,,,", "line 2, column startSeconds", "empty"),
        ("a,m5.large,spot,us-east-1a,,0", "line 2", "expected 7 columns"),
        (",m5.large,spot,us-east-1a,,0,", "line 2, column node", "empty"),
        (
            "a,m5.large,spot,us-east-1a,,0,\na,m5.large,spot,us-east-1a,,0,",
            "line 3, column node",
            "already listed on line 2",
        ),
        ("a,m5.large,spot,us-east-1a,,1e999,", "line 2, column startSeconds", "too large"),
    ],
)
def test_bad_node_rows_are_named_by_file_line_and_column(tmp_path, row, where, message):
    path = _scenario(tmp_path, row + "\n")
    with pytest.raises(InputError) as info:
        load_scenario(path)
    e = info.value
    assert e.file == str(path) and e.field == "spec.asRun.nodes"
    assert str(path.parent / "as-run" / "nodes.csv") in str(e)
    assert where in str(e) and message in str(e)


@pytest.mark.parametrize(
    ("row", "where"),
    [
        ("app,p,100,50", "line 2, column scheduledSeconds"),
        ("app,p,x,50", "line 2, column createdSeconds"),
        ("app,p,,50", "line 2, column createdSeconds"),
        ("app,,1,2", "line 2, column pod"),
        ("app,p,1,2\napp,p,3,4", "line 3, column pod"),
    ],
)
def test_bad_pod_rows_are_named_by_file_line_and_column(tmp_path, row, where):
    path = _scenario(tmp_path, "a,m5.large,spot,us-east-1a,,0,\n", row + "\n")
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert info.value.field == "spec.asRun.pods"
    assert "pods.csv" in str(info.value) and where in str(info.value)


def test_a_wrong_header_is_named(tmp_path):
    path = _scenario(tmp_path, "")
    (path.parent / "as-run" / "nodes.csv").write_text("node,type\na,b\n")
    with pytest.raises(InputError, match="header must be"):
        load_scenario(path)


def test_as_run_without_as_run_files_is_rejected(tmp_path):
    path = _scenario(tmp_path, "", compare="as-run, joiner")
    path.write_text(path.read_text().replace("  asRun:\n    nodes: as-run/nodes.csv\n", ""))
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert info.value.field == "spec.compare" and "spec.asRun" in str(info.value)


def test_as_run_files_without_as_run_are_not_read_and_warn(tmp_path):
    path = _scenario(tmp_path, "not,a,valid,row\n", compare="joiner")
    sc = load_scenario(path)
    assert sc.as_run is None
    assert any("spec.asRun" in w and "not in spec.compare" in w for w in sc.manifests.warnings)


def _three(tmp_path: Path) -> Scenario:
    path = _scenario(
        tmp_path,
        "a,c5.large,on-demand,us-east-1a,default,0,\nb,c5.xlarge,spot,us-east-1b,default,60,900\n",
        "default,web-1,0,30\ndefault,web-2,10,70\n",
        compare="as-run, joiner, cluster-autoscaler",
        duration="30m",
    )
    return load_scenario(path)


def test_compare_runs_the_three_side_by_side_with_the_monthly_difference(tmp_path):
    result = run_policies(_three(tmp_path))
    assert list(result.summaries) == ["as-run", "joiner", "cluster-autoscaler"]
    # The top level is the first simulated policy; policies keeps spec.compare's order.
    assert result.summary["policy"]["name"] == "joiner"
    assert list(result.summary["policies"]) == ["as-run", "joiner", "cluster-autoscaler"]
    SimulationSummary.model_validate(result.summary)
    rows = dict(comparison_rows(result.summaries))
    totals = [s["cost"]["total"] for s in result.summaries.values()]
    month = [t * 2 * 720 for t in totals]  # 30 minutes scaled to a 720-hour month
    assert rows["cost per month (USD, 720 h)"] == [f"{m:,.2f}" for m in month]
    assert rows["vs as-run per month (USD, 720 h)"] == [
        "-",
        f"{month[1] - month[0]:+,.2f}",
        f"{month[2] - month[0]:+,.2f}",
    ]
    assert rows["pod pending max (s)"][0] == "60.0"
    assert rows["interruptions"][0] == "n/a" and rows["interruptions"][1] != "n/a"


def test_the_same_input_gives_a_byte_identical_summary(tmp_path):
    first = json.dumps(run_policies(_three(tmp_path / "a")).summary, indent=2)
    second = json.dumps(run_policies(_three(tmp_path / "b")).summary, indent=2)
    assert first.replace(str(tmp_path / "a"), "") == second.replace(str(tmp_path / "b"), "")


def test_simulate_prints_and_reports_the_three_rows(tmp_path):
    path = _three(tmp_path).file
    out, report = tmp_path / "out", tmp_path / "report"
    result = runner.invoke(
        app,
        ["simulate", path, "--out", str(out), "--report", str(report)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    for text in ("as-run", "joiner", "cluster-autoscaler", "vs as-run per month (USD, 720 h)"):
        assert text in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policies"]["as-run"]["policy"]["name"] == "as-run"
    page = (report / "index.html").read_text()
    assert "<th>as-run</th><th>joiner</th><th>cluster-autoscaler</th>" in page
    assert "vs as-run per month (USD, 720 h)" in page and "720-hour month" in page


def test_as_run_alone_runs_no_simulation(tmp_path):
    sc = load_scenario(_scenario(tmp_path, "a,m5.large,on-demand,us-east-1a,,0,\n"))
    result = run_policies(sc)
    assert result.runs == {} and result.summary["policy"]["name"] == "as-run"
    assert "policies" not in result.summary


def test_peak_windows_count_the_recorded_pods_created_in_them(tmp_path):
    pods = "app,early,60,70\napp,in-1,700,705\napp,in-2,800,900\napp,in-never,850,\n"
    path = _scenario(
        tmp_path,
        "a,m5.large,on-demand,us-east-1a,,0,\n",
        pods,
        extra="  startTime: 2025-01-06T00:00:00Z\n"
        "  report: {windows: [{name: rush, start: '00:10', duration: 10m}]}\n",
    )
    s = _as_run(path)
    assert s["windows"] == {
        "rush": {"pods": 2, "pendingSeconds": {"p50": 5.0, "p95": 100.0, "max": 100.0}}
    }
