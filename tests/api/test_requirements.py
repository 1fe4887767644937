"""Behaviour of the requirement algebra, checked against Karpenter's scheduling semantics.

The expectations restate, in table form, what Karpenter's ``pkg/scheduling`` tests
(``requirement_test.go`` and ``requirements_test.go``) establish: the intersection of every
pair of a fixed family of requirements, membership (``Has``), size (``Len``), the operator
a set reads as, ``Any``, the ``Compatible``/``Intersects`` matrices and ``minValues``. The
tables are keyed by short names; see ``FAMILY`` for what each name means.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.requirements import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    GTE,
    IN,
    LT,
    LTE,
    NOT_IN,
    Requirement,
    Requirements,
)

KEY = "example.com/key"
INF = sys.maxsize  # what an unbounded (complement) set reports as its length

# name -> (operator, values). These are the fourteen sets Karpenter's tables range over.
FAMILY: dict[str, tuple[str, tuple[str, ...]]] = {
    "ex": (EXISTS, ()),
    "dne": (DOES_NOT_EXIST, ()),
    "a": (IN, ("A",)),
    "b": (IN, ("B",)),
    "ab": (IN, ("A", "B")),
    "na": (NOT_IN, ("A",)),
    "1": (IN, ("1",)),
    "9": (IN, ("9",)),
    "19": (IN, ("1", "9")),
    "n12": (NOT_IN, ("1", "2")),
    "g1": (GT, ("1",)),
    "g9": (GT, ("9",)),
    "l1": (LT, ("1",)),
    "l9": (LT, ("9",)),
}
NAMES = tuple(FAMILY)

# minValues Karpenter attaches to the "with flexibility" variant of each family member.
FLEX_MIN_VALUES = {name: 2 if name in ("ab", "19", "n12") else 1 for name in NAMES}

# Values every set is probed with: two strings, integers on both sides of every bound, and
# a negative one.
PROBES = ("A", "B", "-3", "0", "1", "2", "5", "9", "10")
ALL = frozenset(PROBES)
INTS = ALL - {"A", "B"}


def make(name: str, key: str = KEY, min_values: int | None = None) -> Requirement:
    operator, values = FAMILY[name]
    return Requirement.new(key, operator, values, min_values)


def karpenter_operator(r: Requirement) -> str:
    """The operator Karpenter would report: bounds-only sets read as ``Exists`` there."""
    return EXISTS if r.operator in (GT, LT) else r.operator


# Expected shape of a set: (members among PROBES, len(), Karpenter operator).
Shape = tuple[frozenset[str], int, str]

SHAPES: dict[str, Shape] = {
    "ex": (ALL, INF, EXISTS),
    "dne": (frozenset(), 0, DOES_NOT_EXIST),
    "a": (frozenset({"A"}), 1, IN),
    "b": (frozenset({"B"}), 1, IN),
    "ab": (frozenset({"A", "B"}), 2, IN),
    "na": (ALL - {"A"}, INF - 1, NOT_IN),
    "1": (frozenset({"1"}), 1, IN),
    "9": (frozenset({"9"}), 1, IN),
    "19": (frozenset({"1", "9"}), 2, IN),
    "n12": (ALL - {"1", "2"}, INF - 2, NOT_IN),
    "g1": (frozenset({"2", "5", "9", "10"}), INF, EXISTS),
    "g9": (frozenset({"10"}), INF, EXISTS),
    "l1": (frozenset({"-3", "0"}), INF, EXISTS),
    "l9": (frozenset({"-3", "0", "1", "2", "5"}), INF, EXISTS),
    # Results that are not themselves family members:
    # NotIn A,1,2 (both NotIn sets merged).
    "na12": (ALL - {"A", "1", "2"}, INF - 3, NOT_IN),
    # Above 1 except 2 (1 itself is outside the bound so it is not kept as an exclusion).
    "g1n2": (frozenset({"5", "9", "10"}), INF - 1, NOT_IN),
    # Below 9 except 1 and 2.
    "l9n12": (frozenset({"-3", "0", "5"}), INF - 2, NOT_IN),
    # Strictly between 1 and 9.
    "g1l9": (frozenset({"2", "5"}), INF, EXISTS),
}

# Intersection table: row.intersection(column) has the shape named in the cell. Columns are
# in NAMES order: ex dne a b ab na 1 9 19 n12 g1 g9 l1 l9.
INTERSECTION_ROWS: dict[str, str] = {
    "ex": "ex dne a b ab na 1 9 19 n12 g1 g9 l1 l9",
    "dne": "dne dne dne dne dne dne dne dne dne dne dne dne dne dne",
    "a": "a dne a dne a dne dne dne dne a dne dne dne dne",
    "b": "b dne dne b b b dne dne dne b dne dne dne dne",
    "ab": "ab dne a b ab b dne dne dne ab dne dne dne dne",
    "na": "na dne dne b b na 1 9 19 na12 g1 g9 l1 l9",
    "1": "1 dne dne dne dne 1 1 dne 1 dne dne dne dne 1",
    "9": "9 dne dne dne dne 9 dne 9 9 9 9 dne dne dne",
    "19": "19 dne dne dne dne 19 1 9 19 9 9 dne dne 1",
    "n12": "n12 dne a b ab na12 dne 9 9 n12 g1n2 g9 l1 l9n12",
    "g1": "g1 dne dne dne dne g1 dne 9 9 g1n2 g1 g9 dne g1l9",
    "g9": "g9 dne dne dne dne g9 dne dne dne g9 g9 g9 dne dne",
    "l1": "l1 dne dne dne dne l1 dne dne dne l1 dne dne l1 l1",
    "l9": "l9 dne dne dne dne l9 1 dne 1 l9n12 g1l9 dne l1 l9",
}
INTERSECTION = {
    (row, col): cell
    for row, cells in INTERSECTION_ROWS.items()
    for col, cell in zip(NAMES, cells.split(), strict=True)
}


def shape(r: Requirement) -> Shape:
    return frozenset(p for p in PROBES if r.has(p)), len(r), karpenter_operator(r)


# --------------------------------------------------------------------------------------
# Requirement: Intersection, Has, Len, Operator, Any
# --------------------------------------------------------------------------------------


def test_intersection_table_is_complete() -> None:
    assert len(INTERSECTION) == len(NAMES) ** 2
    assert set(INTERSECTION.values()) <= set(SHAPES)


@pytest.mark.parametrize("name", NAMES)
def test_family_member_shape(name: str) -> None:
    assert shape(make(name)) == SHAPES[name]


@pytest.mark.parametrize(("left", "right"), sorted(INTERSECTION))
def test_intersection_without_min_values(left: str, right: str) -> None:
    result = make(left).intersection(make(right))
    assert shape(result) == SHAPES[INTERSECTION[left, right]]
    assert result.key == KEY
    assert result.min_values is None


@pytest.mark.parametrize(("left", "right"), sorted(INTERSECTION))
def test_intersection_flexible_with_plain(left: str, right: str) -> None:
    """minValues on one side survives the intersection; the set itself is unchanged."""
    flexible = make(left, min_values=FLEX_MIN_VALUES[left])
    result = flexible.intersection(make(right))
    assert shape(result) == SHAPES[INTERSECTION[left, right]]
    assert result.min_values == FLEX_MIN_VALUES[left]
    # ... and it does not matter which side carries it.
    assert make(right).intersection(flexible).min_values == FLEX_MIN_VALUES[left]


@pytest.mark.parametrize(("left", "right"), sorted(INTERSECTION))
def test_intersection_flexible_with_flexible_keeps_the_larger_min_values(
    left: str, right: str
) -> None:
    result = make(left, min_values=FLEX_MIN_VALUES[left]).intersection(
        make(right, min_values=FLEX_MIN_VALUES[right])
    )
    assert shape(result) == SHAPES[INTERSECTION[left, right]]
    assert result.min_values == max(FLEX_MIN_VALUES[left], FLEX_MIN_VALUES[right])


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("ex", "A B 1 2 9"),
        ("dne", ""),
        ("a", "A"),
        ("b", "B"),
        ("ab", "A B"),
        ("na", "B 1 2 9"),
        ("1", "1"),
        ("9", "9"),
        ("19", "1 9"),
        ("n12", "A B 9"),
        ("g1", "2 9"),
        ("g9", ""),
        ("l1", ""),
        ("l9", "1 2"),
    ],
)
def test_has(name: str, allowed: str) -> None:
    r = make(name)
    for value in ("A", "B", "1", "2", "9"):
        assert r.has(value) == (value in allowed.split()), value


@pytest.mark.parametrize(
    ("name", "length"),
    [
        ("ex", INF),
        ("dne", 0),
        ("a", 1),
        ("b", 1),
        ("ab", 2),
        ("na", INF - 1),
        ("1", 1),
        ("9", 1),
        ("19", 2),
        ("n12", INF - 2),
        ("g1", INF),
        ("g9", INF),
        ("l1", INF),
        ("l9", INF),
    ],
)
def test_len(name: str, length: int) -> None:
    assert len(make(name)) == length


@pytest.mark.parametrize(
    ("name", "operator"),
    [
        ("ex", EXISTS),
        ("dne", DOES_NOT_EXIST),
        ("a", IN),
        ("ab", IN),
        ("na", NOT_IN),
        ("19", IN),
        ("n12", NOT_IN),
    ],
)
def test_operator_where_karpenter_agrees(name: str, operator: str) -> None:
    assert make(name).operator == operator


@pytest.mark.parametrize(("name", "operator"), [("g1", GT), ("g9", GT), ("l1", LT), ("l9", LT)])
def test_single_bound_operator(name: str, operator: str) -> None:
    """We name single-bound sets Gt/Lt; Karpenter reports them as Exists (with bounds)."""
    r = make(name)
    assert r.operator == operator
    assert karpenter_operator(r) == EXISTS


def test_two_bounds_read_as_exists() -> None:
    assert make("g1").intersection(make("l9")).operator == EXISTS


def test_bounds_with_exclusions_read_as_not_in() -> None:
    assert make("n12").intersection(make("g1")).operator == NOT_IN


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a", "A"), ("b", "B"), ("1", "1"), ("9", "9"), ("dne", None)],
)
def test_any_of_concrete_sets(name: str, expected: str | None) -> None:
    assert make(name).any() == expected


@pytest.mark.parametrize(("name", "choices"), [("ab", {"A", "B"}), ("19", {"1", "9"})])
def test_any_of_multi_valued_in_is_one_of_them(name: str, choices: set[str]) -> None:
    assert make(name).any() in choices


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("ex", 0, INF),
        ("na", 0, INF),
        ("n12", 0, INF),
        ("g1", 2, INF),
        ("g9", 10, INF),
        ("l1", 0, 1),
        ("l9", 0, 9),
    ],
)
def test_any_of_complements_is_an_allowed_integer(name: str, low: int, high: int) -> None:
    """Karpenter picks an integer in [lower bound, upper bound) for unbounded sets."""
    r = make(name)
    value = r.any()
    assert value is not None
    assert r.has(value)
    assert low <= int(value) < high


def test_any_of_less_than_one_is_zero() -> None:
    assert make("l1").any() == "0"


def test_any_skips_excluded_values_and_respects_negative_upper_bounds() -> None:
    not_in_small = Requirement.new(KEY, NOT_IN, ["0", "1", "2"])
    assert not_in_small.any() == "3"
    below_zero = Requirement.new(KEY, LT, ["-4"])
    value = below_zero.any()
    assert value is not None and below_zero.has(value)
    # Nothing to offer: above 1 and below 3 but 2 is excluded.
    empty = Requirement.new(KEY, GT, ["1"]).intersection(
        Requirement.new(KEY, LT, ["3"]).intersection(Requirement.new(KEY, NOT_IN, ["2"]))
    )
    assert empty.any() is None


def test_normalizes_deprecated_label_keys() -> None:
    selector = {
        "failure-domain.beta.kubernetes.io/zone": "test",
        "failure-domain.beta.kubernetes.io/region": "test",
        "beta.kubernetes.io/arch": "test",
        "beta.kubernetes.io/os": "test",
        "beta.kubernetes.io/instance-type": "test",
    }
    expected = {labels.ARCH, labels.OS, labels.INSTANCE_TYPE, labels.REGION, labels.ZONE}
    assert set(Requirements.from_labels(selector)) == expected
    from_terms = Requirements(Requirement.new(k, IN, [v]) for k, v in selector.items())
    assert set(from_terms) == expected


def test_aliased_key_is_stored_under_its_stable_name() -> None:
    reqs = Requirements([Requirement.new("failure-domain.beta.kubernetes.io/zone", IN, ["test"])])
    assert "failure-domain.beta.kubernetes.io/zone" not in reqs
    assert reqs.get_or_exists(labels.ZONE).has("test")


# --------------------------------------------------------------------------------------
# Gte / Lte and integer bounds
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "bound", "member"),
    [
        (GTE, 5, lambda v: v >= 5),
        (LTE, 5, lambda v: v <= 5),
        (GT, 5, lambda v: v > 5),
        (LT, 5, lambda v: v < 5),
        (GTE, 0, lambda v: v >= 0),
        (LTE, -1, lambda v: v <= -1),
    ],
)
def test_bound_membership(operator: str, bound: int, member: Callable[[int], bool]) -> None:
    r = Requirement.new(KEY, operator, [str(bound)])
    for v in range(-10, 11):
        assert r.has(str(v)) == member(v), v
    assert not r.has("A")
    assert len(r) == INF


@pytest.mark.parametrize("n", [-3, 0, 1, 7])
def test_gte_is_gt_one_less_and_lte_is_lt_one_more(n: int) -> None:
    gte, gt = Requirement.new(KEY, GTE, [str(n)]), Requirement.new(KEY, GT, [str(n - 1)])
    lte, lt = Requirement.new(KEY, LTE, [str(n)]), Requirement.new(KEY, LT, [str(n + 1)])
    for v in range(-10, 11):
        assert gte.has(str(v)) == gt.has(str(v))
        assert lte.has(str(v)) == lt.has(str(v))


@pytest.mark.parametrize(
    ("lower", "upper", "members"),
    [
        ((GTE, "5"), (LTE, "5"), {5}),
        ((GTE, "5"), (LTE, "6"), {5, 6}),
        ((GT, "4"), (LT, "6"), {5}),
        ((GTE, "5"), (LT, "7"), {5, 6}),
        ((GT, "4"), (LTE, "5"), {5}),
    ],
)
def test_touching_inclusive_bounds_keep_the_boundary(
    lower: tuple[str, str], upper: tuple[str, str], members: set[int]
) -> None:
    low = Requirement.new(KEY, lower[0], [lower[1]])
    high = Requirement.new(KEY, upper[0], [upper[1]])
    for r in (low.intersection(high), high.intersection(low)):
        assert {v for v in range(-10, 20) if r.has(str(v))} == members
        assert len(r) > 0
        assert Requirements([low]).intersects(Requirements([high])) is None


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ((GTE, "5"), (LTE, "4")),
        ((GT, "4"), (LT, "5")),
        ((GTE, "5"), (LT, "5")),
        ((GT, "5"), (LTE, "5")),
        ((GT, "9"), (LT, "9")),
        ((GT, "9"), (LT, "1")),
    ],
)
def test_bounds_with_no_integer_between_are_empty(
    lower: tuple[str, str], upper: tuple[str, str]
) -> None:
    """Karpenter stores bounds inclusively (Gt n as Gte n+1), so e.g. Gt 4 and Lt 5 meet in
    nothing: the intersection is DoesNotExist and the sets do not intersect."""
    low = Requirement.new(KEY, lower[0], [lower[1]], min_values=2)
    high = Requirement.new(KEY, upper[0], [upper[1]])
    for r in (low.intersection(high), high.intersection(low)):
        assert shape(r) == SHAPES["dne"]
        assert r.min_values == 2
    reason = Requirements([low]).intersects(Requirements([high]))
    assert reason is not None
    assert Requirements([high]).intersects(Requirements([low])) is not None
    assert Requirements([low, high])[KEY].operator == DOES_NOT_EXIST


def test_gt_of_the_largest_integer_matches_nothing() -> None:
    r = Requirement.new(KEY, GT, [str(2**63 - 1)])
    assert len(r) == 0
    assert r.operator == DOES_NOT_EXIST


def test_concrete_values_are_filtered_by_inclusive_bounds() -> None:
    values = Requirement.new(KEY, IN, ["3", "4", "5", "6", "x"])
    r = values.intersection(Requirement.new(KEY, GTE, ["4"])).intersection(
        Requirement.new(KEY, LTE, ["5"])
    )
    assert r.operator == IN
    assert {v for v in (*PROBES, "3", "4", "6", "x") if r.has(v)} == {"4", "5"}
    assert len(r) == 2


@pytest.mark.parametrize(
    ("operator", "values"),
    [
        (GT, []),
        (GTE, ["1", "2"]),
        (LT, ["one"]),
        (LTE, ["1.5"]),
        (GT, ["1_0"]),
        (LT, [" 7"]),
        (GTE, [str(2**63)]),
    ],
)
def test_bound_operators_need_exactly_one_integer(operator: str, values: list[str]) -> None:
    with pytest.raises(InputError):
        Requirement.new(KEY, operator, values)


def test_unknown_operator_is_rejected() -> None:
    with pytest.raises(InputError):
        Requirement.new(KEY, "Equals", ["x"])


@pytest.mark.parametrize("value", ["1_0", " 10", "10 ", "١٠", "0x10", "1e3", ""])
def test_bounds_only_admit_plain_decimal_integers(value: str) -> None:
    """Values are parsed like Go's strconv.Atoi: optional sign and ASCII digits only."""
    assert not Requirement.new(KEY, GT, ["1"]).has(value)
    assert not Requirement.new(KEY, LT, ["100000"]).has(value)


