"""Sweep report: objective syntax, statistics across seeds, Pareto front, recommendation."""

from __future__ import annotations

import hashlib
import math

import pytest

from joiner.api.errors import InputError
from joiner.operator.sweep.cell import summary_text
from joiner.operator.sweep.report import groups, parse_objective, recommend
from joiner.operator.sweep.results import metrics, row_problem


def _summary(cost, p95, lost, reclaims):
    """The parts of a summary.json the sweep's metrics come from."""
    return {
        "cost": {"total": cost},
        "pods": {"pendingSeconds": {"p95": p95}, "lost": lost},
        "interruptions": {"byKind": {"notice": reclaims}},
    }


def _row(variant, seed, cost, p95, lost=0, reclaims=0, policy="joiner", failed=False):
    summary = None if failed else _summary(cost, p95, lost, reclaims)
    return {
        "cellId": f"{variant}/{policy}/x1/seed-{seed}",
        "variant": variant,
        "policy": policy,
        "interruptionRateMultiplier": 1.0,
        "seed": seed,
        "metrics": None if summary is None else metrics(summary),
        "summary": summary,
        "summaryDigest": None
        if summary is None
        else hashlib.sha256(summary_text(summary).encode()).hexdigest(),
        "error": "input error: boom" if failed else None,
        "nodePoolsYaml": f"kind: NodePool\nmetadata: {{name: {variant}}}\n",
    }


def test_objective_syntax():
    o = parse_objective("minimise cost subject to p95 pending <= 60 s and pods lost == 0")
    assert o.metric == "cost" and o.minimise
    assert [(c.metric, c.op, c.value) for c in o.constraints] == [
        ("pendingP95Seconds", "<=", 60.0),
        ("podsLost", "==", 0.0),
    ]
    o = parse_objective("max reclaims where podsLost < 1, cost <= 2.5 USD")
    assert not o.minimise and o.metric == "reclaims" and len(o.constraints) == 2
    assert parse_objective("min cost").constraints == ()


@pytest.mark.parametrize("text", ["cheapest", "minimise speed", "min cost subject to cost ~ 3"])
def test_bad_objectives_name_the_option(text):
    with pytest.raises(InputError) as info:
        parse_objective(text)
    assert info.value.field == "--objective"


def test_percentiles_across_seeds_and_pareto_front():
    rows = [_row("a", s, cost=float(s), p95=10.0) for s in range(1, 21)]
    rows += [_row("b", s, cost=5.0, p95=5.0) for s in range(1, 21)]
    rows += [_row("c", s, cost=20.0, p95=1.0) for s in range(1, 21)]
    rows += [_row("d", s, cost=30.0, p95=30.0) for s in range(1, 21)]
    gs = {g.variant: g for g in groups(rows)}
    a = gs["a"].stats["cost"]
    assert (a.median, round(a.p5, 2), round(a.p95, 2)) == (10.5, 1.95, 19.05)
    assert {v for v, g in gs.items() if g.pareto} == {"b", "c"}  # a: dominated by b; d by all
    assert gs["a"].seeds == 20


def test_recommendation_needs_every_seed_to_meet_the_constraints():
    rows = [_row("cheap", s, cost=1.0, p95=30.0, lost=1 if s == 7 else 0) for s in range(20)]
    rows += [_row("mid", s, cost=2.0, p95=50.0) for s in range(20)]
    rows += [_row("slow", s, cost=0.5, p95=90.0) for s in range(20)]
    rows += [_row("broken", s, cost=0.1, p95=1.0, failed=s == 3) for s in range(20)]
    rec = recommend(
        rows, parse_objective("minimise cost subject to p95 pending <= 60 and pods lost == 0")
    )
    assert (rec.variant, rec.policy, rec.value) == ("mid", "joiner", 2.0)
    assert "mid" in (rec.node_pools_yaml or "")
    assert "seed-7" in rec.rejected["cheap / joiner"]
    assert "pendingP95Seconds <= 60" in rec.rejected["slow / joiner"]
    assert "failed" in rec.rejected["broken / joiner"]
    none = recommend(rows, parse_objective("minimise cost subject to cost < 0"))
    assert none.variant is None and len(none.rejected) == 4


