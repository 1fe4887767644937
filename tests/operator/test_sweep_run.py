"""Running sweeps on the local pool: rows as cells finish, a dead worker's cell retried, a
killed driver resumed, and the same cell giving the same summary in any process."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from joiner.api.errors import InputError
from joiner.operator.compare import run_policies
from joiner.operator.sweep.cell import summary_text
from joiner.operator.sweep.pool import LocalPool
from joiner.operator.sweep.results import read_rows
from joiner.operator.sweep.runner import run_sweep
from joiner.operator.sweep.spec import cell_scenario, dump_scenario, load_sweep
from joiner.sim.scenario import load_scenario
from tests.operator.sweeps import REPO, rows, small_sweep

JOINER = [sys.executable, "-m", "joiner.cli.main"]


def test_every_cell_gets_one_row_with_the_summary_simulate_would_write(tmp_path):
    plan = load_sweep(small_sweep(tmp_path))
    out = tmp_path / "r.jsonl"
    result = run_sweep(plan, out, LocalPool(2), "local")
    assert (result.ran, result.failed, result.total) == (4, (), 4)
    got = rows(out)
    assert [r["cellId"] for r in got] == sorted(c.cell_id for c in plan.cells)
    for r in got:
        assert r["error"] is None
        text = summary_text(r["summary"])
        assert r["summaryDigest"] == hashlib.sha256(text.encode()).hexdigest()
        assert r["summary"]["seed"] == r["seed"]
        assert r["metrics"]["cost"] == r["summary"]["cost"]["total"]
        assert r["metrics"]["podsLost"] == r["summary"]["pods"]["lost"]
    # The same cell run here, in this process, gives the same bytes.
    cell = plan.cells[-1]
    variant = plan.variants[cell.variant]
    with variant.bundle.materialized(dump_scenario(cell_scenario(variant, cell))) as sc:
        here = summary_text(run_policies(load_scenario(sc)).summary)
    row = next(r for r in got if r["cellId"] == cell.cell_id)
    assert hashlib.sha256(here.encode()).hexdigest() == row["summaryDigest"]
    assert json.loads(out.read_text().splitlines()[0])["run"]["backend"] == "local"


@pytest.mark.timeout(300)
def test_a_killed_worker_loses_only_its_cell_which_is_retried(tmp_path):
    plan = load_sweep(small_sweep(tmp_path, seeds=3, variants=1))
    killed: list[str] = []

    def kill_third(cell_id: str, pid: int) -> None:
        # The third dispatch goes to a worker that already ran a cell: it is mid-sweep.
        if len(killed) == 0 and cell_id == plan.cells[2].cell_id:
            os.kill(pid, signal.SIGKILL)
            killed.append(cell_id)

    out = tmp_path / "r.jsonl"
    result = run_sweep(plan, out, LocalPool(1, on_dispatch=kill_third), "local")
    assert killed == [plan.cells[2].cell_id]
    assert result.failed == ()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["cellId"] for r in lines) == sorted(c.cell_id for c in plan.cells)
    attempts = {r["cellId"]: r["run"]["attempts"] for r in lines}
    assert attempts == {c.cell_id: (2 if c.cell_id in killed else 1) for c in plan.cells}
    # The retried cell's summary is the one an undisturbed run gives.
    again = tmp_path / "again.jsonl"
    run_sweep(plan, again, LocalPool(1), "local")
    assert rows(out) == rows(again)


def test_a_cell_whose_worker_always_dies_is_reported_failed(tmp_path):
    plan = load_sweep(small_sweep(tmp_path, seeds=2, variants=1))
    victim = plan.cells[0].cell_id

    def kill(cell_id: str, pid: int) -> None:
        if cell_id == victim:
            os.kill(pid, signal.SIGKILL)

    out = tmp_path / "r.jsonl"
    result = run_sweep(plan, out, LocalPool(1, retries=1, on_dispatch=kill), "local")
    assert result.failed == (victim,)
    by_id = {r["cellId"]: r for r in read_rows(out)}
    assert "died 2 times" in by_id[victim]["error"]
    assert by_id[victim]["summary"] is None
    assert by_id[plan.cells[1].cell_id]["error"] is None


@pytest.mark.timeout(300)
def test_a_killed_driver_resumes_with_only_the_missing_cells(tmp_path):
    sweep = small_sweep(tmp_path, seeds=4, variants=2)
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    driver = subprocess.Popen(
        [*JOINER, "sweep", str(sweep), "-o", str(out), "-w", "1", "-q"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Wait for the first rows (bounded), then kill the driver mid-sweep.
        for _ in range(1200):
            if out.exists() and len(out.read_text().splitlines()) >= 2:
                break
            if driver.poll() is not None:
                pytest.fail(f"the sweep ended early: {driver.stderr.read().decode()}")
            time.sleep(0.1)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # its worker too
    done_before = {json.loads(line)["cellId"] for line in out.read_text().splitlines()}
    plan = load_sweep(sweep)
    assert 2 <= len(done_before) < len(plan.cells)
    # A write cut short by the kill leaves a partial line; --resume drops it.
    with out.open("a") as f:
        f.write('{"cellId": "as-published/joiner/x2000/se')

    ran: list[str] = []

    class Recording(LocalPool):
        def run(self, tasks, bundles):
            ran.extend(t.cell.cell_id for t in tasks)
            return super().run(tasks, bundles)

    result = run_sweep(plan, out, Recording(2), "local", resume=True)
    assert sorted(ran) == sorted(c.cell_id for c in plan.cells if c.cell_id not in done_before)
    assert result.skipped == len(done_before)
    final = read_rows(out)
    assert sorted(r["cellId"] for r in final) == sorted(c.cell_id for c in plan.cells)
    # Resuming a complete sweep runs nothing.
    ran.clear()
    assert run_sweep(plan, out, Recording(1), "local", resume=True).ran == 0
    assert ran == []


def test_resume_refuses_results_of_other_inputs(tmp_path):
    sweep = small_sweep(tmp_path, seeds=1, variants=1)
    out = tmp_path / "r.jsonl"
    run_sweep(load_sweep(sweep), out, LocalPool(1), "local")
    sweep.write_text(sweep.read_text().replace("duration: 20m", "duration: 21m"))
    with pytest.raises(InputError, match="other inputs"):
        run_sweep(load_sweep(sweep), out, LocalPool(1), "local", resume=True)
    with pytest.raises(InputError, match="--resume"):
        run_sweep(load_sweep(sweep), out, LocalPool(1), "local")


def test_resume_runs_again_a_row_whose_summary_or_metrics_were_edited(tmp_path):
    """--resume verifies each row's summary against its digest and its metrics against its
    summary: an edited row is run again (and counted), never kept."""
    sweep = small_sweep(tmp_path, seeds=2, variants=1)
    out = tmp_path / "r.jsonl"
    plan = load_sweep(sweep)
    run_sweep(plan, out, LocalPool(1), "local")
    lines = out.read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    first["metrics"]["cost"] = -5.0  # the report would average a negative cost in
    second["summary"]["cost"]["total"] = float("nan")
    second["metrics"] = None
    out.write_text("\n".join(json.dumps(r) for r in (first, second)) + "\n")
    result = run_sweep(plan, out, LocalPool(1), "local", resume=True)
    assert (result.altered, result.ran, result.skipped) == (2, 2, 0)
    final = {r["cellId"]: r for r in read_rows(out)}
    assert final[first["cellId"]]["metrics"]["cost"] > 0
    assert all(
        r["summaryDigest"] == hashlib.sha256(summary_text(r["summary"]).encode()).hexdigest()
        for r in final.values()
    )


@pytest.mark.timeout(300)
def test_cli_runs_and_reports_with_an_objective(tmp_path):
    sweep = small_sweep(tmp_path, seeds=2, variants=2)
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [*JOINER, "sweep", str(sweep), "-o", str(out), "-w", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "4 cells run" in run.stdout
    again = subprocess.run(
        [*JOINER, "sweep", str(sweep), "-o", str(out)], env=env, capture_output=True, text=True
    )
    assert again.returncode == 2 and "--resume" in again.stderr
    html = tmp_path / "report.html"
    objective = "minimise cost subject to p95 pending <= 600 s and pods lost == 0"
    rep = subprocess.run(
        [*JOINER, "sweep", "report", str(out), "--html", str(html), "--objective", objective],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rep.returncode == 0, rep.stderr
    assert "recommended:" in rep.stdout and "kind: NodePool" in rep.stdout
    page = html.read_text()
    assert "data:image/png;base64," in page and "Recommendation" in page
    assert "http://" not in page.replace("http://www.w3.org", "")
    impossible = subprocess.run(
        [
            *JOINER,
            "sweep",
            "report",
            str(out),
            "--html",
            str(html),
            "--objective",
            "minimise cost subject to cost < 0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert impossible.returncode == 1 and "no variant meets" in impossible.stderr


def test_a_cell_ships_every_file_its_scenario_names(tmp_path):
    """A Spot price history (and any other file the scenario names) travels with each cell:
    it once failed with "not found" in every cell though ``simulate`` ran the scenario."""
    import shutil

    import yaml

    seed = tmp_path / "seed"
    shutil.copytree(REPO / "examples" / "seed-spot", seed)
    (seed / "data").mkdir()
    history = {
        "SpotPriceHistory": [
            {
                "AvailabilityZone": "us-east-1a",
                "InstanceType": "c5.xlarge",
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": "0.0123",
                "Timestamp": "2025-01-05T00:00:00+00:00",
            }
        ]
    }
    (seed / "data" / "prices.json").write_text(json.dumps(history))
    doc = yaml.safe_load((seed / "scenario.yaml").read_text())
    doc["spec"].setdefault("cloud", {})["spotPriceHistory"] = "data/prices.json"
    doc["spec"]["duration"] = "10m"
    (seed / "scenario.yaml").write_text(yaml.safe_dump(doc))
    sweep = yaml.safe_load((seed / "sweep.yaml").read_text())
    sweep["spec"]["seeds"] = {"start": 1, "count": 1}
    sweep["spec"]["variants"] = sweep["spec"]["variants"][:1]
    (seed / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    plan = load_sweep(seed / "sweep.yaml")
    files = dict(plan.variants["as-published"].bundle.files)
    assert files["data/prices.json"] == (seed / "data" / "prices.json").read_text()
    result = run_sweep(plan, tmp_path / "r.jsonl", LocalPool(1), "local")
    assert result.failed == () and result.ran == 1


def test_resume_refuses_results_of_another_sweep(tmp_path):
    """The same cells and inputs under another sweep name are another sweep's results."""
    sweep = small_sweep(tmp_path, seeds=1, variants=1)
    out = tmp_path / "r.jsonl"
    run_sweep(load_sweep(sweep), out, LocalPool(1), "local")
    other = small_sweep(tmp_path, seeds=1, variants=1, name="other")
    with pytest.raises(InputError, match="of sweep 'small', not 'other'"):
        run_sweep(load_sweep(other), out, LocalPool(1), "local", resume=True)