@pytest.mark.parametrize("value", ["+5", "05", "-0"])
def test_bounds_admit_signed_and_zero_padded_integers(value: str) -> None:
    assert Requirement.new(KEY, GT, ["-1"]).has(value)


# --------------------------------------------------------------------------------------
# Requirements: Compatible and Intersects
# --------------------------------------------------------------------------------------

SET_NAMES = ("none", *NAMES)  # "none" is the unconstrained (empty) set

# row.compatible(column) with the key a well-known label, undefined ones allowed.
# "+" = compatible. Columns: none ex dne a b ab na 1 9 19 n12 g1 g9 l1 l9.
COMPATIBLE_WELL_KNOWN: dict[str, str] = {
    "none": "+ + + + + + + + + + + + + + +",
    "ex": "+ + - + + + + + + + + + + + +",
    "dne": "+ - + - - - + - - - + - - - -",
    "a": "+ + - + - + - - - - + - - - -",
    "b": "+ + - - + + + - - - + - - - -",
    "ab": "+ + - + + + + - - - + - - - -",
    "na": "+ + + - + + + + + + + + + + +",
    "1": "+ + - - - - + + - + - - - - +",
    "9": "+ + - - - - + - + + + + - - -",
    "19": "+ + - - - - + + + + + + - - +",
    "n12": "+ + + + + + + - + + + + + + +",
    "g1": "+ + - - - - + - + + + + + - +",
    "g9": "+ + - - - - + - - - + + + - -",
    "l1": "+ + - - - - + - - - + - - + +",
    "l9": "+ + - - - - + + - + + + - + +",
}
# Without the well-known allowance, an unconstrained set cannot satisfy a positive
# requirement (In/Exists/bounds) on a key it does not define; everything else is unchanged.
COMPATIBLE_STRICT = {
    **COMPATIBLE_WELL_KNOWN,
    "none": "+ - + - - - + - - - + - - - -",
}


