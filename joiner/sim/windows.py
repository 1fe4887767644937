"""Peak windows: ``spec.report.windows`` names stretches of the day (a booking rush) and
the summary reports how long the pods created in each waited
(``summary.windows.<name>.pendingSeconds``).

A window's ``start`` is a UTC time of day (``"08:00"``, ``"08:00:30"``): the window recurs
every day of the run, from the scenario's ``startTime``. Only pods of priority 0 or more
count: pods of negative priority are overprovisioning placeholders (headroom), not demand.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from joiner.api import durations
from joiner.api.errors import InputError
from joiner.sim.report import percentile
from joiner.state.cluster import ClusterState

_TIME_OF_DAY = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$")


class WindowSpec(BaseModel):
    """One ``spec.report.windows`` entry."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    start: str = Field(description="UTC time of day, HH:MM or HH:MM:SS; recurs daily")
    duration: str = Field(description="Go duration, at most 24h, e.g. 30m")


class ReportSpec(BaseModel):
    """``spec.report``: extra figures for the summary."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    windows: list[WindowSpec] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Window:
    """A named window as run-time intervals ``[start, end)`` in seconds."""

    name: str
    intervals: tuple[tuple[float, float], ...]


def resolve(spec: ReportSpec, start: datetime, duration_s: float) -> tuple[Window, ...]:
    """The windows in run time (one interval per day the run covers).

    Raises:
        InputError: a bad time of day or duration, or two windows with one name.
    """
    out: list[Window] = []
    for i, w in enumerate(spec.windows):
        where = f"spec.report.windows[{i}]"
        if any(o.name == w.name for o in out):
            raise InputError(f"window name {w.name!r} is used twice", field=f"{where}.name")
        found = _TIME_OF_DAY.match(w.start)
        if found is None:
            raise InputError(
                f"{w.start!r} is not a UTC time of day (HH:MM or HH:MM:SS)",
                field=f"{where}.start",
            )
        length = durations.parse_seconds(w.duration, field=f"{where}.duration")
        if not length or length > 86400:
            raise InputError("must be more than 0 and at most 24h", field=f"{where}.duration")
        hh, mm, ss = (int(g or 0) for g in found.groups())
        midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
        first = midnight + timedelta(hours=hh, minutes=mm, seconds=ss)
        offset = (first - start).total_seconds()
        days = range(-1, math.ceil(duration_s / 86400) + 1)
        intervals = tuple(
            (max(0.0, a), min(duration_s, a + length))
            for d in days
            if (a := offset + d * 86400) < duration_s and a + length > 0
        )
        out.append(Window(w.name, intervals))
    return tuple(out)


def summarize(
    state: ClusterState, duration_s: float, windows: tuple[Window, ...]
) -> dict[str, dict[str, object]]:
    """``summary.windows``: per window, the pods created in it (priority >= 0) and their
    pending seconds (creation to binding; still pending at the end: the wait so far)."""
    out: dict[str, dict[str, object]] = {}
    for w in windows:
        waits: list[float] = []
        for p in state.pods.values():
            if p.daemon or p.template.priority_value < 0:
                continue
            if not any(a <= p.created_at_s < b for a, b in w.intervals):
                continue
            if p.bound_at_s is not None:
                waits.append(p.bound_at_s - p.created_at_s)
            elif p.deleted_at_s is None:
                waits.append(duration_s - p.created_at_s)
        out[w.name] = {
            "pods": len(waits),
            "pendingSeconds": {
                "p50": round(percentile(waits, 0.50), 3),
                "p95": round(percentile(waits, 0.95), 3),
                "max": round(max(waits) if waits else 0.0, 3),
            },
        }
    return out
