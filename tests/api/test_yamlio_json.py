"""``yamlio.parse_documents`` reads JSON with the json module when YAML would read it the
same way; the answers and the errors equal the YAML path's (``_load_all``)."""

from __future__ import annotations

import json

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import yamlio


def _dump(pods: int) -> str:
    """A ``kubectl get -o json`` style List of pods (as ``benchmarks/realistic.py`` uses)."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}
                ],
                "priority": i - 3,
            },
            "status": {"phase": "Pending", "ratio": i / 4},
        }
        for i in range(pods)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1)


SAME = [
    _dump(60),
    '{"a": 1, "b": -0, "c": 1.50, "d": -0.25, "e": "x\\ty\\/z", "f": [true, false, null]}',
    '[{"kind": "Pod"}, {}, [], 12345678901234567890]',
    "null",
    '  {"spaces": "  around  "}  \n',
    # Read differently by JSON and YAML 1.1, so left to YAML: exponents, NaN, \u escapes.
    '{"x": 1e3, "y": 1.0e+3, "z": 2.5E-1}',
    '{"n": NaN}',
    '{"e": "\\u00e9"}',
    # Not JSON: YAML decides.
    "{a: 1, b: [x, y]}",
    '{"a": 1}\n---\n{"b": 2}\n',
    "kind: Pod\nmetadata: {name: p}\n",
    # The breaker's inputs: characters YAML reads as a line break (NEL, U+2028) inside a
    # string are left to YAML, which folds them.
    '{"a": "x\x85y"}',
    '{"a": "x\u2028y"}',
]


@pytest.mark.parametrize("text", SAME)
def test_documents_equal_the_yaml_path(text: str) -> None:
    expect = [d for d in yamlio._load_all(text, "t") if d is not None]
    got = yamlio.parse_documents(text, "t")
    assert got == expect
    assert json.dumps(got, sort_keys=True) == json.dumps(expect, sort_keys=True)


def test_the_dump_takes_the_json_path() -> None:
    assert yamlio._load_json(_dump(10)) is not None
    assert yamlio._load_json('{"x": 1e3}') is None


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": [1, 2}',
        '{"a": {"b": {"b": 1, "b": 2}}}',
        # A surrogate pair: json would join it, libyaml rejects it.
        '{"emoji": "\\ud83d\\ude00"}',
        # Characters YAML 1.1 does not accept, which json does (the breaker's inputs).
        '{"a": "x\x7fy"}',
        '{"a": "x\x9by"}',
        '{"a": "x\ufffey"}',
        # A key longer than a YAML simple key may be, and a key and its colon on two lines.
        '{"' + "k" * 1100 + '": 1}',
        '{"a"\n: 1}',
    ],
)
def test_errors_are_the_yaml_paths(text: str) -> None:
    with pytest.raises(InputError) as got:
        yamlio.parse_documents(text, "t.json")
    with pytest.raises(Exception) as expect:
        yamlio._load_all(text, "t.json")
    assert expect.value is not None
    assert "t.json" in str(got.value)
    assert ("duplicate key" in str(got.value)) == ("duplicate key" in str(expect.value))


def test_a_json_file_json_rejects_gets_jsons_error() -> None:
    """Regression (the published seed FIS template, an extra closing brace): YAML's
    "did not find expected <document start>" was the error of a ``.json`` file. JSON's
    line, column and reason are given; a ``.yaml`` file keeps YAML's, and so does a
    ``.json`` file that JSON reads but YAML does not (a key and its colon on two lines)."""
    extra = '{\n"a": {\n"b": 1\n}\n},\n"c": 2\n}\n'
    with pytest.raises(InputError) as got:
        yamlio.parse_documents(extra, "T.JSON")
    assert str(got.value) == (
        "T.JSON: invalid JSON at line 5, column 2: Extra data (text after the end of the "
        "top-level value: an extra closing brace or bracket before it?)"
    )
    with pytest.raises(InputError) as got:
        yamlio.parse_documents('{"a": [1, 2}', "t.json")
    assert str(got.value) == "t.json: invalid JSON at line 1, column 12: Expecting ',' delimiter"
    for text, name in ((extra, "t.yaml"), ('{"a"\n: 1}', "t.json")):
        with pytest.raises(InputError) as got:
            yamlio.parse_documents(text, name)
        assert str(got.value).startswith(f"{name}: YAML syntax error at line ")