def _matrix(rows: dict[str, str]) -> dict[tuple[str, str], bool]:
    return {
        (row, col): cell == "+"
        for row, cells in rows.items()
        for col, cell in zip(SET_NAMES, cells.split(), strict=True)
    }


def make_set(name: str, key: str) -> Requirements:
    return Requirements() if name == "none" else Requirements([make(name, key)])


WELL_KNOWN = _matrix(COMPATIBLE_WELL_KNOWN)
STRICT = _matrix(COMPATIBLE_STRICT)


def test_matrices_are_complete() -> None:
    assert len(WELL_KNOWN) == len(STRICT) == len(SET_NAMES) ** 2


@pytest.mark.parametrize(("left", "right"), sorted(WELL_KNOWN))
def test_compatible_with_undefined_well_known_labels_allowed(left: str, right: str) -> None:
    mine, theirs = make_set(left, labels.ZONE), make_set(right, labels.ZONE)
    assert (mine.compatible(theirs) is None) == WELL_KNOWN[left, right]


@pytest.mark.parametrize(("left", "right"), sorted(STRICT))
def test_compatible_strictly(left: str, right: str) -> None:
    mine, theirs = make_set(left, labels.ZONE), make_set(right, labels.ZONE)
    assert (mine.compatible(theirs, allow_undefined=frozenset()) is None) == STRICT[left, right]