def test_an_edited_row_is_neither_reported_nor_recommended():
    """A row whose metrics were edited after the run (a negative cost), or whose summary no
    longer matches its digest, counts as failed: its variant cannot be recommended."""
    edited = [_row("cheap", s, cost=10.0, p95=5.0) for s in range(1, 4)]
    edited[1]["metrics"] = {**edited[1]["metrics"], "cost": -1000.0}
    honest = [_row("honest", s, cost=20.0, p95=5.0) for s in range(1, 4)]
    assert row_problem(edited[1]) == "its metrics are not those of its summary"
    resummarised = _row("cheap", 9, cost=10.0, p95=5.0)
    resummarised["summary"]["cost"]["total"] = -1000.0
    resummarised["metrics"] = metrics(resummarised["summary"])
    assert row_problem(resummarised) == "its summary does not match its summaryDigest"
    gs = {g.variant: g for g in groups(edited + honest)}
    assert (gs["cheap"].seeds, gs["cheap"].failed) == (2, 1)
    assert gs["cheap"].stats["cost"].median == 10.0
    rec = recommend(edited + honest, parse_objective("minimise cost"))
    assert rec.variant == "honest"
    assert rec.rejected["cheap / joiner"] == (
        "1 cell failed (e.g. cheap/joiner/x1/seed-2: its metrics are not those of its summary)"
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, None])
def test_a_cost_that_is_not_a_finite_number_is_never_recommended(bad):
    rows = [_row("nan", 1, cost=bad, p95=5.0), _row("ok", 1, cost=50.0, p95=5.0)]
    assert "not a finite number" in (row_problem(rows[0]) or "")
    rec = recommend(rows, parse_objective("minimise cost"))
    assert rec.variant == "ok"
    assert math.isnan(next(g for g in groups(rows) if g.variant == "nan").stats["cost"].median)


def test_the_pareto_front_matches_the_definition_on_ties_and_nan():
    """The O(n log n) front equals the definition's O(n^2) check on points with repeated
    coordinates, exact duplicates (neither dominates the other) and NaN (never on it)."""
    import random

    from joiner.operator.sweep.report import _pareto

    rng = random.Random(7)
    for _ in range(200):
        points = [
            (float(rng.randint(0, 5)), float(rng.randint(0, 5))) for _ in range(rng.randint(0, 12))
        ]
        points += [(math.nan, 1.0)] * rng.randint(0, 1)
        valid = [not (math.isnan(x) or math.isnan(y)) for x, y in points]
        expected = {
            i
            for i, (x, y) in enumerate(points)
            if valid[i]
            and not any(
                valid[j] and x2 <= x and y2 <= y and (x2 < x or y2 < y)
                for j, (x2, y2) in enumerate(points)
            )
        }
        assert _pareto(points) == expected, points


def _traceback_row(variant, seed):
    row = _row(variant, seed, 0, 0, failed=True)
    row["error"] = 'Traceback (most recent call last):\n  File "x.py"\nZeroDivisionError: boom\n'
    return row


def _failing_rows():
    edited = _row("c", 1, 1.0, 10)
    edited["summary"]["cost"]["total"] = -5.0  # edited after its digest
    return [
        _row("a", 1, 1.0, 10),
        _row("b", 1, 0, 0, failed=True),
        _row("b", 2, 0, 0, failed=True),
        _row("b", 3, 0, 0, failed=True),
        _row("b", 4, 0, 0, failed=True),
        _traceback_row("d", 1),
        edited,
    ]


def test_failed_cells_are_grouped_by_their_reason():
    from joiner.operator.sweep.report import failure_lines, failures

    found = failures(_failing_rows())
    assert [(f.reason, len(f.cells)) for f in found] == [
        ("the cell failed: input error: boom", 4),
        ("its summary does not match its summaryDigest", 1),
        ("the cell failed: ZeroDivisionError: boom", 1),
    ]
    assert failure_lines(found, shown=3)[0] == (
        "4 failed cells (the cell failed: input error: boom): b/joiner/x1/seed-1, "
        "b/joiner/x1/seed-2, b/joiner/x1/seed-3 and 1 more"
    )
    assert failure_lines(found[1:2]) == [
        "1 failed cell (its summary does not match its summaryDigest): c/joiner/x1/seed-1"
    ]
    rec = recommend(_failing_rows(), parse_objective("minimise cost"))
    assert rec.rejected["b / joiner"] == (
        "4 cells failed (e.g. b/joiner/x1/seed-1: the cell failed: input error: boom)"
    )


def test_the_report_says_why_each_cell_failed(tmp_path):
    # The report counted failed cells without saying why, in the table, the page and JSON.
    import json
    from pathlib import Path

    import jsonschema
    from typer.testing import CliRunner

    from joiner.cli.main import app

    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({**r, "sweep": "s"}) + "\n" for r in _failing_rows()))
    html = tmp_path / "report.html"
    args = ["sweep", "report", str(results), "--html", str(html)]
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "failed: 4 failed cells (the cell failed: input error: boom)" in table.output
    assert "and 1 more" in table.output
    assert "failed: 1 failed cell (the cell failed: ZeroDivisionError: boom)" in table.output
    verbose = CliRunner().invoke(app, [*args, "-v"])
    assert "b/joiner/x1/seed-4" in verbose.output
    page = html.read_text(encoding="utf-8")
    assert "Failed cells" in page and "its summary does not match its summaryDigest" in page
    doc = json.loads(CliRunner().invoke(app, [*args, "-o", "json"]).stdout)
    schema_path = Path(__file__).parents[2] / "docs" / "schemas" / "sweep-report.schema.json"
    jsonschema.validate(doc, json.loads(schema_path.read_text()))
    assert doc["failures"][0] == {
        "reason": "the cell failed: input error: boom",
        "count": 4,
        "cells": [f"b/joiner/x1/seed-{s}" for s in range(1, 5)],
    }
    assert {g["variant"]: g["failed"] for g in doc["groups"]} == {"a": 0, "b": 4, "d": 1, "c": 1}


