"""Manifests checked against the OpenAPI schemas the API server uses, before a model reads them.

The schemas are vendored in ``joiner/api/schemas`` (``tools/refresh_schemas.py`` writes them;
``SOURCES.md`` there names module, version and file): Karpenter's CRDs
(``sigs.k8s.io/karpenter``: NodePool, NodeClaim, NodeOverlay, CapacityBuffer,
KWOKNodeClass; ``github.com/aws/karpenter-provider-aws``: EC2NodeClass) and, for core kinds,
the definitions of Kubernetes' own OpenAPI v3 document (``k8s.io/kubernetes``
``api/openapi-spec/v3``) reachable from the kinds Joiner reads.

``check`` applies the structural keywords the API server's schema validation applies
(kube-openapi ``pkg/validation/validate``: type, ``format`` int32/int64, minimum/maximum
and their exclusive forms, enum, pattern, min/maxLength, min/maxItems, min/maxProperties,
required (a field with a ``default`` is never missing: the API server defaults first),
``x-kubernetes-int-or-string``) and stops at the first problem, as a sentence
naming the field path, the rule and the limit. Not evaluated: CEL rules
(``x-kubernetes-validations``), string formats other than ``date-time`` (checked as
``parse_date_time`` reads it), unknown fields (the pydantic models
refuse those with a "did you mean"). A null value counts as absent, as the API server
drops nulls before validating a custom resource.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import yaml

from joiner.api.errors import InputError
from joiner.api.validation import shown, type_name

#: The CRD files vendored in ``joiner/api/schemas``.
CRD_FILES = (
    "karpenter.sh_nodepools.yaml",
    "karpenter.sh_nodeclaims.yaml",
    "karpenter.sh_nodeoverlays.yaml",
    "autoscaling.x-k8s.io_capacitybuffers.yaml",
    "karpenter.kwok.sh_kwoknodeclasses.yaml",
    "karpenter.k8s.aws_ec2nodeclasses.yaml",
)
CORE_FILE = "kubernetes-openapi.json.gz"
_REF = "#/components/schemas/"

#: Integer ranges of the OpenAPI formats (kube-openapi ``validate/formats``).
FORMAT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

#: RFC 3339 as Go's ``time.RFC3339`` layout parses it (fraction optional, ``Z`` or ±hh:mm).
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def parse_date_time(value: object) -> datetime:
    """An RFC 3339 date-time (``2025-01-07T21:00:00Z``) as an aware datetime, as the API
    server reads one (k8s.io/apimachinery pkg/apis/meta/v1/time.go ``Time.UnmarshalJSON``:
    a string in Go's ``time.RFC3339`` layout; OpenAPI ``format: date-time``).

    Raises ValueError naming the value when it is not a string of that form or names no
    real instant (month 13, offset +25:00)."""
    example = "such as 2025-01-07T21:00:00Z"
    if not isinstance(value, str):
        raise ValueError(f"must be an RFC 3339 date-time string {example}, not {shown(value)}")
    if _DATE_TIME.fullmatch(value) is None:
        raise ValueError(f"{shown(value)} is not an RFC 3339 date-time {example}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{shown(value)} is not a real instant (a field or the offset is out of range)"
        ) from None


_TYPE_WORDS = {
    "object": "a mapping (key: value)",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}


@dataclass(frozen=True)
class Schema:
    """The schema of one kind: its root and the named definitions ``$ref`` points to."""

    root: dict[str, Any]
    definitions: dict[str, Any]
    #: Whether ``required`` is enforced: for CRDs, whose schema the API server validates
    #: against; not for core kinds, whose ``required`` lists mirror Go struct tags while the
    #: API server's own Go validation decides what must be given.
    required: bool = True
    #: The compiled acceptance tests of this schema's parts, by ``id`` of the part
    #: (``_Accept``): built on first use, kept as long as the schema.
    compiled: dict[int, _Accept] = field(default_factory=dict, compare=False, repr=False)


def _data(name: str) -> bytes:
    return resources.files("joiner.api.schemas").joinpath(name).read_bytes()


@cache
def _crd_schemas() -> dict[tuple[str, str], Schema]:
    out: dict[tuple[str, str], Schema] = {}
    for name in CRD_FILES:
        crd = yaml.load(_data(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        spec = crd["spec"]
        for version in spec["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = Schema(root, {})
    return out


@cache
def _core_schemas() -> dict[tuple[str, str], Schema]:
    core = json.loads(gzip.decompress(_data(CORE_FILE)))
    definitions: dict[str, Any] = core["schemas"]
    out: dict[tuple[str, str], Schema] = {}
    for key, root in core["kinds"].items():
        api_version, _, kind = key.rpartition("/")
        out[(api_version, kind)] = Schema(definitions[root], definitions, required=False)
    return out


def schema_for(api_version: str, kind: str) -> Schema | None:
    """The vendored schema of ``apiVersion``/``kind``, or None when none is vendored (older
    versions such as ``karpenter.sh/v1beta1``: only the pydantic model checks those)."""
    key = (api_version, kind)
    return _crd_schemas().get(key) or _core_schemas().get(key)


def vendored_kinds() -> list[tuple[str, str]]:
    """Every (apiVersion, kind) with a vendored schema, sorted."""
    return sorted({*_crd_schemas(), *_core_schemas()})


@cache
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


@dataclass(frozen=True)
class Problem:
    """Where a value breaks its schema (``spec.template.spec.kubelet.maxPods``) and how."""

    path: str
    message: str


class _Walker:
    def __init__(self, schema: Schema) -> None:
        self.definitions = schema.definitions
        self.required = schema.required

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            target = self.definitions[schema["$ref"].removeprefix(_REF)]
            if len(schema) == 1:  # the usual {"$ref": ...}: no copy
                schema = target
            else:
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = {**target, **rest}
        return schema

    def check(self, value: Any, schema: dict[str, Any], path: str) -> Problem | None:
        if value is None:
            return None
        schema = self.resolve(schema)
        for sub in schema.get("allOf", ()):
            found = self.check(value, sub, path)
            if found is not None:
                return found
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:
            found = self._any(value, branches, path)
            if found is not None:
                return found
        found = _type_problem(value, schema, path)
        if found is not None:
            return found
        if isinstance(value, dict):
            return self._object(value, schema, path)
        if isinstance(value, list):
            return self._array(value, schema, path)
        return _scalar_problem(value, schema, path)

    def _any(self, value: Any, branches: list[dict[str, Any]], path: str) -> Problem | None:
        problems = [self.check(value, branch, path) for branch in branches]
        if any(p is None for p in problems):
            return None
        types = [self.resolve(b).get("type") for b in branches]
        if all(types):
            words = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in types)
            return Problem(path, f"must be {words}, not {type_name(value)} {shown(value)}")
        first = problems[0]
        assert first is not None
        return first

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> Problem | None:
        properties: dict[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()) if self.required else ():
            # The API server applies a field's default before it validates.
            if value.get(name) is None and "default" not in properties.get(name, {}):
                return Problem(_path(path, name), "required field is missing")
        found = _count_problem(len(value), schema, "Properties", "fields", path)
        if found is not None:
            return found
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                found = self.check(item, sub, _path(path, str(key)))
                if found is not None:
                    return found
        return None

    def _array(self, value: list[Any], schema: dict[str, Any], path: str) -> Problem | None:
        found = _count_problem(len(value), schema, "Items", "items", path)
        if found is not None:
            return found
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                found = self.check(item, items, _path(path, i))
                if found is not None:
                    return found
        return None


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = {"object": dict, "array": list, "string": str, "boolean": bool}.get(kind)
    return expected is None or isinstance(value, expected)


def _type_problem(value: Any, schema: dict[str, Any], path: str) -> Problem | None:
    if schema.get("x-kubernetes-int-or-string"):
        if _is_type(value, "integer") or isinstance(value, str):
            return None
        return Problem(
            path, f"must be a whole number or a string, not {type_name(value)} {shown(value)}"
        )
    kind = schema.get("type")
    if kind is None or _is_type(value, str(kind)):
        return None
    words = _TYPE_WORDS.get(str(kind), str(kind))
    return Problem(path, f"must be {words}, not {type_name(value)} {shown(value)}")


def _count_problem(
    count: int, schema: dict[str, Any], suffix: str, noun: str, path: str
) -> Problem | None:
    least, most = schema.get(f"min{suffix}"), schema.get(f"max{suffix}")
    if least is not None and count < least:
        return Problem(path, f"has {count} {noun}, fewer than the minimum {least}")
    if most is not None and count > most:
        return Problem(path, f"has {count} {noun}, more than the maximum {most}")
    return None


def _scalar_problem(value: Any, schema: dict[str, Any], path: str) -> Problem | None:
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        allowed = ", ".join(repr(e) for e in enum)
        return Problem(path, f"{shown(value)} is not one of the allowed values ({allowed})")
    if isinstance(value, str):
        return _string_problem(value, schema, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number_problem(value, schema, path)
    return None


def _string_problem(value: str, schema: dict[str, Any], path: str) -> Problem | None:
    least, most = schema.get("minLength"), schema.get("maxLength")
    if least is not None and len(value) < least:
        return Problem(path, f"has {len(value)} characters, fewer than the minimum {least}")
    if most is not None and len(value) > most:
        return Problem(path, f"has {len(value)} characters, more than the maximum {most}")
    pattern = schema.get("pattern")
    if pattern is not None and _pattern(pattern).search(value) is None:
        return Problem(path, f"{shown(value)} does not match the pattern {pattern}")
    if schema.get("format") == "date-time":
        try:
            parse_date_time(value)
        except ValueError as e:
            return Problem(path, str(e))
    return None


def _number_problem(value: float, schema: dict[str, Any], path: str) -> Problem | None:
    limits = FORMAT_RANGES.get(str(schema.get("format")))
    if limits is not None and not limits[0] <= value <= limits[1]:
        low, high = limits
        return Problem(
            path,
            f"{shown(value)} is outside the range of an {schema['format']} ({low} to {high})",
        )
    least, most = schema.get("minimum"), schema.get("maximum")
    if least is not None:
        if schema.get("exclusiveMinimum") is True and value <= least:
            return Problem(path, f"{shown(value)} is not more than the exclusive minimum {least}")
        if value < least:
            return Problem(path, f"{shown(value)} is less than the minimum {least}")
    if most is not None:
        if schema.get("exclusiveMaximum") is True and value >= most:
            return Problem(path, f"{shown(value)} is not less than the exclusive maximum {most}")
        if value > most:
            return Problem(path, f"{shown(value)} is more than the maximum {most}")
    return None


#: The keywords ``_scalar_problem`` reads: a part without any of them accepts every scalar
#: of its type.
_SCALAR_KEYS = frozenset(
    {
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
#: The Python type that alone satisfies a plain ``type`` (``type(value) is``): bool is not an
#: int here, and a whole float falls through to the full test.
_PLAIN_TYPES: dict[str, type] = {"string": str, "boolean": bool, "integer": int}


def _type_test(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """``_type_problem``'s verdict as a predicate (None: every value passes)."""
    if schema.get("x-kubernetes-int-or-string"):
        return lambda v: _is_type(v, "integer") or isinstance(v, str)
    kind = schema.get("type")
    if kind is None:
        return None
    exact = {"object": dict, "array": list, "string": str, "boolean": bool}.get(str(kind))
    if exact is not None:
        return lambda v: isinstance(v, exact)
    return lambda v: _is_type(v, str(kind))


class _Accept:
    """One schema part compiled into a yes/no test that agrees with ``_Walker.check``
    (None from it is True here) but builds no path and reads no keyword twice: whole
    documents are accepted at a fraction of the walk's cost, and a refused one is walked
    again by ``_Walker`` for its sentence."""

    __slots__ = (
        "all_of",
        "any_of",
        "counts",
        "extra",
        "items",
        "plain",
        "props",
        "required",
        "scalar",
        "type_ok",
    )

    def __init__(self) -> None:
        self.all_of: tuple[_Accept, ...] = ()
        self.any_of: tuple[_Accept, ...] = ()
        self.type_ok: Callable[[Any], bool] | None = None
        #: the type a value of which passes with nothing else to check, else None
        self.plain: type | None = None
        self.props: dict[str, _Accept] = {}
        self.extra: _Accept | None = None
        self.required: tuple[str, ...] = ()
        self.counts: dict[str, Any] | None = None
        self.items: _Accept | None = None
        self.scalar: dict[str, Any] | None = None

    def ok(self, value: Any) -> bool:
        if value is None:
            return True
        for sub in self.all_of:
            if not sub.ok(value):
                return False
        if self.any_of and not any(branch.ok(value) for branch in self.any_of):
            return False
        if self.type_ok is not None and not self.type_ok(value):
            return False
        if isinstance(value, dict):
            return self._object_ok(value)
        if isinstance(value, list):
            return self._array_ok(value)
        return self.scalar is None or _scalar_problem(value, self.scalar, "") is None

    def _object_ok(self, value: dict[str, Any]) -> bool:
        for name in self.required:
            if value.get(name) is None:
                return False
        if self.counts is not None and _count_problem(
            len(value), self.counts, "Properties", "fields", ""
        ):
            return False
        props, extra = self.props, self.extra
        for key, item in value.items():
            sub = props.get(key, extra)
            if sub is None or item is None or type(item) is sub.plain:
                continue
            if not sub.ok(item):
                return False
        return True

    def _array_ok(self, value: list[Any]) -> bool:
        counts = self.counts
        if counts is not None and _count_problem(len(value), counts, "Items", "items", ""):
            return False
        items = self.items
        if items is None:
            return True
        plain = items.plain
        return all(type(item) is plain or items.ok(item) for item in value)


_COUNT_KEYS = ("minProperties", "maxProperties", "minItems", "maxItems")


def _compile(raw: dict[str, Any], walker: _Walker, memo: dict[int, _Accept]) -> _Accept:
    """``raw`` (a part of the schema ``memo`` belongs to) as an ``_Accept``; cycles through
    ``$ref`` are closed by the memo, filled before the part's children are compiled."""
    node = memo.get(id(raw))
    if node is not None:
        return node
    node = memo[id(raw)] = _Accept()
    part = walker.resolve(raw)
    node.all_of = tuple(_compile(sub, walker, memo) for sub in part.get("allOf", ()))
    branches = part.get("oneOf") or part.get("anyOf")
    node.any_of = tuple(_compile(b, walker, memo) for b in branches) if branches else ()
    node.type_ok = _type_test(part)
    properties: dict[str, Any] = part.get("properties", {})
    node.props = {key: _compile(sub, walker, memo) for key, sub in properties.items()}
    extra = part.get("additionalProperties")
    node.extra = _compile(extra, walker, memo) if isinstance(extra, dict) else None
    if walker.required:
        node.required = tuple(
            name for name in part.get("required", ()) if "default" not in properties.get(name, {})
        )
    node.counts = part if any(key in part for key in _COUNT_KEYS) else None
    items = part.get("items")
    node.items = _compile(items, walker, memo) if isinstance(items, dict) else None
    node.scalar = part if _SCALAR_KEYS & part.keys() else None
    simple = not (node.all_of or node.any_of or node.scalar or node.counts)
    if simple and not part.get("x-kubernetes-int-or-string"):
        node.plain = _PLAIN_TYPES.get(str(part.get("type")))
    return node


def problem(doc: dict[str, Any], schema: Schema) -> Problem | None:
    """The first place ``doc`` breaks ``schema``, or None. ``status`` is not checked: the
    API server's controllers write it, and a dump's or a test's status may be partial."""
    spec = {key: value for key, value in doc.items() if key != "status"}
    walker = _Walker(schema)
    if _compile(schema.root, walker, schema.compiled).ok(spec):
        return None
    return walker.check(spec, schema.root, "")


def check(doc: dict[str, Any], api_version: str, kind: str, file: str, obj: str) -> None:
    """Check one manifest against the vendored schema of its kind (nothing when none is
    vendored).

    Raises:
        InputError: naming ``file``, ``obj`` and the field path, with the rule and limit
            (``spec.replicas: -1 is less than the minimum 0``).
    """
    schema = schema_for(api_version, kind)
    if schema is None:
        return
    found = problem(doc, schema)
    if found is not None:
        raise InputError(found.message, file=file, obj=obj, field=found.path or None)