@pytest.mark.parametrize(("left", "right"), sorted(STRICT))
def test_compatible_on_a_custom_label_is_strict_by_default(left: str, right: str) -> None:
    mine, theirs = make_set(left, KEY), make_set(right, KEY)
    assert (mine.compatible(theirs) is None) == STRICT[left, right]


@pytest.mark.parametrize(("left", "right"), sorted(WELL_KNOWN))
def test_intersects(left: str, right: str) -> None:
    """Intersects only looks at shared keys, so it is the well-known matrix for any key."""
    mine, theirs = make_set(left, KEY), make_set(right, KEY)
    assert (mine.intersects(theirs) is None) == WELL_KNOWN[left, right]


@pytest.mark.parametrize(
    ("left", "right"),
    [(a, b) for a in ("dne", "na", "n12") for b in ("dne", "na", "n12")],
)
def test_absence_satisfies_two_negative_requirements(left: str, right: str) -> None:
    """NotIn/DoesNotExist on both sides intersects even when no value is shared."""
    assert Requirements([make(left)]).intersects(Requirements([make(right)])) is None


def test_positive_against_negative_with_nothing_shared_conflicts() -> None:
    reason = Requirements([make("a")]).intersects(Requirements([make("na")]))
    assert reason is not None
    assert KEY in reason


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("ex", False),
        ("a", False),
        ("ab", False),
        ("g1", False),
        ("l9", False),
        ("dne", True),
        ("na", True),
        ("n12", True),
    ],
)
def test_undefined_custom_label(name: str, ok: bool) -> None:
    reason = Requirements().compatible(Requirements([make(name, "example.com/team")]))
    assert (reason is None) == ok
    if not ok:
        assert reason is not None and "example.com/team" in reason


