"""Messy series: each case with the input that shows it, and the count it leaves."""

from __future__ import annotations

from joiner.history.clean import normalise, series_subject
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
    assert not w


def test_series_subject_names_the_object_labels_first() -> None:
    labels = {"container": "c", "pod": "p", "namespace": "n", "uid": "u", "resource": "cpu"}
    assert (
        series_subject("req", labels)
        == 'req{namespace="n",pod="p",container="c",resource="cpu"...}'
    )
    assert series_subject("up", {}) == "up{}"
