"""Budget arithmetic, cron windows, budget parsing, do-not-disrupt values, feature gates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from joiner.api import durations
from joiner.api.errors import InputError
from joiner.api.featuregates import parse
from joiner.api.manifests import models as m
from joiner.api.manifests.convert import budgets
from joiner.api.objects import DEFAULT_BUDGETS, DisruptionBudget, NodeClassRef, NodePool, Source
from joiner.api.requirements import Requirements
from joiner.controllers.disruption.budgets import allowed, is_active, next_change
from joiner.state.cluster import Pod


@pytest.mark.parametrize(
    ("nodes", "total", "want"),
    [("10%", 11, 2), ("10%", 10, 1), ("10%", 1, 1), ("0%", 50, 0), ("100%", 7, 7), (3, 100, 3)],
)
def test_percentages_round_up(nodes, total, want):
    assert DisruptionBudget(nodes).allowed(total) == want


WEEKDAY_NINE_TO_FIVE = DisruptionBudget(0, schedule="0 9 * * 1-5", duration_s=8 * 3600)


@pytest.mark.parametrize(
    ("when", "active"),
    [
        (datetime(2025, 1, 6, 8, 59, tzinfo=UTC), False),  # Monday before 9
        (datetime(2025, 1, 6, 9, 0, tzinfo=UTC), True),
        (datetime(2025, 1, 6, 16, 59, tzinfo=UTC), True),
        (datetime(2025, 1, 6, 17, 0, tzinfo=UTC), False),  # the window is [9:00, 17:00)
        (datetime(2025, 1, 11, 12, 0, tzinfo=UTC), False),  # Saturday
        (datetime(2025, 1, 10, 12, 0, tzinfo=UTC), True),  # Friday
    ],
)
def test_cron_window(when, active):
    assert is_active(WEEKDAY_NINE_TO_FIVE, when) is active


def test_window_crossing_midnight():
    late = DisruptionBudget(0, schedule="0 22 * * *", duration_s=4 * 3600)
    assert is_active(late, datetime(2025, 1, 7, 1, 30, tzinfo=UTC))
    assert not is_active(late, datetime(2025, 1, 7, 2, 0, tzinfo=UTC))


def test_next_change_is_the_next_window_edge():
    at = datetime(2025, 1, 6, 10, 0, tzinfo=UTC)
    assert next_change((WEEKDAY_NINE_TO_FIVE,), at) == datetime(2025, 1, 6, 17, 0, tzinfo=UTC)
    assert next_change((DisruptionBudget("10%"),), at) is None


def _pool(*bs: DisruptionBudget) -> NodePool:
    return NodePool(
        name="p",
        requirements=Requirements(),
        node_class_ref=NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "d"),
        source=Source("f", "NodePool", "p", "karpenter.sh/v1"),
        budgets=bs or DEFAULT_BUDGETS,
    )


def test_allowed_is_the_minimum_of_active_budgets_naming_the_reason():
    at = datetime(2025, 1, 6, 9, 30, tzinfo=UTC)
    pool = _pool(
        DisruptionBudget("50%"),
        DisruptionBudget(1, reasons=("Drifted",)),
        DisruptionBudget(0, schedule="0 9 * * 1-5", duration_s=3600, reasons=("Empty",)),
    )
    assert allowed(pool, "Underutilized", 10, at) == 5
    assert allowed(pool, "Drifted", 10, at) == 1
    assert allowed(pool, "Empty", 10, at) == 0
    later = datetime(2025, 1, 6, 10, 0, tzinfo=UTC)  # the 1h window is over
    assert allowed(pool, "Empty", 10, later) == 5


def test_default_budget_is_ten_percent():
    assert budgets([], "spec.disruption.budgets") == (DisruptionBudget("10%"),)


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"nodes": "150%"}, "budgets[0].nodes", "percentage"),
        ({"nodes": "-1"}, "budgets[0].nodes", "node count"),
        ({"nodes": "1", "schedule": "@daily"}, "budgets[0].duration", "together"),
        ({"nodes": "1", "duration": "1h"}, "budgets[0].schedule", "together"),
        ({"nodes": "1", "schedule": "61 * * * *", "duration": "1h"}, "schedule", "cron"),
        ({"nodes": "1", "schedule": "@daily", "duration": "1d"}, "duration", "hours"),
        ({"nodes": "1", "schedule": "@daily", "duration": "30s"}, "duration", "hours"),
        ({"nodes": "1", "reasons": ["Expired"]}, "budgets[0].reasons[0]", "unknown reason"),
        # The CRD's patterns allow no blanks (the API server refuses " 10%").
        ({"nodes": " 10%"}, "budgets[0].nodes", "percentage"),
        ({"nodes": "1", "schedule": "@daily", "duration": " 1h"}, "duration", "hours"),
    ],
)
def test_bad_budgets_are_located(raw, field, words):
    with pytest.raises(InputError) as exc:
        budgets([m.Budget.model_validate(raw)], "spec.disruption.budgets")
    assert field in (exc.value.field or "")
    assert words in str(exc.value)


def test_good_budget_is_read():
    (b,) = budgets(
        [
            m.Budget.model_validate(
                {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "1h30m", "reasons": []}
            )
        ],
        "x",
    )
    assert b == DisruptionBudget(0, "0 9 * * mon-fri", 5400.0, ())


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, (False, None)),
        ("true", (True, None)),
        ("30m", (False, 1800.0)),
        ("yes", (False, None)),
    ],
)
def test_do_not_disrupt_values(value, want):
    assert durations.do_not_disrupt(value) == want


def test_do_not_disrupt_duration_expires_after_the_pod_started():
    p = Pod("u", "ns", "n", template=None, owner="x", created_at_s=0, order=1)  # type: ignore[arg-type]
    p.bound_at_s = 100.0
    p.do_not_disrupt_for_s = 60.0
    assert p.blocks_disruption(159.0)
    assert not p.blocks_disruption(160.0)


def test_feature_gates():
    assert parse("SpotToSpotConsolidation=true").spot_to_spot_consolidation
    assert not parse("SpotToSpotConsolidation=false").spot_to_spot_consolidation
    assert not parse("").spot_to_spot_consolidation
    for bad, words in [
        ("SpotToSpot=true", "unknown feature gate"),
        ("SpotToSpotConsolidation", "Name=true"),
        ("SpotToSpotConsolidation=yes", "is not a boolean"),
    ]:
        with pytest.raises(InputError, match=words):
            parse(bad)


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ("0 0 30 2 *", "never fires"),
        ("0 0 L * *", "L, W, #, R or H"),
        ("0 0 * * 1#2", "L, W, #, R or H"),
        ("R R * * *", "L, W, #, R or H"),
        ("0 0 0 * * *", "five fields"),
        ("@every 5m", "macro"),
        # robfig/cron refuses these; croniter read them (a wrapped range, 7 as Sunday).
        ("5-1 * * * *", "does not wrap around"),
        ("0 22 * * FRI-MON", "does not wrap around"),
        ("0 0 * * 7", "maximum 6"),
        ("0 24 * * *", "maximum 23"),
        ("0 0 0 * *", "minimum 1"),
        ("1-2-3 * * * *", "too many hyphens"),
    ],
)
def test_unsupported_or_impossible_schedules_are_input_errors(schedule, words):
    """Regression (breaker): '0 0 30 2 *' crashed with CroniterBadDateError."""
    raw = {"nodes": "0", "schedule": schedule, "duration": "1h"}
    with pytest.raises(InputError, match=words) as exc:
        budgets([m.Budget.model_validate(raw)], "spec.disruption.budgets")
    assert exc.value.field == "spec.disruption.budgets[0].schedule"


def test_bool_nodes_is_rejected():
    with pytest.raises(ValidationError):
        m.Budget.model_validate({"nodes": True})
