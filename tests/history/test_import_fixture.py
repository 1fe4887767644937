"""``joiner import --from-file`` on the committed day (``tests/fixtures/history/day``: the raw
responses a real Prometheus gave for a synthetic cluster's kube-state-metrics series, recorded
with ``benchmarks/history_week.py --record``), then ``joiner simulate`` of what it writes: the
summary is the golden one (``tests/golden/history-day/summary.json``, which ``python -m
joiner.testing.golden`` rewrites and ``--check`` checks)."""

from __future__ import annotations

import csv
import json

from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.testing import golden

FIXTURE = golden.HISTORY / "day"


def _import(out, spec):
    return CliRunner().invoke(
        app,
        [
            "import",
            "--from-file",
            str(FIXTURE / "responses"),
            "--start",
            spec["start"],
            "--end",
            spec["end"],
            "--step",
            spec["step"],
            "-f",
            str(FIXTURE / "dump.yaml"),
            "--out",
            str(out),
        ],
    )


def test_the_fixture_stays_small():
    size = sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file())
    assert size < 4 * 1024 * 1024


def test_import_from_file_then_simulate_gives_the_golden_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(golden.REPO)
    spec = json.loads((FIXTURE / "import.json").read_text(encoding="utf-8"))
    out = tmp_path / "imported"
    result = _import(out, spec)
    assert result.exit_code == 0, result.output
    # Every node the history saw is an as-run node, with its instance type and zone.
    node_info = json.loads((FIXTURE / "responses" / "node_info.json").read_text())
    seen = {s["metric"]["node"] for s in node_info["data"]["result"]}
    with (out / "as-run" / "nodes.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["node"] for r in rows} == seen
    assert all(r["instanceType"] and r["zone"] for r in rows)

    sim = tmp_path / "sim"
    result = CliRunner().invoke(
        app, ["simulate", str(out / "scenario.yaml"), "-q", "--out", str(sim)]
    )
    assert result.exit_code == 0, result.output
    actual = (sim / "summary.json").read_text(encoding="utf-8").replace(str(out), "<out>")
    assert set(json.loads(actual)["policies"]) == {"as-run", "joiner", "cluster-autoscaler"}
    expected = golden.golden_path("history-day").read_text(encoding="utf-8")
    assert actual == expected, (
        "the imported day decides differently from tests/golden/history-day/summary.json; if"
        " meant, run `python -m joiner.testing.golden history-day` and say why in the commit"
    )


def test_the_golden_module_renders_the_same_summary(monkeypatch):
    monkeypatch.chdir(golden.REPO)
    assert "history-day" in golden.cases()
    expected = golden.golden_path("history-day").read_text(encoding="utf-8")
    assert golden.render("history-day") == expected


def test_the_starting_cluster_is_not_a_scale_up(tmp_path, monkeypatch):
    """Pods bound at t=0 to the nodes the run starts from did not wait for new capacity: cut
    to 5 s (no node can boot), no policy reports a scale-up latency."""
    import yaml

    monkeypatch.chdir(golden.REPO)
    spec = json.loads((FIXTURE / "import.json").read_text(encoding="utf-8"))
    out = tmp_path / "imported"
    assert _import(out, spec).exit_code == 0
    scenario = yaml.safe_load((out / "scenario.yaml").read_text(encoding="utf-8"))
    scenario["spec"]["duration"] = "5s"
    scenario["spec"]["compare"] = ["joiner", "cluster-autoscaler"]
    del scenario["spec"]["asRun"]
    (out / "short.yaml").write_text(yaml.safe_dump(scenario), encoding="utf-8")
    sim = tmp_path / "sim"
    result = CliRunner().invoke(app, ["simulate", str(out / "short.yaml"), "-q", "--out", str(sim)])
    assert result.exit_code == 0, result.output
    summary = json.loads((sim / "summary.json").read_text(encoding="utf-8"))
    for name, run in summary["policies"].items():
        assert run["pods"]["scheduled"] > 0, name  # the starting pods are bound
        assert run["pods"]["scaleUpLatencySeconds"]["pods"] == 0, name
