"""With the as-run record compared, ``summary.json`` gives each policy's cost per 720-hour
month and its difference from the as-run record's, the figures the table prints as "cost
per month" and "vs as-run per month" (``sim.report.with_month_figures``)."""

from __future__ import annotations

import pytest

from joiner.sim.report import cost_per_month, with_month_figures


def _run(total: float, seconds: float) -> dict[str, object]:
    return {"durationSeconds": seconds, "cost": {"total": total, "currency": "USD"}}


def test_each_policy_gets_its_month_and_its_difference_from_as_run() -> None:
    day = 86_400.0
    got = with_month_figures(
        {
            "as-run": _run(30.0, day),
            "joiner": _run(12.0, day),
            "cluster-autoscaler": _run(33.0, day),
        },
        "as-run",
    )
    assert got["as-run"]["cost"]["perMonth"] == pytest.approx(900.0)
    assert "vsAsRunPerMonth" not in got["as-run"]["cost"]
    assert got["joiner"]["cost"]["perMonth"] == pytest.approx(360.0)
    assert got["joiner"]["cost"]["vsAsRunPerMonth"] == pytest.approx(-540.0)
    assert got["cluster-autoscaler"]["cost"]["vsAsRunPerMonth"] == pytest.approx(90.0)
    assert list(got) == ["as-run", "joiner", "cluster-autoscaler"]


def test_the_inputs_are_left_as_they_were() -> None:
    runs = {"as-run": _run(1.0, 3600.0), "joiner": _run(2.0, 3600.0)}
    with_month_figures(runs, "as-run")
    assert runs["joiner"]["cost"] == {"total": 2.0, "currency": "USD"}


def test_a_run_of_no_duration_costs_nothing_a_month() -> None:
    assert cost_per_month(_run(5.0, 0.0)) == 0.0
