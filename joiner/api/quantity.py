"""Kubernetes resource quantities, converted once at the edge to integers.

CPU is kept in millicores, every other resource (memory, ephemeral-storage, pods,
extended resources) in its base unit (bytes, count). Parsing follows apimachinery's
``ParseQuantity`` (k8s.io/apimachinery pkg/api/resource/quantity.go): a decimal number,
then a suffix ``n``, ``u``, ``m``, ``k``..``E`` (powers of 1000), ``Ki``..``Ei`` (powers
of 1024) or a decimal exponent (``e3``, ``E9``, ``E+3``; ``E`` alone is Exa). It is
written here (a table and a regular expression) rather than imported from lightkube, whose
``lightkube.utils.quantity`` pulls the whole client (httpx and the generated models) into
every command's start-up and, unlike apimachinery, refuses ``1E9`` and reads ``Z`` and
``Y``; lightkube stays in ``joiner/cluster/kube``."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import ROUND_UP, Decimal, localcontext
from functools import lru_cache

from joiner.api import resourcenames
from joiner.api.errors import InputError

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

MIB = 1024 * 1024
GIB = 1024 * MIB

#: Larger than any real resource amount (1 EiB of bytes, 10^18 cores): rejected as a typo.
MAX_QUANTITY = Decimal(2) ** 60
#: The largest amount Joiner keeps in a resource's base unit (bytes, millicores, units): a
#: parsed quantity, and a pod's summed requests, beyond it are rejected, so every sum the
#: scheduler forms stays within 64-bit integers (numpy arrays).
MAX_AMOUNT = 1 << 60

#: A quantity as apimachinery's ``parseQuantityString`` (k8s.io/apimachinery
#: pkg/api/resource/quantity.go) splits it: a sign, digits with an optional fraction (any
#: part may be empty: ``"-"``, ``"."`` and ``"Gi"`` are all 0 there), then the suffix:
#: letters of ``eEinumkKMGTP``, an optional sign and digits. What the suffix means is
#: ``_suffix_multiplier``'s.
_NUMBER = re.compile(r"([+-]?)(\d*)(?:[.](\d*))?([eEinumkKMGTP]*[+-]?\d*)", re.ASCII)

#: Suffix -> multiplier, apimachinery's tables (pkg/api/resource/suffix.go, ``newSuffixer``):
#: decimal SI (``n`` to ``E``) and binary (``Ki`` to ``Ei``).
_MULTIPLIERS = {
    **{
        s: Decimal(10) ** e
        for s, e in zip(
            ("n", "u", "m", "", "k", "M", "G", "T", "P", "E"), range(-9, 19, 3), strict=True
        )
    },
    **{
        s: Decimal(1024) ** e
        for s, e in zip(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), range(1, 7), strict=True)
    },
}

#: Binary suffixes (the amount is capped at 2^63-1, as ``ParseQuantity`` caps it).
_BINARY = frozenset(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
_MAX_INT64 = Decimal((1 << 63) - 1)
_NANO = Decimal("1e-9")


def _digitless_reads(multiplier: Decimal, *, binary: bool) -> bool:
    """Whether ``ParseQuantity``'s integer path (k8s.io/apimachinery
    pkg/api/resource/quantity.go) takes a number with no digit (read as 0) under this
    suffix: a decimal one of at least nano, a binary one up to Ti (its precision estimate
    ``15 - 1 - exponent*3/10 - 1`` goes negative from Pi). Elsewhere its decimal path
    parses the empty number and fails."""
    return multiplier <= Decimal(1024) ** 4 if binary else multiplier >= _NANO


#: A decimal exponent suffix, as ``suffixHandler.interpret`` reads one that is not in the
#: tables: ``e`` or ``E`` and a (signed) integer. ``E`` alone is the Exa suffix.
_EXPONENT = re.compile(r"[eE]([+-]?\d+)", re.ASCII)


def _suffix_multiplier(suffix: str) -> Decimal:
    """The multiplier of a quantity's suffix, as apimachinery's ``suffixHandler.interpret``
    (k8s.io/apimachinery pkg/api/resource/suffix.go) reads it: the decimal and binary tables
    first (so ``E`` is Exa and ``Ei`` exbi), then ``e``/``E`` and an integer as a power of 10
    (``E9``, ``e+3``, ``E-3``).

    Raises:
        ValueError: any other suffix (``e`` alone, ``K``, ``Z``, ``Ee3``), or an exponent
            beyond Decimal's range.
    """
    multiplier = _MULTIPLIERS.get(suffix)
    if multiplier is not None:
        return multiplier
    exponent = _EXPONENT.fullmatch(suffix)
    if exponent is None:
        raise ValueError(f"invalid unit suffix {suffix!r}")
    try:
        return Decimal(1).scaleb(int(exponent.group(1)))
    except ArithmeticError as exc:  # beyond Decimal's exponent range
        raise ValueError(f"exponent out of range in {suffix!r}") from exc


def exact_quantity(text: str) -> Decimal:
    """A quantity string as a decimal (``"0.5Gi"`` -> 536870912, ``"1E9"`` -> 10^9,
    ``"500n"`` -> 0.0000005), read as apimachinery's ``ParseQuantity``
    (k8s.io/apimachinery pkg/api/resource/quantity.go) reads it: a non-zero amount rounded
    up (away from zero) to a whole nano unit, a binary amount capped at 2^63-1, and a number
    with no digit (``"-"``, ``"."``, ``"Gi"``) 0 where ParseQuantity's integer path takes it
    and an error where its decimal path must parse it (``"Pi"``, ``"e-10"``).

    Raises:
        ValueError: not a number with a known suffix (the empty string included).
    """
    match = _NUMBER.fullmatch(text)
    if not text or not match:
        raise ValueError(f"invalid quantity {text!r}")
    sign, whole, fraction, suffix = match.groups()
    multiplier = _suffix_multiplier(suffix)
    binary = suffix in _BINARY
    if not whole and not fraction and not _digitless_reads(multiplier, binary=binary):
        raise ValueError(f"invalid quantity {text!r}: no digits")
    with localcontext() as ctx:
        ctx.prec = 80  # exact for any amount Joiner can keep (at most 2^60 units)
        try:
            amount = Decimal(f"{sign}{whole or 0}.{fraction or 0}") * multiplier
            if amount:
                amount = amount.quantize(_NANO, rounding=ROUND_UP)
        except ArithmeticError as exc:
            raise ValueError("invalid numerical value") from exc
    if binary and abs(amount) > _MAX_INT64:
        amount = _MAX_INT64.copy_sign(amount)
    return amount


def parse_quantity(text: str) -> Decimal:
    """A quantity string as a bare decimal, rounded up to a thousandth (``"0.5Gi"`` ->
    536870912, ``"100m"`` -> 0.1), as lightkube's ``parse_quantity`` rounds it.

    Raises:
        ValueError: not a number with a known suffix (``exact_quantity``).
    """
    try:
        return exact_quantity(text).quantize(Decimal("0.001"), rounding=ROUND_UP)
    except ArithmeticError as exc:
        raise ValueError("invalid numerical value") from exc


#: A resource list: resource name -> integer amount (cpu in millicores, others in base units).
Resources = dict[str, int]


def _decimal(value: object, field: str | None) -> Decimal:
    """``value`` (a YAML number or a quantity string) as a bare decimal, before any range
    check; strings go through ``exact_quantity``.

    Raises:
        InputError: a bool, a non-ASCII string, a string that is not a quantity, or another type.
    """
    if isinstance(value, bool):
        raise InputError(f"{value!r} is not a quantity", field=field)
    if isinstance(value, str) and not value.isascii():
        # Kubernetes' quantity grammar is ASCII; Python's Decimal would take "١٠" as 10.
        raise InputError(
            f"{value!r} is not a Kubernetes quantity: use ASCII digits (examples: 500m, 2, 4Gi)",
            field=field,
        )
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise InputError(f"{value!r} is not a quantity", field=field)
    try:
        # apimachinery's Quantity.UnmarshalJSON trims surrounding space before parsing.
        return exact_quantity(value.strip())
    except ValueError as exc:
        raise InputError(
            f"{value!r} is not a Kubernetes quantity (examples: 500m, 2, 4Gi, 100M)",
            field=field,
        ) from exc


def parse(value: object, *, resource: str, field: str | None = None, whole: bool = False) -> int:
    """Parse one quantity into an integer in the resource's base unit.

    ``cpu`` returns millicores (``"1.5"`` -> 1500, ``"250m"`` -> 250); any other resource
    returns its base unit rounded up (``"1Gi"`` -> 1073741824). Integers and floats are
    accepted as YAML gives them. With ``whole`` (a container's extended resource) a
    fractional amount is an error, as the API server rejects it.

    Raises:
        InputError: the value is not a quantity, is negative, or (``whole``) is fractional.
    """
    if isinstance(value, str | int | float):
        known = _parsed(value, resource, whole)
        if known is not None:
            return known
    return _parse(value, resource=resource, field=field, whole=whole)


@lru_cache(maxsize=8192, typed=True)
def _parsed(value: str | int | float, resource: str, whole: bool) -> int | None:
    """``_parse`` of a value a cluster repeats on every pod (``"100m"``, ``"128Mi"``),
    remembered; None where it refuses the value (the caller parses it again for the error
    that names its field)."""
    try:
        return _parse(value, resource=resource, field=None, whole=whole)
    except InputError:
        return None


def _parse(value: object, *, resource: str, field: str | None, whole: bool) -> int:
    amount = _decimal(value, field)
    if not amount.is_finite():
        raise InputError(f"quantity {value!r} is not a finite number", field=field)
    if amount > MAX_QUANTITY:
        raise InputError(f"quantity {value!r} is implausibly large", field=field)
    if amount < 0:
        raise InputError(f"quantity {value!r} is negative", field=field)
    if resource == CPU:
        amount *= 1000
    elif whole and amount != amount.to_integral_value():
        raise InputError(
            f"{value!r}: an extended resource is counted in whole units (Kubernetes' "
            "ValidateResourceRequirements: must be an integer)",
            field=field,
        )
    out = math.ceil(amount)
    if out > MAX_AMOUNT:
        unit = "millicores" if resource == CPU else "units"
        raise InputError(
            f"quantity {value!r} is implausibly large (at most 2^60 {unit} of {resource})",
            field=field,
        )
    return out


def check_plausible(resources: Mapping[str, int], *, field: str | None = None) -> None:
    """Reject summed amounts (a pod's requests over its containers, init containers and
    overhead) beyond ``MAX_AMOUNT``, as ``parse`` rejects a single one.

    Raises:
        InputError: an amount is beyond ``MAX_AMOUNT``, naming the resource.
    """
    for name, amount in resources.items():
        if amount > MAX_AMOUNT:
            raise InputError(
                f"the {name} requests add up to {format_resources({name: amount})}, "
                "implausibly large (at most 2^60 "
                f"{'millicores' if name == CPU else 'units'})",
                field=field,
            )


def parse_resources(
    raw: Mapping[str, object] | None,
    *,
    field: str | None = None,
    names: resourcenames.Rule = resourcenames.QUALIFIED,
) -> Resources:
    """Parse a ResourceList mapping (``{"cpu": "1", "memory": "2Gi"}``) into integers.

    ``names`` is the rule its keys follow (``joiner.api.resourcenames``: ``qualified``, the
    least any Kubernetes resource list takes, ``resource`` or ``container``).

    Raises:
        InputError: a key breaks ``names``, or a value is not a quantity (key named); under
            the ``container`` rule, an extended resource's amount is not whole.
    """
    out: Resources = {}
    for name, value in (raw or {}).items():
        where = f"{field}.{name}" if field else str(name)
        resourcenames.check(name, rule=names, field=where)
        whole = names == resourcenames.CONTAINER and resourcenames.is_extended(str(name))
        out[str(name)] = parse(value, resource=str(name), field=where, whole=whole)
    return out


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """Element-wise sum of two resource lists."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """Element-wise ``a - b`` (may go negative; callers check ``fits``)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return out


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """True when every requested amount is within ``available`` (a missing resource is 0)."""
    return all(v <= 0 or v <= available.get(k, 0) for k, v in requests.items())


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    """Element-wise maximum (init-container rule, pessimistic limits)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


#: Binary suffixes for messages, largest first (Kubernetes' canonical quantity form writes
#: an amount in the largest binary unit that keeps it whole).
_BINARY_UNITS = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", MIB))


def format_resources(res: Mapping[str, int]) -> str:
    """Human form, e.g. ``cpu=1500m memory=2Gi pods=1``, for messages: memory and
    ephemeral storage in the largest of Mi, Gi, Ti, Pi and Ei that keeps the amount whole
    (bytes when none does)."""
    parts = []
    for k in sorted(res):
        v = res[k]
        if k == CPU:
            parts.append(f"cpu={v}m")
        elif k in (MEMORY, EPHEMERAL_STORAGE) and v and v % MIB == 0:
            suffix, size = next(u for u in _BINARY_UNITS if v % u[1] == 0)
            parts.append(f"{k}={v // size}{suffix}")
        else:
            parts.append(f"{k}={v}")
    return " ".join(parts)
