"""Cron schedules as Kubernetes and Karpenter read them (robfig/cron v3's ``ParseStandard``):
five fields (minute, hour, day of month, month, day of week) or a macro such as ``@daily``,
in UTC; a CronJob may also say ``@every <Go duration>`` (robfig/cron ``parseDescriptor``;
Karpenter's NodePool CRD pattern allows only the other macros in a budget's schedule).
A ``TZ=``/``CRON_TZ=`` prefix is refused as the API server refuses it in a new CronJob
(kubernetes pkg/apis/batch/validation ``validateScheduleFormat``: use ``spec.timeZone``).
croniter does the arithmetic; this module rejects what robfig/cron would not parse
(``L``, ``W``, ``#``, croniter's random ``R``/``H``, a sixth seconds field) and schedules
that can never fire (``0 0 30 2 *``), so a bad schedule is an input error, not a crash.
croniter is imported by ``check_schedule`` alone: the manifest loader imports this module,
and most manifests carry no schedule.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from joiner.api import durations
from joiner.api.errors import InputError

#: robfig/cron's constant-delay descriptor, with its one space.
EVERY = "@every "
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_FIELD = re.compile(r"[0-9A-Za-z*?/,#-]+", re.ASCII)
_UNSUPPORTED = re.compile(r"(?:^|[^A-Za-z])(?:L|W|R|H)(?:$|[^A-Za-z])|#|[0-9]L|L[0-9]|[0-9]W")
#: Years a schedule is evaluated in; outside them date arithmetic overflows.
MIN_YEAR, MAX_YEAR = 1971, 9000


_FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: Each field's (minimum, maximum, names) as robfig/cron v3 bounds them (parser.go).
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, {m: i for i, m in enumerate(_MONTHS, start=1)}),
    (0, 6, {d: i for i, d in enumerate(_DAYS)}),
)


def _range_problem(part: str, low: int, high: int, names: dict[str, int]) -> str | None:
    """Why robfig/cron's ``getRange`` refuses one field (each comma-separated range of
    it), or None. croniter reads more than robfig: a reversed range (``5-1``, ``FRI-MON``)
    as one that wraps around, a day of week 7 as Sunday; the API server refuses both."""
    for expr in part.split(","):
        problem = _expr_problem(expr, low, high, names)
        if problem is not None:
            return f"{expr!r} {problem}"
    return None


def _expr_problem(expr: str, low: int, high: int, names: dict[str, int]) -> str | None:
    range_and_step = expr.split("/")
    if len(range_and_step) > 2:
        return "has too many slashes"
    if len(range_and_step) == 2 and not _int(range_and_step[1]):
        return "needs a positive step"
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        return None
    if len(low_high) > 2:
        return "has too many hyphens"
    ends = [names[v.lower()] if v.lower() in names else _int(v) for v in low_high]
    if None in ends:
        return f"is not a number{' or a name' if names else ''}"
    start, end = ends[0] or 0, ends[-1] or 0
    if len(range_and_step) == 2 and len(low_high) == 1:
        end = high
    if start < low:
        return f"starts below its minimum {low}"
    if end > high:
        return f"ends above its maximum {high}"
    if start > end:
        return "starts after it ends (a range does not wrap around)"
    return None


def _int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _check_spaces(text: str, value: str, *, field: str, every: bool) -> None:
    """Refuse the spaces robfig/cron refuses: around a macro, inside @every's duration."""
    # robfig/cron matches a macro, and reads @every's duration, as written: " @daily",
    # "@daily " and "@every  1h" are refused by the API server.
    if value.startswith("@") and value != text:
        raise InputError(
            f"{text!r}: no spaces around a macro (robfig/cron reads it as written)", field=field
        )
    if every and value.startswith(EVERY) and any(c.isspace() for c in value[len(EVERY) :]):
        raise InputError(
            f"{value[len(EVERY) :]!r} is not a Go duration (no spaces: 90s, 10m, 1h30m)",
            field=field,
        )


def check_schedule(text: str, *, field: str, every: bool = False) -> str:
    """Return the schedule stripped, or raise. ``every``: ``@every <duration>`` is allowed
    (a CronJob's schedule).

    Raises:
        InputError: not five fields or a macro, a construct robfig/cron does not support, a
            time zone prefix, or a schedule that never fires; ``field`` names where it came
            from.
    """
    from croniter import CroniterBadDateError, croniter

    value = text.strip()
    fields = value.split()
    if "TZ" in value:
        raise InputError(
            f"{text!r}: cannot use TZ or CRON_TZ in the schedule; use spec.timeZone instead",
            field=field,
        )
    _check_spaces(text, value, field=field, every=every)
    if every and value.startswith(EVERY):
        every_seconds(value, field=field)
        return value
    if value.startswith("@"):
        if value not in _MACROS:
            macros = [*_MACROS, "@every <duration>"] if every else _MACROS
            raise InputError(
                f"{text!r} is not a supported macro ({', '.join(macros)})", field=field
            )
    elif len(fields) != 5 or not all(_FIELD.fullmatch(f) for f in fields):
        raise InputError(
            f"{text!r} is not a cron schedule (five fields such as '0 9 * * 1-5', or a macro "
            "such as '@daily')",
            field=field,
        )
    elif any(_UNSUPPORTED.search(f) for f in fields):
        raise InputError(
            f"{text!r} uses L, W, #, R or H, which Kubernetes and Karpenter's cron parser do "
            "not support",
            field=field,
        )
    if not value.startswith("@"):
        for name, part, bounds in zip(_FIELD_NAMES, fields, _BOUNDS, strict=True):
            problem = _range_problem(part, *bounds)
            if problem is not None:
                raise InputError(
                    f"{text!r} is not a valid cron schedule: {name} {problem}", field=field
                )
    if not croniter.is_valid(value):
        raise InputError(f"{text!r} is not a valid cron schedule", field=field)
    try:
        croniter(value, datetime(2025, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterBadDateError as exc:
        raise InputError(f"{text!r} never fires (no such date)", field=field) from exc
    return value


def every_seconds(value: str, *, field: str = "spec.schedule") -> int | None:
    """The delay of an ``@every <duration>`` schedule in whole seconds, None for another
    schedule. As robfig/cron ``Every``: a delay under one second is one second, and
    fractions of a second are dropped (``@every 90.5s`` fires every 90 s).

    Raises:
        InputError: the text after ``@every`` is not a Go duration.
    """
    if not value.startswith(EVERY):
        return None
    text = value[len(EVERY) :]
    if text.startswith("-"):  # time.ParseDuration takes a sign; Every makes it one second
        durations.parse_seconds(text[1:], field=field)
        return 1
    seconds = durations.parse_seconds(text, field=field)
    assert seconds is not None  # Never is not allowed here
    return max(1, int(seconds))


def check_time_zone(name: str | None, *, field: str) -> str | None:
    """An IANA time zone name as a CronJob's ``spec.timeZone`` takes it (None: UTC).

    Raises:
        InputError: not a time zone the system's tz database knows.
    """
    if name is None:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InputError(
            f"unknown time zone {name!r} (use an IANA name such as Europe/Paris)", field=field
        ) from exc
    return name


def check_instant(value: datetime, *, field: str) -> datetime:
    """A timezone-aware instant in UTC within the years schedules are evaluated in.

    Raises:
        InputError: no time zone, or a year outside 1971-9000.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise InputError("give a time zone, e.g. 2025-01-06T09:30:00Z", field=field)
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise InputError(
            f"{value.isoformat()} is outside the years {MIN_YEAR}-{MAX_YEAR}", field=field
        )
    return value.astimezone(UTC)
