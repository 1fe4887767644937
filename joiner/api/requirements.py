"""The node-selector requirement algebra, with Karpenter's semantics (``pkg/scheduling``).

A ``Requirement`` is a set of allowed label values for one key, kept as either a concrete
set (``In``, ``DoesNotExist``) or a complement (``NotIn``, ``Exists``) plus optional integer
bounds (``Gt``/``Lt``; ``Gte n`` is stored as ``Gt n-1``, ``Lte n`` as ``Lt n+1``).
``Requirements`` maps keys to requirements; adding a requirement for a key already present
intersects the two. Semantics match Karpenter:

* ``Intersects``: every shared key must have a non-empty intersection, except when both
  sides say "NotIn/DoesNotExist" (absence satisfies both).
* ``Compatible``: ``Intersects``, plus every key the other side requires with a positive
  operator (``In``/``Exists``/bounds) must be defined here, unless it is a well-known label
  (an instance type defines all of those).
* ``minValues``: the number of distinct values a NodeClaim's instance-type options must keep.

Values are compared as strings; bounds parse values as integers the way Go's ``strconv.Atoi``
does (optional sign, ASCII digits, 64-bit range; anything else fails them). Bounds that leave
no integer between them (``Gt 4`` with ``Lt 5``, ``Gte 5`` with ``Lte 4``) are empty, i.e.
``DoesNotExist``, as in Karpenter, which stores ``Gt n`` as ``Gte n+1`` and ``Lt n`` as
``Lte n-1``.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar, overload

from joiner.api import labels
from joiner.api.errors import InputError

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
GTE = "Gte"
LTE = "Lte"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE)

_INFINITE = sys.maxsize
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _as_int(value: str) -> int | None:
    """``value`` as Go's ``strconv.Atoi`` reads it, or None (no spaces, ``_`` or non-ASCII
    digits, which Python's ``int`` would accept)."""
    if _DECIMAL.fullmatch(value) is None:
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _no_integer_between(greater_than: int | None, less_than: int | None) -> bool:
    """True when no 64-bit integer is strictly above ``greater_than`` and below ``less_than``."""
    low = _INT64_MIN if greater_than is None else greater_than + 1
    high = _INT64_MAX if less_than is None else less_than - 1
    return low > high


def _within(value: str, greater_than: int | None, less_than: int | None) -> bool:
    if greater_than is None and less_than is None:
        return True
    number = _as_int(value)
    if number is None:
        return False
    if greater_than is not None and number <= greater_than:
        return False
    return not (less_than is not None and number >= less_than)


