"""The fast paths of reading a cluster dump agree with the plain computations they stand in
for: the compiled schema test (``openapi._Accept``) with the schema walk, YAML built from
libyaml's events (``yamlio._EventReader``) with the node graph and its constructor, and the
remembered quantity parses with a fresh parse."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from joiner.api import openapi, quantity
from joiner.api.errors import InputError
from joiner.api.manifests import yamlio
from joiner.api.manifests.loader import load_text
from joiner.api.manifests.nulls import drop_nulls

ROOT = Path(__file__).parents[2]
SHARED_SEED = ROOT.parent / "shared" / "examples" / "seed"
#: values a mutation puts in place of a field: every JSON type, out-of-range numbers, a
#: whole float, an empty and a long string, patterns' usual breakers
ODD_VALUES: list[Any] = [
    "x",
    "",
    "UPPER_case!",
    "a" * 300,
    1,
    -1,
    0,
    2**40,
    1.5,
    2.0,
    True,
    None,
    [],
    ["x"],
    [1, "x"],
    {},
    {"x": 1},
]


def _documents() -> list[dict[str, Any]]:
    paths = sorted((ROOT / "examples").rglob("*.yaml"))
    if SHARED_SEED.is_dir():
        paths += sorted(SHARED_SEED.glob("*.yaml"))
    docs: list[dict[str, Any]] = []
    for path in paths:
        for doc in yamlio.read_documents(path):
            if isinstance(doc, dict) and isinstance(doc.get("apiVersion"), str):
                docs.append(doc)
    return docs


def _slots(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` a mutation can write to (keys of mappings, list indexes)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((*at, key))
            out += _slots(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.append((*at, i))
            out += _slots(item, (*at, i))
    return out


def _set(doc: Any, where: tuple[Any, ...], value: Any) -> None:
    for step in where[:-1]:
        doc = doc[step]
    doc[where[-1]] = value


def _verdicts(doc: dict[str, Any]) -> tuple[bool, bool] | None:
    schema = openapi.schema_for(doc["apiVersion"], str(doc.get("kind")))
    if schema is None:
        return None
    spec = {key: value for key, value in doc.items() if key != "status"}
    walker = openapi._Walker(schema)
    fast = openapi._compile(schema.root, walker, schema.compiled).ok(spec)
    return fast, walker.check(spec, schema.root, "") is None


def test_compiled_schema_test_agrees_with_the_walk_on_mutated_manifests() -> None:
    docs = [d for d in _documents() if _verdicts(d) is not None]
    assert len(docs) >= 20, "the examples hold manifests of vendored kinds"
    rng = random.Random(7)
    refused = 0
    for doc in docs:
        fast, walked = _verdicts(doc)  # type: ignore[misc]
        assert fast == walked
        slots = _slots(doc)
        for where in rng.sample(slots, min(len(slots), 40)):
            changed = copy.deepcopy(doc)
            _set(changed, where, copy.deepcopy(rng.choice(ODD_VALUES)))
            if not isinstance(changed.get("apiVersion"), str):
                continue
            verdicts = _verdicts(changed)
            if verdicts is None:
                continue
            assert verdicts[0] == verdicts[1], (where, changed)
            refused += not verdicts[1]
    assert refused >= 100, "the mutations reach the schema's refusals"


def test_the_compiled_test_refuses_what_the_walk_names() -> None:
    root = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "integer", "minimum": 0},
            "b": {"type": "array", "maxItems": 1, "items": {"type": "string", "enum": ["x"]}},
            "c": {"x-kubernetes-int-or-string": True},
            "d": {"type": "object", "additionalProperties": {"type": "boolean"}},
        },
    }
    schema = openapi.Schema(root, {})
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"a": 1, "b": ["x"], "c": "50%", "d": {"k": True}}, None),
        ({"a": 2.0}, None),
        ({}, "a"),
        ({"a": -1}, "a"),
        ({"a": True}, "a"),
        ({"a": 1, "b": ["x", "x"]}, "b"),
        ({"a": 1, "b": ["y"]}, "b[0]"),
        ({"a": 1, "c": 1.5}, "c"),
        ({"a": 1, "d": {"k": "true"}}, "d.k"),
    ]
    for doc, path in cases:
        found = openapi.problem(doc, schema)
        assert (found and found.path) == path, doc


YAML_TEXTS = [
    "a: 1\nb: '1'\nc: 1.5\nd: yes\ne: ~\nf: null\ng: 010\nh: 1_000\ni: 0x1F\nj: .inf\n",
    "release: 2024-01-01\nwindow: 1:20\nn: -.5\nm: +1\nq: 1e3\nr: 1.0e+3\n",
    "---\n---\na: [1, {b: c}, [], {}]\n...\n---\n- x\n- 'y'\n- \"z\"\n",
    "",
    "# only a comment\n",
    "key: |\n  block\n  text\nother: >\n  folded\n  text\n",
    "? complex\n: value\n'quoted key': 1\n2: int key\nnull: null key\ntrue: bool key\n",
    "a: &x {b: 1}\nc: *x\n",
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",
    "a: !!str 5\nb: !!int '7'\n",
    "nan: .nan\nneg: -.inf\nkeys: {.nan: 1}\n",
]


@pytest.mark.parametrize("text", YAML_TEXTS)
def test_yaml_from_events_is_the_node_paths_value(text: str) -> None:
    loader = yamlio._StrictLoader(text)
    try:
        expected = []
        while loader.check_node():
            expected.append(loader.construct_document(loader.get_node()))
    finally:
        loader.dispose()
    got = yamlio._load_all(text, "t.yaml")
    assert repr(got) == repr(expected)


@pytest.mark.parametrize(
    "text",
    ["a: 1\nb: 2\na: 3\n", "a: [1, 2\n", "a: {b: 1, b: 2}\n", "a:\n  - b\n c: 1\n"],
)
def test_yaml_errors_are_the_node_paths(text: str) -> None:
    with pytest.raises(InputError) as fast:
        yamlio.parse_documents(text, "t.yaml")
    loader = yamlio._StrictLoader(text)
    with pytest.raises(yaml.YAMLError) as nodes:
        while loader.check_node():
            loader.construct_document(loader.get_node())
    assert str(nodes.value.problem) in str(fast.value)  # type: ignore[attr-defined]


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("text", ["a: =\n", "- =\n", "=: 1\n", "a: {b: [x, =]}\n"])
def test_a_plain_scalar_the_safe_constructor_cannot_build_is_the_node_paths_error(
    text: str, drop: bool
) -> None:
    """``=`` resolves to YAML 1.1's value tag, for which the safe constructor has no
    constructor: the node path's error with its line, not a KeyError from the event path."""
    with pytest.raises(InputError, match=r"line 1, .*could not determine a constructor"):
        yamlio.parse_documents(text, "t.yaml", drop_nulls=drop)


