"""The shapes shared by every history reader and the translation.

A ``Series`` is one Prometheus range-query result (a matrix entry): its labels without
``__name__`` and its samples as two parallel tuples. A ``SeriesSource`` answers a PromQL
expression over a fixed ``QueryRange``; the Prometheus HTTP client and the saved-response
reader both implement it. ``HistoryWarnings`` counts each messy case once per subject and
renders one grouped warning per kind.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from joiner.api.grouping import grouped

__all__ = ["HistoryWarnings", "QueryRange", "Series", "SeriesSource"]


@dataclass(frozen=True, slots=True)
class Series:
    """One series of a range query.

    ``labels``: the series' labels, ``__name__`` removed. ``times_s``: unix seconds,
    ascending. ``values``: the samples at those times (same length); NaN and stale
    markers are dropped by the readers.
    """

    labels: Mapping[str, str]
    times_s: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class QueryRange:
    """A range query's window: ``start_s`` and ``end_s`` in unix seconds, ``step_s`` > 0.

    The evaluation times are ``start_s + k * step_s`` for every k with the time at most
    ``end_s`` (prometheus/prometheus promql/engine.go: a range query evaluates at start,
    start + step, ..., up to and including end).
    """

    start_s: float
    end_s: float
    step_s: float

    def steps(self) -> int:
        """How many evaluation times the range holds (at least 1 when end >= start)."""
        if self.end_s < self.start_s:
            return 0
        return math.floor((self.end_s - self.start_s) / self.step_s + 1e-9) + 1


class SeriesSource(Protocol):
    """Where series come from: a live Prometheus or saved responses.

    ``fetch(name, promql, step_s)`` runs ``promql`` over the source's ``QueryRange`` at
    ``step_s`` (the range's step when ``None``; ``queries.query_step`` gives a coarser one
    for the per-pod queries) and returns its series. ``name`` is a stable query name (used
    for saved files and messages).
    Raises ``InputError`` when the history cannot be read.
    """

    def fetch(self, name: str, promql: str, step_s: float | None = None) -> list[Series]:
        """The series ``promql`` gives over the source's range at ``step_s``."""
        ...


@dataclass(slots=True)
class _Kind:
    assumed: str
    subjects: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    count: int = 0


#: Kinds whose head noun is not their last word, with their plural (``plural`` adds an "s"
#: to the last word otherwise); a kind added with such a noun needs its entry here.
PLURAL_KINDS = {
    "saved step other than asked": "saved steps other than asked",
    "saved query with other PromQL": "saved queries with other PromQL",
    "saved series reaching outside the range": "saved series reaching outside the range",
    "series with samples out of order": "series with samples out of order",
    "cluster without a NodePool": "clusters without a NodePool",
    "unmodelled object left out": "unmodelled objects left out",
    "native histogram series": "native histogram series",
}


def _kind_plural(kind: str, count: int) -> str:
    """``kind`` for ``count`` subjects: as it is for one, else ``PLURAL_KINDS``' plural or
    the kind with an "s"."""
    if count == 1:
        return kind
    return PLURAL_KINDS.get(kind, kind + "s")


class HistoryWarnings:
    """Messy-history cases, grouped by kind: one warning per kind with a count.

    ``add(kind, subject, assumed)`` records one occurrence; ``kind`` is a short noun
    phrase ("scrape gap"), ``subject`` names what it happened to (a series or an object),
    ``assumed`` says what Joiner did about it (the first ``assumed`` given for a kind is
    kept). ``render()`` gives one line per kind in first-seen order:
    ``"<count> <kind>s (<assumed>): a, b, c, d"`` (its short form: ``a, b, c and 1 more``).
    """

    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}

    def add(self, kind: str, subject: str, assumed: str) -> None:
        """Count one occurrence of ``kind`` for ``subject``."""
        entry = self._kinds.get(kind)
        if entry is None:
            entry = self._kinds[kind] = _Kind(assumed)
        entry.count += 1
        if subject not in entry.seen:
            entry.seen.add(subject)
            entry.subjects.append(subject)

    def count(self, kind: str) -> int:
        """How many times ``kind`` was added (0 if never)."""
        entry = self._kinds.get(kind)
        return entry.count if entry else 0

    def kinds(self) -> list[str]:
        """The kinds added so far, in first-seen order."""
        return list(self._kinds)

    def subjects(self, kind: str) -> list[str]:
        """Every distinct subject of ``kind``, in first-seen order."""
        entry = self._kinds.get(kind)
        return list(entry.subjects) if entry else []

    def merge(self, other: HistoryWarnings) -> None:
        """Add every occurrence ``other`` holds to this collector."""
        for kind, entry in other._kinds.items():
            mine = self._kinds.get(kind)
            if mine is None:
                mine = self._kinds[kind] = _Kind(entry.assumed)
            mine.count += entry.count
            for subject in entry.subjects:
                if subject not in mine.seen:
                    mine.seen.add(subject)
                    mine.subjects.append(subject)

    def render(self) -> list[str]:
        """One line per kind: count, what was assumed, and every subject (a grouped warning:
        ``grouping.short_form`` names the first ``SHOWN`` and how many more, as the command
        line prints it without ``-v``)."""
        return [
            grouped(
                f"{entry.count} {_kind_plural(kind, entry.count)} ({entry.assumed})",
                entry.subjects,
            )
            for kind, entry in self._kinds.items()
        ]

    def __bool__(self) -> bool:
        return bool(self._kinds)
