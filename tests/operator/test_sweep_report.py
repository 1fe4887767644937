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
    assert rec.rejected["cheap / joiner"].startswith("1 cells failed")


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