def test_plain_yaml_does_not_go_through_the_node_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the node graph was built")

    monkeypatch.setattr(yamlio, "_expanded_size", refuse)
    docs = yamlio.parse_documents("apiVersion: v1\nkind: List\nitems:\n- {a: 1}\n", "t.yaml")
    assert docs == [{"apiVersion": "v1", "kind": "List", "items": [{"a": 1}]}]


def test_aliases_still_go_through_the_expansion_bound() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 8):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join(['*' + chr(96 + i)] * 10)}]\n"
    with pytest.raises(InputError, match="aliases expand"):
        yamlio.parse_documents(bomb, "bomb.yaml")


def test_a_remembered_quantity_still_names_its_field_when_refused() -> None:
    for _ in range(2):
        assert quantity.parse("100m", resource="cpu") == 100
        with pytest.raises(InputError) as exc:
            quantity.parse("12x", resource="memory", field="spec.containers[0].resources")
        assert exc.value.field == "spec.containers[0].resources"
    assert quantity.parse(True and "1", resource="cpu") == 1000
    with pytest.raises(InputError):
        quantity.parse(True, resource="cpu")  # a bool is not the integer 1
    assert quantity.parse(1, resource="cpu") == 1000
    assert quantity.parse(1.0, resource="cpu") == 1000


def test_a_lists_items_lose_their_nulls() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default, labels: null}\n"
        "  spec:\n    tolerations: null\n    containers:\n"
        "    - name: c\n      image: i\n      resources: {requests: {cpu: 100m}, limits: null}\n"
    )
    out = load_text(text, "list.yaml")
    assert [p.key for p in out.pods] == ["default/p"]


NULL_TEXTS = [
    "a: null\nb: ~\nc:\nd: [null, {e: null, f: 1}]\ng: {h: ~}\n",
    '{"a": null, "b": [null, {"c": null, "d": 1}], "e": {"f": null}}',
    "a: &x {b: null}\nc: *x\n",  # the node path
    "- {a: null}\n- null\n",
]


@pytest.mark.parametrize("text", NULL_TEXTS)
def test_nulls_left_out_while_reading_are_drop_nulls(text: str) -> None:
    plain = [drop_nulls(d) for d in yamlio.parse_documents(text, "t.yaml")]
    assert yamlio.parse_documents(text, "t.yaml", drop_nulls=True) == plain


@pytest.mark.parametrize("text", ["a: null\na: 1\n", '{"a": null, "a": 1}', "a: 1\na: ~\n"])
def test_a_duplicate_key_with_a_null_value_is_still_refused(text: str) -> None:
    with pytest.raises(InputError, match="duplicate key"):
        yamlio.parse_documents(text, "t.yaml", drop_nulls=True)


@pytest.mark.parametrize("opening", ["{a: ", "[", "a:\n  "])
def test_nesting_past_the_event_readers_bound_goes_to_the_node_path(opening: str) -> None:
    """Collections nested deeper than ``MAX_EVENT_DEPTH`` are read by the node path, which
    refuses a few hundred nested mappings (its constructor recurses); at the bound the event
    reader still reads the document."""

    def nested(depth: int) -> str:
        if opening == "a:\n  ":
            return "".join(f"{'  ' * i}a:\n" for i in range(depth)) + "  " * depth + "1\n"
        closing = "}" if opening == "{a: " else "]"
        return opening * depth + "1" + closing * depth

    yamlio._from_events(nested(yamlio.MAX_EVENT_DEPTH))
    with pytest.raises(yamlio._NeedsNodes):
        yamlio._from_events(nested(yamlio.MAX_EVENT_DEPTH + 1))


def test_mappings_too_deep_for_the_node_path_are_refused_as_before() -> None:
    """300 nested flow mappings: the node path's constructor runs out of stack, so the
    document is refused as too deeply nested (the event reader alone would accept it)."""
    with pytest.raises(InputError, match="nested too deeply"):
        yamlio.parse_documents("{a: " * 300 + "1" + "}" * 300, "deep.yaml")