@pytest.mark.parametrize("name", ["ex", "a", "g1", "l9", "dne", "na"])
def test_undefined_custom_label_can_be_allowed_explicitly(name: str) -> None:
    theirs = Requirements([make(name, "example.com/team")])
    allowed = frozenset({"example.com/team"})
    assert Requirements().compatible(theirs, allow_undefined=allowed) is None


@pytest.mark.parametrize("key", sorted(labels.WELL_KNOWN_LABELS))
def test_every_undefined_well_known_label_is_allowed(key: str) -> None:
    theirs = Requirements([Requirement.new(key, IN, ["x"])])
    assert Requirements().compatible(theirs) is None
    assert Requirements().compatible(theirs, allow_undefined=frozenset()) is not None


def test_defined_well_known_label_must_still_intersect() -> None:
    mine = Requirements([Requirement.new(labels.ARCH, IN, ["amd64"])])
    assert mine.compatible(Requirements([Requirement.new(labels.ARCH, IN, ["arm64"])])) is not None
    assert mine.compatible(Requirements([Requirement.new(labels.ARCH, IN, ["amd64"])])) is None


# --------------------------------------------------------------------------------------
# Requirements: building, merging, minValues
# --------------------------------------------------------------------------------------


def test_adding_a_key_twice_intersects() -> None:
    reqs = Requirements([make("ab")]).add(make("na"))
    assert shape(reqs[KEY]) == SHAPES["b"]
    merged = Requirements([make("g1")]).merge(Requirements([make("l9"), make("a", "other")]))
    assert shape(merged[KEY]) == SHAPES["g1l9"]
    assert shape(merged["other"]) == SHAPES["a"]


