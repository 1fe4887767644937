"""Go duration strings (``720h``, ``1h30m``, ``90s``) as Karpenter and Kubernetes write them.

Parsing is durationpy's; the literal ``Never`` (Karpenter's ``NillableDuration``) maps to
``None``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import durationpy

from joiner.api.errors import InputError

NEVER = "Never"

#: Go's duration units in nanoseconds (``time.unitMap``), longest match first in ``_UNITS``.
_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_UNITS = "|".join(_UNIT_NS)
#: Go's time.ParseDuration grammar without a sign (negative durations are never valid here):
#: "0", or one or more decimal numbers each with a unit.
_GO_DURATION = re.compile(rf"0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:{_UNITS}))+", re.ASCII)

#: Go's largest ``time.Duration``: int64 nanoseconds (``math.MaxInt64``), 2562047h47m16.854775807s.
#: ``time.ParseDuration`` refuses anything longer ("invalid duration").
GO_MAX_DURATION_NS = (1 << 63) - 1


def parse_seconds(
    value: object, *, field: str | None = None, allow_never: bool = False
) -> float | None:
    """Parse a Go duration into seconds; ``Never`` gives ``None`` when ``allow_never``.

    Integers are taken as seconds (legacy ``ttlSeconds*`` fields).

    Raises:
        InputError: not a Go duration, negative, longer than Go's largest duration
            (``GO_MAX_DURATION_NS``, as ``time.ParseDuration`` refuses it), or ``Never``
            where it is not allowed.
    """
    if isinstance(value, bool):
        raise InputError(f"{value!r} is not a duration", field=field)
    if isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds):
            raise InputError(f"{value!r} is not a finite duration", field=field)
    elif isinstance(value, str):
        text = value.strip()
        if text == NEVER:
            if allow_never:
                return None
            raise InputError(
                "'Never' is not allowed here; give a duration such as 10m", field=field
            )
        if text.startswith("-") and _GO_DURATION.fullmatch(text[1:]):
            raise InputError(f"duration {value!r} is negative", field=field)
        if not _GO_DURATION.fullmatch(text):
            raise InputError(
                f"{value!r} is not a Go duration (examples: 90s, 10m, 6h, 720h, 1h30m; units "
                "ns, us, ms, s, m, h)",
                field=field,
            )
        try:
            seconds = durationpy.from_str(text).total_seconds()
        except Exception as exc:  # durationpy raises its own DurationError and ValueError
            raise InputError(
                f"{value!r} is not a Go duration (examples: 90s, 10m, 6h, 720h, 1h30m)",
                field=field,
            ) from exc
        if _nanoseconds(text) > GO_MAX_DURATION_NS:
            raise InputError(
                f"duration {value!r} is longer than Go's largest (2562047h47m16.854775807s, "
                "about 292 years); use Never for no limit where the field allows it",
                field=field,
            )
    else:
        raise InputError(f"{value!r} is not a duration", field=field)
    if seconds < 0:
        raise InputError(f"duration {value!r} is negative", field=field)
    return seconds


_PART = re.compile(rf"([0-9]*(?:\.[0-9]*)?)({_UNITS})", re.ASCII)


def _nanoseconds(text: str) -> int:
    """A Go duration matching ``_GO_DURATION`` in whole nanoseconds, exactly (durationpy's
    answer is rounded to microseconds, which cannot tell Go's largest duration from one
    nanosecond more). Fractions of a nanosecond are dropped, as Go drops them."""
    if text == "0":
        return 0
    total = Fraction(0)
    for number, unit in _PART.findall(text):
        total += Fraction(number) * _UNIT_NS[unit]
    return int(total)


def format_seconds(seconds: float) -> str:
    """A Go-style duration for messages: ``7200`` -> ``2h``, ``5400`` -> ``1h30m``,
    ``90.5`` -> ``1m30.5s``."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{int(hours)}h"
    if minutes:
        out += f"{int(minutes)}m"
    if secs:
        out += f"{secs:g}s"
    return out


def do_not_disrupt(value: str | None) -> tuple[bool, float | None]:
    """Read a ``karpenter.sh/do-not-disrupt`` annotation value.

    Returns ``(always, for_s)``: ``"true"`` protects always; a Go duration (``"30m"``)
    protects that long after the pod starts running (Karpenter's rule); anything else,
    including absence, protects nothing, as in Karpenter. The value is compared as written
    (no whitespace is stripped): ``"true "`` protects nothing (Karpenter
    pkg/utils/pod/scheduling.go IsDoNotDisruptActive compares ``== "true"`` and hands the rest
    to ``time.ParseDuration``, which accepts no spaces).
    """
    if value is None:
        return False, None
    text = value
    if text == "true":
        return True, None
    if _GO_DURATION.fullmatch(text):
        try:
            return False, durationpy.from_str(text).total_seconds()
        except Exception:  # durationpy's own errors: treat as not a duration
            return False, None
    return False, None


def parse_required_seconds(value: object, *, field: str | None = None) -> float:
    """Parse a Go duration that must be finite (``Never`` is rejected)."""
    seconds = parse_seconds(value, field=field, allow_never=False)
    assert seconds is not None
    return seconds
