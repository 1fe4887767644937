"""``joiner simulate`` with ``spec.compare`` and ``--report``: the side-by-side table, the
summary's ``policies``, byte-reproducibility, and the HTML page rendered by a real browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
runner = CliRunner()


def _compare_scenario(tmp_path: Path, policies: str = "joiner, cluster-autoscaler") -> Path:
    d = tmp_path / "sc"
    shutil.copytree(SEED, d)
    text = (d / "scenario.yaml").read_text()
    text = text.replace("  seed: 42\n", f"  seed: 42\n  compare: [{policies}]\n")
    text = text.replace("duration: 2h", "duration: 30m")
    (d / "scenario.yaml").write_text(text)
    return d / "scenario.yaml"


def test_compare_prints_the_side_by_side_table_and_writes_policies(tmp_path):
    import jsonschema

    path = _compare_scenario(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for label in (
        "total cost (USD)",
        "cost vs all-on-demand",
        "spot node-hours",
        "on-demand node-hours",
        "pod pending p95 (s)",
        "pods lost",
        "interruptions",
        "disruption commands",
        "scale-up latency p95 (s)",
    ):
        assert label in result.output
    assert "cluster-autoscaler" in result.output
    # The CA configuration used is stated under the table.
    assert "Cluster Autoscaler: " in result.output and "expander priority,least-waste" in (
        " ".join(result.output.split())
    )
    summary = json.loads((out / "summary.json").read_text())
    schema = json.loads((REPO / "docs" / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(summary, schema)
    assert summary["policy"]["name"] == "joiner"
    assert set(summary["policies"]) == {"joiner", "cluster-autoscaler"}
    ca = summary["policies"]["cluster-autoscaler"]
    assert ca["policy"]["parameters"]["expander"] == "priority,least-waste"
    assert {n["nodePool"] for n in ca["nodes"]} == {"my-provisioner"}


def test_compare_reports_the_first_policy_at_the_top_and_runs_cost_optimal(tmp_path):
    """``spec.compare`` accepts ``cost-optimal`` (Joiner with ``packing: cost-optimal``); the
    first entry is the summary's top level."""
    path = _compare_scenario(tmp_path, "cost-optimal, joiner")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"]["name"] == "cost-optimal"
    assert summary["policy"]["parameters"]["packing"] == "cost-optimal"
    assert list(summary["policies"]) == ["cost-optimal", "joiner"]
    joiner = summary["policies"]["joiner"]
    assert "packing" not in joiner["policy"]["parameters"]  # the default, as before
    assert summary["cost"]["total"] <= joiner["cost"]["total"] + 1e-6
    assert summary["pods"]["lost"] == 0


def test_scenario_packing_setting_is_validated(tmp_path):
    path = _compare_scenario(tmp_path)
    text = path.read_text().replace("  seed: 42\n", "  seed: 42\n  settings: {packing: best}\n")
    path.write_text(text)
    result = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "spec.settings.packing" in result.output


def test_compare_runs_are_byte_identical_across_hash_seeds(tmp_path):
    path = _compare_scenario(tmp_path)
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"out{hash_seed}"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "joiner.cli.main",
                "simulate",
                str(path),
                "--out",
                str(out),
                "-q",
            ],
            check=True,
            env=dict(os.environ, PYTHONHASHSEED=hash_seed),
            cwd=REPO,
            capture_output=True,
        )
        outputs.append((out / "summary.json").read_bytes())
    assert outputs[0] == outputs[1]


def test_report_writes_a_self_contained_page_and_the_pngs(tmp_path):
    path = _compare_scenario(tmp_path)
    report = tmp_path / "report"
    result = runner.invoke(
        app, ["simulate", str(path), "--out", str(tmp_path / "o"), "--report", str(report), "-q"]
    )
    assert result.exit_code == 0, result.output
    page = (report / "index.html").read_text()
    assert "Cluster Autoscaler: " in page and "MixedInstancesPolicy" in page
    for name in ("nodes", "cost", "pending", "pending-cdf", "spot-pools"):
        png = (report / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG")
    assert page.count('src="data:image/png;base64,') == 5
    assert "<h2>Spot reclaim events</h2>" in page
    # No network: nothing is loaded from anywhere else.
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "scaleDownUnneededTimeSeconds" in page  # every parameter is listed


def _chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    proc = subprocess.run(
        ["apt-get", "install", "-y", "chromium"], capture_output=True, text=True, check=False
    )
    found = shutil.which("chromium")
    if proc.returncode != 0 or not found:
        pytest.fail(
            "chromium is needed to check the report renders and could not be installed: "
            f"apt-get exited {proc.returncode}: {proc.stderr.strip()[-500:]}"
        )
    return found


def test_report_plots_render_in_headless_chromium(tmp_path):
    path = _compare_scenario(tmp_path)
    report = tmp_path / "report"
    result = runner.invoke(
        app, ["simulate", str(path), "--out", str(tmp_path / "o"), "--report", str(report), "-q"]
    )
    assert result.exit_code == 0, result.output
    chromium = _chromium()
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                (report / "index.html").as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The page's own script counts the images the browser decoded with a non-zero width.
    assert 'data-plots-rendered="5"' in proc.stdout
    assert 'data-plots-expected="5"' in proc.stdout
