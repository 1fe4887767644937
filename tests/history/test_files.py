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
    assert source.warnings.count("NaN sample") == 1
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


def test_index_flags_other_promql_and_a_shorter_saved_range(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", NODES)
    _write(
        tmp_path / "queries.json",
        {
            "range": {"start_s": 1060, "end_s": 1240, "step_s": 30},
            "queries": {"q": {"promql": "old", "files": ["q.json"]}},
        },
    )
    source = FileSource(tmp_path, WINDOW)
    source.fetch("q", "new")
    assert source.warnings.count("saved range shorter than asked") == 1
    assert source.warnings.count("saved step other than asked") == 1
    assert source.warnings.count("saved query with other PromQL") == 1
    source.fetch("q", "old")
    assert source.warnings.count("saved query with other PromQL") == 1


def test_whole_and_chunked_files_of_one_query_are_ambiguous(tmp_path: Path) -> None:
    _write(tmp_path / "q.json", NODES)
    _write(tmp_path / "q.0.json", NODES)
    with pytest.raises(InputError, match="saved both whole and in chunks"):
        FileSource(tmp_path, WINDOW).fetch("q", "x")
