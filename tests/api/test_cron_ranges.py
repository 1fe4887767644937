"""A CronJob's schedule is read as robfig/cron v3 (the API server) reads it: each field's
ranges inside its bounds and not reversed; croniter alone read ``5-1`` as a range that
wraps around and a day of week 7 as Sunday, so the simulation ran schedules Kubernetes
refuses."""

from __future__ import annotations

import pytest

from joiner.api.cron import check_schedule
from joiner.api.errors import InputError


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        ("5-1 * * * *", "minute '5-1' starts after it ends"),
        ("0 22-2 * * *", "hour '22-2' starts after it ends"),
        ("0 0 * DEC-JAN *", "month 'DEC-JAN' starts after it ends"),
        ("0 0 * * 7", "day of week '7' ends above its maximum 6"),
        ("0 0 * * 0-7", "ends above its maximum 6"),
        ("60 * * * *", "minute '60' ends above its maximum 59"),
        ("0 0 32 * *", "day of month '32' ends above"),
        ("0 0 * 0 *", "month '0' starts below its minimum 1"),
        ("1-5/0 * * * *", "needs a positive step"),
        ("1/2/3 * * * *", "too many slashes"),
        ("0 0 * * FOO", "not a number or a name"),
    ],
)
def test_schedules_robfig_refuses_are_input_errors(schedule, words):
    with pytest.raises(InputError, match=words) as exc:
        check_schedule(schedule, field="spec.schedule", every=True)
    assert exc.value.field == "spec.schedule"


@pytest.mark.parametrize(
    "schedule",
    [
        "0 9 * * 1-5",
        "0 0 * * MON-FRI",
        "0 0 * * sun",
        "*/15 * * * *",
        "5/10 * * * *",
        "1-5/2 * * * *",
        "0-59/1000 * * * *",
        "0 0 1 JAN,jul *",
        "0 0 1-31 1-12 0-6",
        "0 0 29 2 *",
        "@daily",
    ],
)
def test_schedules_robfig_reads_are_kept(schedule):
    assert check_schedule(schedule, field="spec.schedule", every=True) == schedule


@pytest.mark.parametrize(
    "schedule", ["@daily ", " @hourly", "@every  1h", "@every 1h ", "@every 1h\n"]
)
def test_spaces_around_a_macro_are_refused_as_robfig_refuses_them(schedule):
    with pytest.raises(InputError, match="no spaces"):
        check_schedule(schedule, field="spec.schedule", every=True)
