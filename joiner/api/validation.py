"""pydantic validation errors in the words a person reads (never "Input should be ...").

Every loader (manifests, scenarios, FIS templates, NTH values, controller settings) checks
shapes with pydantic; ``describe`` turns its first error into "what is wrong and what to
write instead", and ``field_path`` into a dotted path (``spec.workloads[0].replicas``).
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from joiner.api.limits import MAX_REPLICAS

_BRANCH_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})

_KIND = {
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "datetime_type": "an ISO 8601 time such as 2025-01-06T09:30:00Z",
    "datetime_parsing": "an ISO 8601 time such as 2025-01-06T09:30:00Z",
    "datetime_from_date_parsing": "an ISO 8601 time such as 2025-01-06T09:30:00Z",
    "none_required": "empty (null)",
}


def shown(value: Any) -> str:
    """``repr(value)`` cut to 60 characters, for quoting a bad value in a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def type_name(value: Any) -> str:
    """What ``value`` is, in words (``a mapping``, ``a string``, ``int``)."""
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def field_path(loc: tuple[int | str, ...]) -> str:
    """``("spec", "workloads", 0, "replicas")`` as ``spec.workloads[0].replicas``, without
    the union-branch tags pydantic inserts (``str``, ``function-after[...]``)."""
    parts = [p for p in loc if isinstance(p, int) or (p not in _BRANCH_TAGS and "[" not in str(p))]
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in parts).replace(".[", "[")


def model_in(annotation: Any) -> type[BaseModel] | None:
    """The first pydantic model inside a field's annotation (``list[Term] | None`` gives
    ``Term``), or None."""
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = model_in(arg)
        if found is not None:
            return found
    return None


def model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model found by following ``loc`` (field names; list indices skipped)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            return None
        current = model_in(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _replica_limit(bound: object, value: object) -> str | None:
    """The message for a count above ``MAX_REPLICAS`` (None when ``bound`` is another):
    Joiner's simulation limit, not an API rule (the API server takes any int32)."""
    if bound != MAX_REPLICAS:
        return None
    return (
        f"{shown(value)} is above Joiner's simulation limit of {MAX_REPLICAS:,} pods per "
        "workload (MAX_REPLICAS: not an API rule, the API server would take it; Joiner "
        "does not simulate more)"
    )


def describe(err: ErrorDetails, model: type[BaseModel] | None = None) -> str:
    """One pydantic error as a sentence: what is wrong and what to write instead.

    ``model`` (the root model validated) lets an unknown field get a "did you mean" hint.
    """
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    loc = tuple(err["loc"])
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        parent = model_at(model, loc[:-1]) if model is not None else None
        known = sorted(parent.model_fields) if parent is not None else []
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown field {loc[-1]!r}{hint}"
    if kind in _KIND:
        if value is None:  # `key:` with nothing after it, or `key: null`
            return f"must be {_KIND[kind]}, not empty (null); give a value or leave the key out"
        return f"must be {_KIND[kind]}, not {type_name(value)} {shown(value)}"
    if kind == "literal_error" or kind == "enum":
        return f"must be one of {ctx.get('expected', '?')}, not {shown(value)}"
    bounds = {
        "greater_than": ("greater than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind == "less_than_equal" and (limit := _replica_limit(ctx.get("le"), value)):
        return limit
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}, not {shown(value)}"
    if kind in ("too_short", "string_too_short"):
        least = ctx.get("min_length", 1)
        what = "characters" if kind == "string_too_short" else "items"
        return "must not be empty" if least == 1 else f"needs at least {least} {what}"
    if kind in ("too_long", "string_too_long"):
        what = "characters" if kind == "string_too_long" else "items"
        return f"has more than {ctx.get('max_length')} {what}"
    if kind == "value_error":
        error = ctx.get("error")
        return str(error) if error is not None else "invalid value"
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return f"has an unknown type {shown(value)}"
    msg = str(err.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg.replace("Input should be", "must be").replace("Input", "the value")
