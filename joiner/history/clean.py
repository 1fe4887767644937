"""Messy series made usable, each case counted in ``HistoryWarnings`` with what was assumed.

- ``normalise``: samples out of time order are sorted; duplicate timestamps keep the last
  sample given.
Scrape gaps, and series that start or end inside the range, are the translation's to
decide (``translate.resample`` holds a value through a gap and counts it); no query reads a
counter, so a counter reset cannot reach the import.

Nothing is filled or dropped without a count.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import gt, lt

from joiner.history.series import HistoryWarnings, Series

__all__ = ["normalise", "series_subject"]

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
