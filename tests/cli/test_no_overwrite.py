"""No command writes over a file it was given as input: every command that writes a file is
run with that output pointed at one of its inputs, and must exit 2 naming it, the input
left byte for byte as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from tests.operator.sweeps import results_row, small_sweep

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
runner = CliRunner()


def _refused(args: list[str], victim: Path) -> str:
    """Run ``joiner ARGS``; assert exit 2 with the located message and ``victim`` intact."""
    before = victim.read_bytes()
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "would be written over an input of this command" in result.output
    assert victim.read_bytes() == before
    return result.output


def _seed(tmp_path: Path, scenario_name: str) -> Path:
    """The seed example copied under ``tmp_path``, its Scenario file renamed."""
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst)
    scenario = dst / scenario_name
    (dst / "scenario.yaml").rename(scenario)
    return scenario


def test_simulate_out_over_its_scenario(tmp_path):
    scenario = _seed(tmp_path, "summary.json")  # --out DIR writes DIR/summary.json
    out = _refused(["simulate", str(scenario), "--out", str(scenario.parent)], scenario)
    assert "--out" in out


def test_simulate_out_over_a_manifest_it_names(tmp_path):
    scenario = _seed(tmp_path, "scenario.yaml")
    manifest = scenario.parent / "deployment.yaml"
    manifest.rename(scenario.parent / "summary.json")
    text = scenario.read_text().replace("deployment.yaml", "summary.json")
    scenario.write_text(text)
    victim = scenario.parent / "summary.json"
    _refused(["simulate", str(scenario), "--out", str(scenario.parent)], victim)


@pytest.mark.parametrize("name", ["index.html", "nodes.png"])
def test_simulate_report_over_its_scenario(tmp_path, name):
    scenario = _seed(tmp_path, "scenario.yaml")
    report = tmp_path / "report"
    report.mkdir()
    (report / name).symlink_to(scenario)  # another spelling of the same file
    out = _refused(
        ["simulate", str(scenario), "--out", str(tmp_path / "out"), "--report", str(report)],
        scenario,
    )
    assert "--report" in out


def test_sweep_results_over_the_sweep_or_its_scenario(tmp_path):
    sweep = small_sweep(tmp_path, seeds=1, variants=1)
    _refused(["sweep", "run", str(sweep), "-o", str(sweep), "-q", "--overwrite"], sweep)
    linked = tmp_path / "scenario-link.yaml"
    linked.symlink_to(SEED / "scenario.yaml")
    _refused(["sweep", "run", str(sweep), "-o", str(linked), "-q", "--overwrite"], linked)


def _results(path: Path) -> Path:
    path.write_text(json.dumps(results_row()) + "\n")
    return path


def test_sweep_report_over_its_results(tmp_path):
    results = _results(tmp_path / "results.jsonl")
    _refused(["sweep", "report", str(results), "--html", str(results)], results)
    # The default report path is RESULTS with .html: the results themselves when so named.
    named = _results(tmp_path / "results.html")
    out = _refused(["sweep", "report", str(named)], named)
    assert "--html" in out


def test_controller_report_over_its_kubeconfig(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    args = ["run", "--kubeconfig", str(kubeconfig), "--cloud", "simulated", "--dry-run"]
    args += ["--report", str(kubeconfig)]
    _refused(args, kubeconfig)


def test_import_out_over_its_dump(tmp_path):
    fixture = REPO / "tests" / "fixtures" / "history" / "day"
    spec = json.loads((fixture / "import.json").read_text())
    out = tmp_path / "out"
    out.mkdir()
    dump = out / "objects.yaml"  # the name the import writes its objects to
    shutil.copy(fixture / "dump.yaml", dump)
    args = [
        "import",
        "--from-file",
        str(fixture / "responses"),
        "--start",
        spec["start"],
        "--end",
        spec["end"],
        "--step",
        spec["step"],
        "-f",
        str(dump),
        "--out",
        str(out),
        "--force",
    ]
    before = dump.read_bytes()
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "objects.yaml" in result.output and dump.read_bytes() == before


def test_import_save_responses_over_its_dump(tmp_path):
    # The index of the saved responses is queries.json: a dump so named in the directory
    # would be replaced by it. Refused before Prometheus is asked (nothing listens there).
    saved = tmp_path / "saved"
    saved.mkdir()
    dump = saved / "queries.json"
    shutil.copy(REPO / "tests" / "fixtures" / "history" / "day" / "dump.yaml", dump)
    args = ["import", "--prometheus", "http://127.0.0.1:9", "-f", str(dump)]
    args += ["--start", "2026-11-23T00:00:00Z", "--end", "2026-11-23T01:00:00Z"]
    out = _refused([*args, "--out", str(tmp_path / "out"), "--save-responses", str(saved)], dump)
    assert "--save-responses" in out