def test_the_pareto_plot_names_a_bounded_number_of_groups():
    # Each group was drawn and named by a call of its own: 2,000 groups took 40 CPU seconds
    # and 20,000 ran for many minutes. Past MAX_PLOT_LABELS only the front's cheapest are named.
    from joiner.operator.sweep.report import MAX_PLOT_LABELS, pareto_png, plot_named

    few = groups([_row(f"v{i}", 1, cost=1.0 + i, p95=10.0 - i) for i in range(5)])
    assert plot_named(few) == few
    rows = [_row(f"v{i:03d}", 1, cost=1.0 + i, p95=100.0 - i % 50) for i in range(120)]
    gs = groups(rows)
    named = plot_named(gs)
    assert len(named) == MAX_PLOT_LABELS
    assert all(g.pareto for g in named)
    assert [g.variant for g in named] == sorted(g.variant for g in gs if g.pareto)[:MAX_PLOT_LABELS]
    assert pareto_png(gs).startswith(b"\x89PNG")


def _results(path, rows):
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _report(*args, stdin=None):
    from typer.testing import CliRunner

    from joiner.cli.main import app

    return CliRunner().invoke(app, ["sweep", "report", *map(str, args)], input=stdin)


def test_results_from_standard_input_write_no_html_unless_asked(tmp_path, monkeypatch):
    """``sweep report -`` wrote a file literally named ``-.html`` in the current directory."""
    import json

    from tests.operator.sweeps import results_row

    monkeypatch.chdir(tmp_path)
    text = json.dumps(results_row()) + "\n"
    result = _report("-", stdin=text)
    assert result.exit_code == 0, result.output
    assert "report written" not in result.output
    assert list(tmp_path.iterdir()) == []
    doc = json.loads(_report("-", "-o", "json", stdin=text).stdout)
    assert doc["html"] is None and doc["sweep"] == "s"
    assert list(tmp_path.iterdir()) == []
    asked = _report("-", "--html", "page.html", stdin=text)
    assert asked.exit_code == 0, asked.output
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_rows_of_two_sweeps_are_refused_naming_them_and_the_lines(tmp_path):
    """A row of another sweep was merged into the report silently."""
    from tests.operator.sweeps import results_row

    rows = [results_row(cellId=f"a/joiner/x1/seed-{s}", seed=s) for s in range(1, 9)]
    rows[1] = {**rows[1], "sweep": "other-sweep"}
    results = _results(tmp_path / "mixed.jsonl", rows)
    result = _report(results)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "2 sweeps" in message and "'other-sweep' (line 2)" in message
    assert "'s' (lines 1, 3, 4, 5, 6 and 2 more)" in message
    assert not (tmp_path / "mixed.html").exists()


def test_a_fractional_seed_is_not_a_whole_number(tmp_path):
    from tests.operator.sweeps import results_row

    result = _report(_results(tmp_path / "r.jsonl", [results_row(seed=1.5)]))
    assert result.exit_code == 2, result.output
    assert "has seed 1.5, not a whole number" in " ".join(result.output.split())


def test_the_html_page_goes_into_missing_directories_or_names_its_path(tmp_path):
    from tests.operator.sweeps import results_row

    results = _results(tmp_path / "r.jsonl", [results_row()])
    page = tmp_path / "missing" / "dir" / "x.html"
    result = _report(results, "--html", page)
    assert result.exit_code == 0, result.output
    assert page.is_file()
    blocked = tmp_path / "r.jsonl" / "x.html"  # under a file: cannot be written
    result = _report(results, "--html", blocked)
    assert result.exit_code == 2, result.output
    assert str(blocked) in "".join(result.output.split())


def test_a_default_html_path_over_the_results_says_it_is_the_default(tmp_path):
    """Results named ``res.html`` made the default page path the results themselves; the
    refusal named --html, which the user never gave."""
    from tests.operator.sweeps import results_row

    results = _results(tmp_path / "res.html", [results_row()])
    before = results.read_text()
    result = _report(results)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "default HTML path" in message and "give --html PATH" in message
    assert "field --html" not in message
    assert results.read_text() == before


def test_each_standard_input_is_read_afresh(tmp_path, monkeypatch):
    """Standard input was read once per process: a second command run in the same process
    (as a test runner's are) got the first one's bytes, here an empty input's."""
    import json

    from tests.operator.sweeps import results_row

    monkeypatch.chdir(tmp_path)
    assert _report("-", stdin="").exit_code == 2
    text = json.dumps(results_row()) + "\n"
    second = _report("-", "-o", "json", stdin=text)
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["sweep"] == "s"
