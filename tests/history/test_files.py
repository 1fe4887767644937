"""Saved range-query responses: the layouts FileSource reads and the errors it names."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from joiner.api.errors import InputError
from joiner.history.files import FileSource, join_chunks, parse_response
from joiner.history.series import HistoryWarnings, QueryRange, Series

WINDOW = QueryRange(1000.0, 1240.0, 60.0)


def _response(*series: tuple[dict[str, str], list[tuple[float, str]]]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": metric, "values": [[t, v] for t, v in values]}
                for metric, values in series
            ],
        },
    }


NODES = _response(
    ({"__name__": "kube_node_info", "node": "a"}, [(1000, "1"), (1060, "1"), (1120, "1")]),
    ({"__name__": "kube_node_info", "node": "b"}, [(1180, "1"), (1240, "1")]),
)


def _write(path: Path, body: object) -> None:
    path.write_text(json.dumps(body), encoding="utf-8")


def test_directory_with_one_file_per_query(tmp_path: Path) -> None:
    _write(tmp_path / "nodes.json", NODES)
    source = FileSource(tmp_path, WINDOW)
    got = source.fetch("nodes", "kube_node_info")
    assert [dict(s.labels) for s in got] == [{"node": "a"}, {"node": "b"}]
    assert got[0].times_s == (1000, 1060, 1120)
    assert got[1].values == (1.0, 1.0)
    assert not source.warnings


def test_chunked_files_are_joined_in_order(tmp_path: Path) -> None:
    _write(tmp_path / "q.0.json", _response(({"node": "a"}, [(1000, "1"), (1060, "2")])))
    _write(
        tmp_path / "q.1.json",
        _response(({"node": "a"}, [(1120, "3")]), ({"node": "b"}, [(1180, "4")])),
    )
    got = FileSource(tmp_path, WINDOW).fetch("q", "x")
    assert got[0] == Series({"node": "a"}, (1000, 1060, 1120), (1.0, 2.0, 3.0))
    assert got[1] == Series({"node": "b"}, (1180,), (4.0,))


def test_overlapping_chunks_are_normalised_and_counted() -> None:
    w = HistoryWarnings()
    first = [Series({"n": "a"}, (0.0, 60.0), (1.0, 2.0))]
    second = [Series({"n": "a"}, (60.0, 120.0), (2.0, 3.0))]
    joined = join_chunks([first, second], "q", w)
    assert joined[0].times_s == (0.0, 60.0, 120.0)
    assert w.count("duplicate sample") == 1


def test_single_file_maps_query_names_to_responses_or_chunk_lists(tmp_path: Path) -> None:
    bundle = tmp_path / "history.json"
    _write(
        bundle,
        {
            "nodes": NODES,
            "q": [
                _response(({"node": "a"}, [(1000, "1")])),
                _response(({"node": "a"}, [(1060, "2")])),
            ],
        },
    )
    source = FileSource(bundle, WINDOW)
    assert len(source.fetch("nodes", "x")) == 2
    assert source.fetch("q", "x")[0].values == (1.0, 2.0)
    with pytest.raises(
        InputError, match=r"history\.json.*no saved result for query other.*--print-queries"
    ):
        source.fetch("other", "x")


def test_a_single_raw_response_file_is_refused_with_the_layout_to_use(tmp_path: Path) -> None:
    one = tmp_path / "nodes.json"
    _write(one, NODES)
    with pytest.raises(InputError, match=r"nodes\.json: holds a single query's response"):
        FileSource(one, WINDOW)


def test_missing_query_names_the_file_expected_and_the_hint(tmp_path: Path) -> None:
    source = FileSource(tmp_path, WINDOW)
    with pytest.raises(InputError) as caught:
        source.fetch("kube_node_info", "kube_node_info")
    message = str(caught.value)
    assert str(tmp_path / "kube_node_info.json") in message
    assert "query kube_node_info" in message
    assert "kube_node_info.0.json" in message
    assert "--print-queries" in message


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nowhere: no such file or directory"):
        FileSource(tmp_path / "nowhere", WINDOW)


def test_malformed_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "q.json").write_text('{"status": "success",\n  "data": [1, }', encoding="utf-8")
    with pytest.raises(InputError, match=r"q\.json: malformed JSON at line 2 column 15"):
        FileSource(tmp_path, WINDOW).fetch("q", "x")


def test_saved_error_response_names_the_file(tmp_path: Path) -> None:
    _write(
        tmp_path / "q.json", {"status": "error", "errorType": "bad_data", "error": "parse error"}
    )
    with pytest.raises(InputError, match=r"q\.json: Prometheus answered bad_data: parse error"):
        FileSource(tmp_path, WINDOW).fetch("q", "x")


def test_bad_sample_names_the_field(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", _response(({"node": "a"}, [(1000, "one")])))
    with pytest.raises(
        InputError, match=r"field data\.result\[0\]\.values\[0\]: 'one' is not a number"
    ):
        FileSource(tmp_path, WINDOW).fetch("q", "x")


def test_instant_vector_is_refused() -> None:
    body = {"status": "success", "data": {"resultType": "vector", "result": []}}
    with pytest.raises(InputError, match="expected a range query's matrix"):
        parse_response(body, "f.json")


def test_nan_samples_and_histograms_are_left_out_and_counted(tmp_path: Path) -> None:
    body = _response(({"node": "a"}, [(1000, "1"), (1060, "NaN"), (1120, "3")]))
    body["data"]["result"].append({"metric": {"node": "h"}, "histograms": [[1000, {}]]})
    body["warnings"] = ["PromQL warning: something"]
    _write(tmp_path / "q.json", body)
    source = FileSource(tmp_path, WINDOW)
    got = source.fetch("q", "x")
    assert len(got) == 1
    assert got[0].times_s == (1000, 1120)
    assert not any(math.isnan(v) for v in got[0].values)
    assert source.warnings.count("NaN or infinite sample") == 1
    assert source.warnings.count("native histogram series") == 1
    assert source.warnings.count("Prometheus warning") == 1


def test_samples_outside_the_range_are_trimmed_and_counted(tmp_path: Path) -> None:
    _write(
        tmp_path / "q.json",
        _response(
            ({"node": "a"}, [(940, "1"), (1000, "2"), (1240, "3"), (1300, "4")]),
            ({"node": "gone"}, [(100, "1")]),
        ),
    )
    source = FileSource(tmp_path, WINDOW)
    got = source.fetch("q", "x")
    assert got == [Series({"node": "a"}, (1000, 1240), (2.0, 3.0))]
    assert source.warnings.count("saved series reaching outside the range") == 2


def test_a_range_beyond_the_saved_one_is_an_error_naming_both(tmp_path: Path) -> None:
    """Regression (user report): an --end after the saved range was a warning ("saved
    1.79634e+09..1.79635e+09") and the missing stretch replayed as a scale-down to 0."""
    _write(tmp_path / "q.json", NODES)
    _write(
        tmp_path / "queries.json",
        {"range": {"start_s": 1000, "end_s": 1180, "step_s": 30}, "queries": {}},
    )
    with pytest.raises(InputError) as caught:
        FileSource(tmp_path, WINDOW)
    assert caught.value.field == "--end"
    text = str(caught.value)
    assert "cover 1970-01-01T00:16:40Z to 1970-01-01T00:19:40Z" in text
    assert "--start and --end within the saved range" in text


def test_queries_saved_at_the_sets_step_are_counted_once_with_it(tmp_path: Path) -> None:
    """The saved set's step differs from the one asked: that is one warning, not one more
    per query saved at the set's step; a query saved at a third step is still named."""
    _write(tmp_path / "q.json", NODES)
    _write(tmp_path / "r.json", NODES)
    _write(
        tmp_path / "queries.json",
        {
            "range": {"start_s": 900, "end_s": 1400, "step_s": 30},
            "queries": {
                "q": {"promql": "q", "files": ["q.json"], "step_s": 30},
                "r": {"promql": "r", "files": ["r.json"], "step_s": 90},
            },
        },
    )
    source = FileSource(tmp_path, WINDOW)
    source.fetch("q", "q")
    assert source.warnings.count("saved step other than asked") == 1
    source.fetch("r", "r")
    assert source.warnings.count("saved step other than asked") == 2


def test_index_flags_other_promql_and_another_step(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", NODES)
    _write(
        tmp_path / "queries.json",
        {
            "range": {"start_s": 900, "end_s": 1400, "step_s": 30},
            "queries": {"q": {"promql": "old", "files": ["q.json"]}},
        },
    )
    source = FileSource(tmp_path, WINDOW)
    source.fetch("q", "new")
    assert source.warnings.count("saved step other than asked") == 1
    assert source.warnings.count("saved query with other PromQL") == 1
    source.fetch("q", "old")
    assert source.warnings.count("saved query with other PromQL") == 1


def test_whole_and_chunked_files_of_one_query_are_ambiguous(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", NODES)
    _write(tmp_path / "q.0.json", NODES)
    with pytest.raises(InputError, match="saved both whole and in chunks"):
        FileSource(tmp_path, WINDOW).fetch("q", "x")


@pytest.mark.parametrize("value", ["+Inf", "-Inf", "Inf", "infinity", "NaN"])
def test_infinite_and_nan_values_are_left_out_and_counted(tmp_path: Path, value: str) -> None:
    # "+Inf" used to reach the writer and crash it (OverflowError converting to int).
    _write(tmp_path / "q.json", _response(({"node": "a"}, [(1000, "1"), (1060, value)])))
    source = FileSource(tmp_path, WINDOW)
    got = source.fetch("q", "x")
    assert got[0].times_s == (1000,) and got[0].values == (1.0,)
    assert source.warnings.count("NaN or infinite sample") == 1


@pytest.mark.parametrize("time", ["Inf", "-Inf", "NaN"])
def test_a_time_that_is_not_finite_names_file_and_sample(tmp_path: Path, time: str) -> None:
    body = _response(({"node": "a"}, [(1000, "1"), (1060, "2")]))
    body["data"]["result"][0]["values"][1][0] = time
    _write(tmp_path / "q.json", body)
    with pytest.raises(InputError, match=r"not a finite unix time") as caught:
        FileSource(tmp_path, WINDOW).fetch("q", "x")
    assert "q.json" in str(caught.value) and "data.result[0].values[1]" in str(caught.value)


def test_a_fifo_or_directory_is_named_not_missing(tmp_path: Path) -> None:
    # A FIFO given as --from-file was called "no such file or directory"; one saved as
    # <name>.json, "no saved result". Neither is opened (reading a FIFO could block).
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file or directory"):
        FileSource(fifo, WINDOW)
    saved = tmp_path / "saved"
    saved.mkdir()
    os.mkfifo(saved / "q.json")
    (saved / "r.json").mkdir()
    for name in ("q", "r"):
        with pytest.raises(InputError, match="not a regular file") as caught:
            FileSource(saved, WINDOW).fetch(name, "x")
        assert f"{name}.json" in str(caught.value)


def test_a_gap_in_the_chunk_files_is_named(tmp_path: Path) -> None:
    # q.0.json and q.2.json: chunk 2 used to be left out without a word.
    _write(tmp_path / "q.0.json", _response(({"node": "a"}, [(1000, "1")])))
    _write(tmp_path / "q.2.json", _response(({"node": "a"}, [(1120, "3")])))
    with pytest.raises(InputError, match="chunk 1 is missing before chunk 2") as caught:
        FileSource(tmp_path, WINDOW).fetch("q", "x")
    assert "q.1.json" in str(caught.value)
    _write(tmp_path / "q.1.json", _response(({"node": "a"}, [(1060, "2")])))
    assert FileSource(tmp_path, WINDOW).fetch("q", "x")[0].values == (1.0, 2.0, 3.0)


def test_an_empty_chunk_list_in_a_single_file_is_named(tmp_path: Path) -> None:
    # {"q": []} used to read as a query without series.
    _write(tmp_path / "all.json", {"q": []})
    with pytest.raises(InputError, match="empty list of chunk responses") as caught:
        FileSource(tmp_path / "all.json", WINDOW).fetch("q", "x")
    assert "all.json" in str(caught.value) and "field q" in str(caught.value)


def test_an_integer_too_long_to_convert_is_malformed_json_not_a_traceback(
    tmp_path: Path,
) -> None:
    # A 5,000-digit number raised Python's ValueError (int max str digits) unhandled,
    # in a directory's response and in a single-file bundle alike.
    huge = "9" * 5000
    (tmp_path / "q.json").write_text(
        '{"status": "success", "data": {"resultType": "matrix", "result": '
        f'[{{"metric": {{}}, "values": [[{huge}, "1"]]}}]}}}}'
    )
    with pytest.raises(InputError, match=r"malformed JSON at line 1 .*4300 digits") as caught:
        FileSource(tmp_path, WINDOW).fetch("q", "x")
    assert "q.json" in str(caught.value)
    (tmp_path / "all.json").write_text(f'{{"q": {huge}}}')
    with pytest.raises(InputError, match=r"unreadable JSON: .*4300 digits"):
        FileSource(tmp_path / "all.json", WINDOW)


@pytest.mark.parametrize("step", [0, -300, "300", None, True, [300], float("nan"), float("inf")])
@pytest.mark.parametrize("where", ["range", "query"])
def test_a_saved_step_that_is_not_a_positive_number_is_refused(
    tmp_path: Path, step: object, where: str
) -> None:
    """``step_s`` in the index, for the set or one query, is a positive finite number of
    seconds; anything else is an error naming the index and the field (a NaN step printed
    as 'saved every nans' before)."""
    _write(tmp_path / "q.json", NODES)
    query: dict[str, object] = {"promql": "q", "files": ["q.json"]}
    saved_range: dict[str, object] = {"start_s": 900, "end_s": 1400}
    (saved_range if where == "range" else query)["step_s"] = step
    (tmp_path / "queries.json").write_text(
        json.dumps({"range": saved_range, "queries": {"q": query}}), encoding="utf-8"
    )
    with pytest.raises(InputError) as raised:
        FileSource(tmp_path, WINDOW)
    text = str(raised.value)
    assert "queries.json" in text
    assert ("range.step_s" if where == "range" else "queries.q.step_s") in text
    assert "positive number of seconds" in text


def test_steps_a_rounding_would_make_equal_are_told_apart(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", NODES)
    _write(
        tmp_path / "queries.json",
        {"range": {"start_s": 900, "end_s": 1400, "step_s": 59.9999}, "queries": {}},
    )
    source = FileSource(tmp_path, WINDOW)
    assert "saved every 59.9999s, asked every 60s" in "\n".join(source.warnings.render())
