"""The shared history shapes: step counts of a range and the grouped warnings."""

from __future__ import annotations

from joiner.api.grouping import short_form
from joiner.history.series import HistoryWarnings, QueryRange


def test_steps_include_both_ends() -> None:
    assert QueryRange(0.0, 600.0, 60.0).steps() == 11
    assert QueryRange(0.0, 599.0, 60.0).steps() == 10
    assert QueryRange(100.0, 100.0, 60.0).steps() == 1
    assert QueryRange(100.0, 99.0, 60.0).steps() == 0
    # A week at 10 s: 60,480 intervals, 60,481 evaluation times.
    assert QueryRange(0.0, 7 * 86400.0, 10.0).steps() == 60481


def test_warnings_group_per_kind_with_count_assumption_and_three_examples() -> None:
    w = HistoryWarnings()
    assert not w
    for node in ("a", "b", "c", "d", "a"):
        w.add("scrape gap", f"node {node}", "held the last value up to 5m")
    w.add("counter reset", "pod x", "counted the drop as a restart from 0")
    assert w.count("scrape gap") == 5
    assert w.subjects("scrape gap") == ["node a", "node b", "node c", "node d"]
    assert w.render() == [
        "5 scrape gaps (held the last value up to 5m): node a, node b, node c, node d",
        "1 counter reset (counted the drop as a restart from 0): pod x",
    ]
    # Without -v the command line prints the short form (every subject with -v).
    assert [short_form(line) for line in w.render()] == [
        "5 scrape gaps (held the last value up to 5m): node a, node b, node c and 1 more "
        "(-v lists them all)",
        "1 counter reset (counted the drop as a restart from 0): pod x",
    ]


def test_merge_adds_counts_and_new_subjects() -> None:
    a, b = HistoryWarnings(), HistoryWarnings()
    a.add("gap", "s1", "held")
    b.add("gap", "s2", "held")
    b.add("reset", "s3", "counted")
    a.merge(b)
    assert a.count("gap") == 2
    assert a.kinds() == ["gap", "reset"]
    assert a.subjects("gap") == ["s1", "s2"]


def test_render_puts_each_kinds_head_noun_in_the_plural() -> None:
    # "14 saved step other than askeds" and "2 cluster without a NodePools" read wrong.
    w = HistoryWarnings()
    for kind in (
        "saved step other than asked",
        "saved query with other PromQL",
        "cluster without a NodePool",
        "native histogram series",
        "unmodelled object left out",
    ):
        w.add(kind, "a", "x")
        w.add(kind, "b", "x")
    assert [line.split(" (")[0] for line in w.render()] == [
        "2 saved steps other than asked",
        "2 saved queries with other PromQL",
        "2 clusters without a NodePool",
        "2 native histogram series",
        "2 unmodelled objects left out",
    ]