def test_get_or_exists_of_an_absent_key_is_exists() -> None:
    r = Requirements().get_or_exists(KEY)
    assert shape(r) == SHAPES["ex"]
    assert r.key == KEY


def test_min_values_is_the_maximum_when_merged() -> None:
    reqs = Requirements(
        [
            Requirement.new(KEY, IN, ["a", "b", "c"], min_values=2),
            Requirement.new(KEY, NOT_IN, ["c"], min_values=3),
            Requirement.new(KEY, EXISTS),
        ]
    )
    assert reqs[KEY].min_values == 3
    assert reqs[KEY].values == frozenset({"a", "b"})


def test_labels_come_from_single_valued_in() -> None:
    reqs = Requirements([make("a"), make("ab", "multi"), make("ex", "any"), make("dne", "none")])
    assert reqs.labels() == {KEY: "A"}


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

SMALL = [str(n) for n in range(0, 8)]
VALUE_PROBES = [*(str(n) for n in range(-2, 11)), "x"]


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    operator = draw(st.sampled_from([IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE]))
    if operator in (GT, LT, GTE, LTE):
        values = [draw(st.sampled_from(SMALL))]
    else:
        values = draw(st.lists(st.sampled_from([*SMALL, "x"]), max_size=4))
    min_values = draw(st.none() | st.integers(min_value=1, max_value=3))
    return Requirement.new(KEY, operator, values, min_values)


