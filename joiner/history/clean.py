"""Messy series made usable, each case counted in ``HistoryWarnings`` with what was assumed.

- ``normalise``: samples out of time order are sorted; duplicate timestamps keep the last
  sample given.
- ``fill_gaps``: a missing step (a scrape gap, or a Prometheus outage) between two samples
  is held at the last value when the gap is at most ``hold_s`` long; a longer gap is left
  absent. Series that start or end inside the range are not gaps: they stay as they are.
  A range query already carries a plain selector's last sample forward for the lookback
  delta (5 minutes by default; prometheus/prometheus promql/engine.go), so a scrape gap
  shows in its result only for what is left of it after that: a 10-minute scrape gap is
  5 minutes of missing steps.
- ``undo_resets`` / ``counter_increases``: a counter that drops (its process restarted)
  is read as having counted from 0 again, as PromQL does (prometheus/prometheus
  promql/functions.go, ``extrapolatedRate``: a sample below the previous one adds the
  previous value to the result).
- ``span``: whether a series starts after the range's first step or ends before its last
  (the translation decides what that means: a pod created, a node removed).

Nothing is filled or dropped without a count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import gt, lt

from joiner.history.series import HistoryWarnings, QueryRange, Series

__all__ = [
    "HOLD_S",
    "Span",
    "counter_increases",
    "fill_gaps",
    "normalise",
    "series_subject",
    "span",
    "undo_resets",
]

#: How long a missing stretch is held at the last value by default: Prometheus's own
#: default lookback delta (prometheus/prometheus cmd/prometheus/main.go,
#: ``--query.lookback-delta`` default 5m).
HOLD_S = 300.0

#: Labels named first in a series' subject, when it has them.
_KEY_LABELS = ("namespace", "pod", "node", "deployment", "statefulset", "daemonset", "job_name")


def series_subject(name: str, labels: Mapping[str, str]) -> str:
    """A short name for a series in messages: ``name{namespace="a",pod="b"}``.

    The well-known object labels come first; at most four labels are shown.
    """
    keys = [k for k in _KEY_LABELS if k in labels]
    keys += sorted(k for k in labels if k not in keys)
    shown = ",".join(f'{k}="{labels[k]}"' for k in keys[:4])
    more = "..." if len(keys) > 4 else ""
    return f"{name}{{{shown}{more}}}"


def normalise(series: Series, subject: str, warnings: HistoryWarnings) -> Series:
    """``series`` with its samples in time order and one sample per timestamp.

    Out-of-order input is sorted (stably) and counted once per series as "series with
    samples out of order"; each duplicate timestamp keeps the sample given last and counts
    one "duplicate sample". Returns ``series`` itself when it is already clean.
    """
    times, values = series.times_s, series.values
    ordered = all(map(lt, times, times[1:]))
    if ordered:
        return series
    if any(map(gt, times, times[1:])):
        warnings.add("series with samples out of order", subject, "sorted them by time")
        order = sorted(range(len(times)), key=times.__getitem__)
        times = tuple(times[i] for i in order)
        values = tuple(values[i] for i in order)
    kept_t: list[float] = []
    kept_v: list[float] = []
    for t, v in zip(times, values, strict=True):
        if kept_t and kept_t[-1] == t:
            warnings.add("duplicate sample", subject, "kept the last sample at that time")
            kept_v[-1] = v
            continue
        kept_t.append(t)
        kept_v.append(v)
    return Series(series.labels, tuple(kept_t), tuple(kept_v))


def fill_gaps(
    series: Series,
    window: QueryRange,
    subject: str,
    warnings: HistoryWarnings,
    *,
    hold_s: float = HOLD_S,
) -> Series:
    """``series`` with its missing steps between two samples held at the last value.

    ``series`` must be normalised (ascending times). A gap is a stretch between two
    consecutive samples longer than 1.5 steps of ``window``. A gap of at most ``hold_s``
    seconds is filled at every missing step with the value before it and counted as a
    "scrape gap"; a longer one is left empty (the series is absent there) and counted as
    a "long scrape gap". Before the first sample and after the last nothing is added.
    """
    step = window.step_s
    times, values = series.times_s, series.values
    out_t: list[float] = []
    out_v: list[float] = []
    changed = False
    for i, (t, v) in enumerate(zip(times, values, strict=True)):
        if i:
            last_t, last_v = times[i - 1], values[i - 1]
            gap = t - last_t
            if gap > 1.5 * step:
                if gap <= hold_s:
                    warnings.add(
                        "scrape gap", subject, f"held the last value for gaps up to {hold_s:g}s"
                    )
                    k = 1
                    while last_t + k * step < t - step / 2:
                        out_t.append(last_t + k * step)
                        out_v.append(last_v)
                        k += 1
                    changed = True
                else:
                    warnings.add(
                        "long scrape gap",
                        subject,
                        f"no value during gaps longer than {hold_s:g}s (treated as absent)",
                    )
        out_t.append(t)
        out_v.append(v)
    if not changed:
        return series
    return Series(series.labels, tuple(out_t), tuple(out_v))


def undo_resets(series: Series, subject: str, warnings: HistoryWarnings) -> Series:
    """A counter's samples with every reset undone: the cumulative count since the first.

    Each drop (a sample below the one before) counts one "counter reset" and adds the
    value before the drop to every later sample, as PromQL's counter correction does
    (prometheus/prometheus promql/functions.go, ``extrapolatedRate``). ``series`` must be
    normalised.
    """
    offset = 0.0
    out: list[float] = []
    previous: float | None = None
    for v in series.values:
        if previous is not None and v < previous:
            warnings.add(
                "counter reset",
                subject,
                "counted the value after the drop as counted from 0 again (as PromQL does)",
            )
            offset += previous
        out.append(v + offset)
        previous = v
    if offset == 0.0:
        return series
    return Series(series.labels, series.times_s, tuple(out))


def counter_increases(series: Series, subject: str, warnings: HistoryWarnings) -> Series:
    """How much a counter rose at each sample since the sample before (0 at the first).

    Resets are undone first (``undo_resets``, counted), so an increase is never negative.
    """
    total = undo_resets(series, subject, warnings).values
    rises = tuple(0.0 if i == 0 else total[i] - total[i - 1] for i in range(len(total)))
    return Series(series.labels, series.times_s, rises)


@dataclass(frozen=True, slots=True)
class Span:
    """Where a series lies in its range: ``starts_inside`` when its first sample comes
    after the range's first step, ``ends_inside`` when its last comes before the last
    step (each with half a step's tolerance); ``empty`` when it has no samples."""

    starts_inside: bool
    ends_inside: bool
    empty: bool


def span(series: Series, window: QueryRange) -> Span:
    """Whether ``series`` starts or ends inside ``window`` (see ``Span``)."""
    if not series.times_s:
        return Span(starts_inside=False, ends_inside=False, empty=True)
    half = window.step_s / 2
    last_step = window.start_s + (window.steps() - 1) * window.step_s
    return Span(
        starts_inside=series.times_s[0] > window.start_s + half,
        ends_inside=series.times_s[-1] < last_step - half,
        empty=False,
    )
