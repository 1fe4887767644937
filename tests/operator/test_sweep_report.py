"""Sweep report: objective syntax, statistics across seeds, Pareto front, recommendation."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.operator.sweep.report import groups, parse_objective, recommend


def _row(variant, seed, cost, p95, lost=0, reclaims=0, policy="joiner", failed=False):
    return {
        "cellId": f"{variant}/{policy}/x1/seed-{seed}",
        "variant": variant,
        "policy": policy,
        "interruptionRateMultiplier": 1.0,
        "seed": seed,
        "metrics": None
        if failed
        else {"cost": cost, "pendingP95Seconds": p95, "podsLost": lost, "reclaims": reclaims},
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