@settings(max_examples=400)
@given(requirements(), requirements())
def test_intersection_membership_is_the_conjunction(a: Requirement, b: Requirement) -> None:
    ab, ba = a.intersection(b), b.intersection(a)
    for v in VALUE_PROBES:
        assert ab.has(v) == ba.has(v) == (a.has(v) and b.has(v)), v


@settings(max_examples=300)
@given(requirements(), requirements())
def test_intersection_is_commutative_in_size_operator_and_min_values(
    a: Requirement, b: Requirement
) -> None:
    ab, ba = a.intersection(b), b.intersection(a)
    assert len(ab) == len(ba)
    assert ab.operator == ba.operator
    expected = [m for m in (a.min_values, b.min_values) if m is not None]
    assert ab.min_values == ba.min_values == (max(expected) if expected else None)


@settings(max_examples=300)
@given(requirements(), requirements(), requirements())
def test_intersection_membership_is_associative(
    a: Requirement, b: Requirement, c: Requirement
) -> None:
    left, right = a.intersection(b).intersection(c), a.intersection(b.intersection(c))
    for v in VALUE_PROBES:
        assert left.has(v) == right.has(v) == (a.has(v) and b.has(v) and c.has(v)), v


@settings(max_examples=300)
@given(requirements(), requirements())
def test_intersects_is_symmetric(a: Requirement, b: Requirement) -> None:
    forward = Requirements([a]).intersects(Requirements([b])) is None
    backward = Requirements([b]).intersects(Requirements([a])) is None
    assert forward == backward


@settings(max_examples=300)
@given(requirements(), requirements())
def test_an_empty_intersection_has_no_members_and_bounds_alone_are_never_empty(
    a: Requirement, b: Requirement
) -> None:
    r = a.intersection(b)
    members = [v for v in VALUE_PROBES if r.has(v)]
    if len(r) == 0:
        assert members == []
    if r.complement and not r.values:
        # Only bounds (or nothing) constrain it: some integer must be allowed.
        assert members, r
    if members:
        assert Requirements([a]).intersects(Requirements([b])) is None


@settings(max_examples=200)
@given(requirements())
def test_any_is_a_member(r: Requirement) -> None:
    value = r.any()
    if value is not None:
        assert r.has(value)
    elif not r.complement:
        assert len(r) == 0
