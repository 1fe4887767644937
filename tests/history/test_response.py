"""Reading one response: the streaming reader gives what decoding the whole text gives."""

from __future__ import annotations

import json

import pytest

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