@dataclass(frozen=True, slots=True)
class Requirement:
    """Allowed values of one label key.

    Attributes:
        key: the label key (already normalised).
        complement: True when ``values`` lists *excluded* values (NotIn, Exists, Gt, Lt).
        values: the concrete allowed values, or the excluded ones when ``complement``.
        greater_than: exclusive lower bound on the integer value, if any.
        less_than: exclusive upper bound on the integer value, if any.
        min_values: Karpenter ``minValues``: distinct values the options must keep.
    """

    key: str
    complement: bool
    values: frozenset[str]
    greater_than: int | None = None
    less_than: int | None = None
    min_values: int | None = None

    @staticmethod
    def new(
        key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None
    ) -> Requirement:
        """Build a requirement from a node-selector term (``key``, ``operator``, ``values``).

        Raises:
            InputError: unknown operator, or ``Gt``/``Lt``/``Gte``/``Lte`` without exactly one
                integer value.
        """
        key = labels.normalize_key(key)
        vals = frozenset(str(v) for v in values)
        if operator == IN:
            return Requirement(key, False, vals, min_values=min_values)
        if operator == NOT_IN:
            return Requirement(key, True, vals, min_values=min_values)
        if operator == EXISTS:
            return Requirement(key, True, frozenset(), min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return Requirement(key, False, frozenset(), min_values=min_values)
        if operator in (GT, LT, GTE, LTE):
            if (
                len(vals) == 1
                and _as_int(next(iter(vals))) is None
                and next(iter(vals)).lstrip("-").isdigit()
            ):
                raise InputError(
                    f"operator {operator} on {key!r}: {next(iter(vals))} is outside the 64-bit "
                    "integer range"
                )
            if len(vals) != 1 or _as_int(next(iter(vals))) is None:
                raise InputError(
                    f"operator {operator} on {key!r} needs exactly one integer value, got "
                    f"{sorted(vals)}"
                )
            n = int(next(iter(vals)))
            greater_than = {GT: n, GTE: n - 1}.get(operator)
            less_than = {LT: n, LTE: n + 1}.get(operator)
            if _no_integer_between(greater_than, less_than):  # e.g. Gt 9223372036854775807
                return Requirement(key, False, frozenset(), min_values=min_values)
            return Requirement(key, True, frozenset(), greater_than, less_than, min_values)
        raise InputError(f"unknown operator {operator!r}; use one of {', '.join(OPERATORS)}")

    @staticmethod
    def in_(key: str, *values: str) -> Requirement:
        """Shorthand for ``key In values``."""
        return Requirement.new(key, IN, values)

    @property
    def operator(self) -> str:
        """The operator this set reads as: In, NotIn, Exists, DoesNotExist, Gt or Lt."""
        if self.complement:
            if self.values:
                return NOT_IN
            if self.greater_than is not None and self.less_than is None:
                return GT
            if self.less_than is not None and self.greater_than is None:
                return LT
            return EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def __len__(self) -> int:
        """Number of allowed values; a complement counts as (practically) infinite."""
        if self.complement:
            return _INFINITE - len(self.values)
        return len(self.values)

    def has(self, value: str) -> bool:
        """True when ``value`` is allowed."""
        if self.complement:
            return value not in self.values and _within(value, self.greater_than, self.less_than)
        return value in self.values and _within(value, self.greater_than, self.less_than)

    def any(self) -> str | None:
        """One allowed value, or None when there is none (Karpenter ``Requirement.Any``).

        Karpenter picks at random; this picks deterministically: the smallest value of a
        concrete set, and for a complement the smallest allowed integer from 0 (or from just
        above the lower bound; or just below a non-positive upper bound).
        """
        if not self.complement:
            return min(self.values) if self.values else None
        start = 0 if self.greater_than is None else self.greater_than + 1
        if self.greater_than is None and self.less_than is not None and self.less_than <= 0:
            start = self.less_than - 1 - len(self.values)
        # At most len(values) of these consecutive integers are excluded.
        for number in range(start, start + len(self.values) + 1):
            if self.has(str(number)):
                return str(number)
        return None

    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both (Karpenter ``Requirement.Intersection``)."""
        complement = self.complement and other.complement
        greater_than = _max_opt(self.greater_than, other.greater_than)
        less_than = _min_opt(self.less_than, other.less_than)
        min_values = _max_opt(self.min_values, other.min_values)
        if _no_integer_between(greater_than, less_than):
            return Requirement(self.key, False, frozenset(), min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        values = frozenset(v for v in values if _within(v, greater_than, less_than))
        if not complement:
            greater_than = less_than = None
        return Requirement(self.key, complement, values, greater_than, less_than, min_values)

    def describe(self) -> str:
        """Human form, e.g. ``kubernetes.io/arch In [amd64]``."""
        op = self.operator
        if op in (IN, NOT_IN):
            return f"{self.key} {op} [{', '.join(sorted(self.values))}]"
        if op == GT:
            return f"{self.key} Gt {self.greater_than}"
        if op == LT:
            return f"{self.key} Lt {self.less_than}"
        if self.complement and self.greater_than is not None and self.less_than is not None:
            return f"{self.key} Gt {self.greater_than} and Lt {self.less_than}"
        return f"{self.key} {op}"


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


_NEGATIVE = (NOT_IN, DOES_NOT_EXIST)
_MISSING = object()
#: ``Requirements.intersects`` answers by (self, other); cleared when full.
_INTERSECTS: dict[tuple[Requirements, Requirements], object] = {}
_INTERSECTS_MAX = 1 << 18


def _empty_intersection(a: Requirement, b: Requirement) -> bool:
    """``len(a.intersection(b)) == 0`` without building the intersection."""
    greater_than = _max_opt(a.greater_than, b.greater_than)
    less_than = _min_opt(a.less_than, b.less_than)
    if _no_integer_between(greater_than, less_than):
        return True
    if a.complement and b.complement:
        return False  # a complement allows (practically) infinitely many values
    if a.complement:
        a, b = b, a
    if b.complement:
        excluded = b.values
        return not any(v not in excluded and _within(v, greater_than, less_than) for v in a.values)
    if greater_than is None and less_than is None:
        return a.values.isdisjoint(b.values)
    return not any(v in b.values and _within(v, greater_than, less_than) for v in a.values)


_T = TypeVar("_T")


def _self_intersects(r: Requirements) -> str | None:
    return r._intersects(r)


class Requirements(Mapping[str, Requirement]):
    """An immutable set of requirements keyed by label key (Karpenter ``Requirements``).

    ``get`` of an absent key is ``Exists`` (no constraint). Adding merges by intersection.
    """

    __slots__ = ("_by_key", "_hash", "_memo")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        by_key: dict[str, Requirement] = {}
        for r in requirements:
            existing = by_key.get(r.key)
            by_key[r.key] = existing.intersection(r) if existing else r
        self._by_key = by_key
        self._hash: int | None = None
        self._memo: dict[object, object] | None = None

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # A copy (pickle, ``copy.deepcopy``) carries the requirements alone: the cached hash
        # is of this process's string hashing, and the memo is rebuilt on demand.
        return (None, {"_by_key": self._by_key, "_hash": None, "_memo": None})

    def memo(self) -> dict[object, object]:
        """A scratch dict for answers derived from this set alone (the set is immutable, so
        they never go stale): a caller keys its entries by a tuple whose first item names
        the caller (``Offering.compatible`` uses ``("offering", ...)``)."""
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        return memo

    @staticmethod
    @functools.lru_cache(maxsize=16384)
    def from_label_items(items: tuple[tuple[str, str], ...]) -> Requirements:
        """``from_labels`` over sorted ``(key, value)`` pairs, memoised (Requirements are
        immutable, and the same pod and node labels come back in every solve)."""
        return Requirements.from_labels(dict(items))

    @staticmethod
    def from_labels(label_map: Mapping[str, str]) -> Requirements:
        """One ``In [value]`` requirement per label."""
        return Requirements(Requirement.in_(k, v) for k, v in label_map.items())

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    @overload
    def get(self, key: str, /) -> Requirement | None: ...

    @overload
    def get(self, key: str, /, default: Requirement | _T) -> Requirement | _T: ...

    def get(self, key: str, /, default: object = None) -> object:
        """The requirement on ``key``, else ``default`` (``Mapping.get``'s answer, without
        its ``KeyError`` round trip: the scheduler's inner loops ask this often)."""
        return self._by_key.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __repr__(self) -> str:
        return f"Requirements({self.describe()})"

    def __hash__(self) -> int:
        # Cached: scheduler caches key on Requirements, and the set never changes.
        if self._hash is None:
            self._hash = hash(frozenset(self._by_key.values()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._by_key == other._by_key

    def get_or_exists(self, key: str) -> Requirement:
        """The requirement on ``key``; ``Exists`` when none is set."""
        found = self._by_key.get(key)
        return found if found is not None else Requirement(key, True, frozenset())

    def add(self, *requirements: Requirement) -> Requirements:
        """A new set with ``requirements`` intersected in."""
        return Requirements([*self._by_key.values(), *requirements])

    def merge(self, other: Requirements) -> Requirements:
        """A new set intersecting every key of ``other`` in."""
        return Requirements([*self._by_key.values(), *other.values()])

    def intersects(self, other: Requirements) -> str | None:
        """None when every shared key has a common value; else a reason.

        Karpenter ``Intersects``: a shared key with nothing in common is still fine when both
        sides are NotIn/DoesNotExist, since a node without the label satisfies both.
        Memoised per pair (both sides are immutable; the scheduler asks the same pairs of
        instance-type and NodeClaim requirements many times).
        """
        if other is self:
            return _self_intersects(self)
        key = (self, other)
        found = _INTERSECTS.get(key, _MISSING)
        if found is _MISSING:
            if len(_INTERSECTS) >= _INTERSECTS_MAX:
                _INTERSECTS.clear()
            found = self._intersects(other)
            _INTERSECTS[key] = found
        return found  # type: ignore[return-value]

    def _intersects(self, other: Requirements) -> str | None:
        mine = self._by_key
        theirs = other._by_key
        shared = mine.keys() & theirs.keys()
        if not shared:
            return None
        for key in sorted(shared):
            existing = mine[key]
            incoming = theirs[key]
            if existing is incoming or not _empty_intersection(existing, incoming):
                continue
            if incoming.operator in _NEGATIVE and existing.operator in _NEGATIVE:
                continue
            return f"{incoming.describe()} conflicts with {existing.describe()}"
        return None

    def allows(self, key: str, value: str) -> bool:
        """True when ``value`` is allowed for ``key`` (an absent key allows anything)."""
        r = self._by_key.get(key)
        return r is None or r.has(value)

    def compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = labels.WELL_KNOWN_LABELS
    ) -> str | None:
        """None when ``other`` can be satisfied here; else a reason (Karpenter ``Compatible``).

        Keys ``other`` requires positively must be defined in ``self`` unless listed in
        ``allow_undefined`` (by default the well-known labels).
        """
        for key in sorted(other._by_key.keys() - allow_undefined):
            if key in self._by_key:
                continue
            if other._by_key[key].operator in _NEGATIVE:
                continue
            return f"label {key!r} does not have known values"
        return self.intersects(other)

    def labels(self) -> dict[str, str]:
        """Labels implied by single-valued ``In`` requirements (e.g. a resolved zone)."""
        out: dict[str, str] = {}
        for key, r in self._by_key.items():
            if not r.complement and len(r.values) == 1:
                out[key] = next(iter(r.values))
        return out

    def describe(self) -> str:
        """Human form of every requirement, sorted by key."""
        return ", ".join(self._by_key[k].describe() for k in sorted(self._by_key))


EMPTY = Requirements()
