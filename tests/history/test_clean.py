"""Messy series: each case with the input that shows it, and the count it leaves."""

from __future__ import annotations

from joiner.history.clean import (
    counter_increases,
    fill_gaps,
    normalise,
    series_subject,
    span,
    undo_resets,
)
from joiner.history.series import HistoryWarnings, QueryRange, Series

WINDOW = QueryRange(0.0, 1200.0, 60.0)


def _s(times: list[float], values: list[float]) -> Series:
    return Series({"pod": "p"}, tuple(times), tuple(values))


def test_unsorted_samples_are_sorted_and_counted_once_per_series() -> None:
    w = HistoryWarnings()
    out = normalise(_s([120, 0, 60], [3, 1, 2]), "s", w)
    assert out.times_s == (0, 60, 120)
    assert out.values == (1, 2, 3)
    assert w.count("series with samples out of order") == 1


def test_duplicate_timestamps_keep_the_last_sample_and_count_each() -> None:
    w = HistoryWarnings()
    out = normalise(_s([0, 60, 60, 120, 120], [1, 2, 5, 3, 7]), "s", w)
    assert out.times_s == (0, 60, 120)
    assert out.values == (1, 5, 7)
    assert w.count("duplicate sample") == 2
    assert w.count("series with samples out of order") == 0


def test_clean_series_is_returned_unchanged_without_warnings() -> None:
    w = HistoryWarnings()
    s = _s([0, 60], [1, 2])
    assert normalise(s, "s", w) is s
    assert fill_gaps(s, WINDOW, "s", w) is s
    assert not w


def test_short_gap_is_held_at_the_last_value_and_counted() -> None:
    w = HistoryWarnings()
    # Steps 120 and 180 are missing: a 3-minute gap, under the 5-minute hold.
    out = fill_gaps(_s([0, 60, 240, 300], [1, 2, 4, 5]), WINDOW, "s", w)
    assert out.times_s == (0, 60, 120, 180, 240, 300)
    assert out.values == (1, 2, 2, 2, 4, 5)
    assert w.count("scrape gap") == 1
    assert "held the last value for gaps up to 300s" in w.render()[0]


def test_long_gap_is_left_absent_and_counted() -> None:
    w = HistoryWarnings()
    # 0 -> 600: ten minutes without a sample, over the 5-minute hold.
    s = _s([0, 600, 660], [1, 2, 3])
    out = fill_gaps(s, WINDOW, "s", w)
    assert out.times_s == (0, 600, 660)
    assert w.count("long scrape gap") == 1
    assert w.count("scrape gap") == 0
    # A longer hold fills it.
    w2 = HistoryWarnings()
    held = fill_gaps(s, WINDOW, "s", w2, hold_s=600)
    assert held.times_s == tuple(float(t) for t in range(0, 661, 60))
    assert held.values[1:10] == (1,) * 9
    assert w2.count("scrape gap") == 1


def test_series_starting_and_ending_inside_the_range_are_kept_as_they_are() -> None:
    w = HistoryWarnings()
    late = _s([300, 360, 420], [1, 1, 1])
    assert fill_gaps(late, WINDOW, "s", w) is late
    assert not w
    where = span(late, WINDOW)
    assert where.starts_inside and where.ends_inside and not where.empty
    whole = _s([float(t) for t in range(0, 1201, 60)], [1.0] * 21)
    assert span(whole, WINDOW) == span(whole, WINDOW).__class__(False, False, False)
    assert span(_s([], []), WINDOW).empty


def test_counter_reset_is_undone_as_promql_does_and_counted() -> None:
    w = HistoryWarnings()
    # Restarts 3, 4, then the exporter restarts (counter back to 1), then 2.
    s = _s([0, 60, 120, 180], [3, 4, 1, 2])
    assert undo_resets(s, "s", w).values == (3, 4, 5, 6)
    assert w.count("counter reset") == 1
    w2 = HistoryWarnings()
    assert counter_increases(s, "s", w2).values == (0, 1, 1, 1)
    assert w2.count("counter reset") == 1


def test_counter_without_reset_is_unchanged() -> None:
    w = HistoryWarnings()
    s = _s([0, 60, 120], [1, 1, 2])
    assert undo_resets(s, "s", w) is s
    assert counter_increases(s, "s", w).values == (0, 0, 1)
    assert not w


def test_series_subject_names_the_object_labels_first() -> None:
    labels = {"container": "c", "pod": "p", "namespace": "n", "uid": "u", "resource": "cpu"}
    assert (
        series_subject("req", labels)
        == 'req{namespace="n",pod="p",container="c",resource="cpu"...}'
    )
    assert series_subject("up", {}) == "up{}"
