"""Reading one response: the streaming reader gives what decoding the whole text gives."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joiner.api.errors import InputError
from joiner.history.response import parse_response, parse_text

MATRIX = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"__name__": "up", "job": "a"}, "values": [[1, "1"], [2, "NaN"], [3, "0"]]},
            {"metric": {}, "values": []},
            {"metric": {"job": "h"}, "histograms": [[1, {"count": "1"}]]},
        ],
    },
    "warnings": ["careful"],
}


@pytest.mark.parametrize("indent", [None, 2])
def test_streaming_equals_decoding(indent: int | None) -> None:
    text = json.dumps(MATRIX, indent=indent)
    streamed = parse_text(text, "f")
    assert streamed == parse_response(MATRIX, "f")
    assert [dict(s.labels) for s in streamed.series] == [{"job": "a"}, {}]
    assert streamed.series[0].times_s == (1.0, 3.0)
    assert (streamed.dropped_nan, streamed.histograms) == (1, 1)
    assert streamed.prometheus_warnings == ["careful"]


def test_key_order_does_not_matter() -> None:
    text = (
        '{"warnings": [], "data": {"result": [{"values": [[5, "2"]], "metric": {"a": "b"}}],'
        ' "resultType": "matrix"}, "status": "success"}'
    )
    (one,) = parse_text(text, "f").series
    assert one.values == (2.0,)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"status": "error", "errorType": "bad_data", "error": "boom"},
            "Prometheus answered bad_data: boom",
        ),
        ({"data": {}}, "no status field"),
        ({"status": "success"}, "field data: missing"),
        (
            {"status": "success", "data": {"resultType": "vector", "result": []}},
            "expected a range query's matrix",
        ),
        (
            {"status": "success", "data": {"resultType": "matrix", "result": {}}},
            "field data.result: expected a list",
        ),
        (
            {"status": "success", "data": {"resultType": "matrix"}},
            "field data.result: expected a list",
        ),
        (
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {"a": 1}, "values": []}]},
            },
            r"field data.result\[0\].metric: expected string labels",
        ),
        (
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1]]}]},
            },
            r"field data.result\[0\].values\[0\]: expected \[time, value\]",
        ),
        (
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, True]]}]},
            },
            r"field data.result\[0\].values\[0\]: True is not a number",
        ),
        (
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {}, "value": [1, "1"]}]},
            },
            r"field data.result\[0\]: missing \(an instant result\? use query_range\)",
        ),
    ],
)
def test_both_readers_name_the_same_problem(body: object, message: str) -> None:
    for read in (
        lambda: parse_text(json.dumps(body), "f.json"),
        lambda: parse_response(body, "f.json"),
    ):
        with pytest.raises(InputError, match=message) as caught:
            read()
        assert str(caught.value).startswith("f.json")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            '{"status": "success",\n "data": {"resultType": "matrix", "result": [}}',
            "line 2 column 46",
        ),
        ('{"status": "success" "data": {}}', "line 1 column 22 (char 21): expected ',' or '}'"),
        ('{"status": "success"} trailing', "line 1 column 23 (char 22): extra data"),
        ('{"status": "succ', "line 1 column 12"),
    ],
)
def test_malformed_text_names_line_and_column(text: str, where: str) -> None:
    with pytest.raises(
        InputError,
        match="f.json: malformed JSON at " + where.replace("(", r"\(").replace(")", r"\)"),
    ):
        parse_text(text, "f.json")


def test_a_pair_that_is_not_a_list_is_named() -> None:
    body = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"values": [[1, "2"], "34"]}]},
    }
    for read in (lambda: parse_text(json.dumps(body), "f"), lambda: parse_response(body, "f")):
        with pytest.raises(InputError, match=r"values\[1\]: expected \[time, value\]"):
            read()


def test_deep_nesting_is_an_input_error() -> None:
    text = '{"status": "success", "data": {"resultType": "matrix", "result": [' + "[" * 100_000
    with pytest.raises(InputError, match="nested too deeply"):
        parse_text(text, "f")


_VALID = json.dumps(MATRIX)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    cut=st.integers(min_value=0, max_value=len(_VALID)),
    at=st.integers(min_value=0, max_value=len(_VALID) - 1),
    char=st.sampled_from(list('{}[],:"0a- \\n')),
)
def test_corrupted_text_reads_as_decoding_it_whole_does(cut: int, at: int, char: str) -> None:
    for text in (_VALID[:cut], _VALID[:at] + char + _VALID[at + 1 :]):
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            # Read in document order: a bad series before the bad syntax is named first.
            with pytest.raises(InputError):
                parse_text(text, "f")
            continue
        try:
            expected = parse_response(body, "f")
        except InputError as exc:
            with pytest.raises(InputError) as caught:
                parse_text(text, "f")
            assert str(caught.value) == str(exc)
            continue
        assert parse_text(text, "f") == expected


def test_equal_samples_share_one_float() -> None:
    body = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"pod": "a"}, "values": [[60, "2"], [120, "2"]]},
                {"metric": {"pod": "b"}, "values": [[60, "2"], [120, "5"]]},
            ],
        },
    }
    for parsed in (parse_text(json.dumps(body), "f"), parse_response(body, "f")):
        a, b = parsed.series
        assert a.times_s == b.times_s == (60.0, 120.0) and b.values == (2.0, 5.0)
        assert a.times_s[0] is b.times_s[0] and a.values[0] is a.values[1] is b.values[0]


def test_a_negative_zero_keeps_its_sign_beside_a_zero() -> None:
    # 0 and -0.0 are equal keys: shared, the second would read as the first's +0.0.
    body = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"values": [[1, 0], [2, -0.0]]}]},
    }
    for parsed in (parse_text(json.dumps(body), "f"), parse_response(body, "f")):
        (one,) = parsed.series
        assert [math.copysign(1.0, v) for v in one.values] == [1.0, -1.0]
