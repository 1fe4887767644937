"""The JSON Joiner writes keeps every string's value but holds no raw control character:
``json.dumps`` left DEL raw, and pydantic's JSON (written without ``ensure_ascii``) left C1
controls and bidirectional overrides raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api.jsontext import escape_controls, json_text
from joiner.operator.sweep.results import ResultsWriter, read_rows
from tests.fuzz.harness import CONTROL
from tests.operator.sweeps import results_row

HOSTILE = "v\x7f\x9b31m\u202e\u2028\U000e0001\x1b[2J caf\u00e9"


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_escape_controls_keeps_the_value(ensure_ascii: bool) -> None:
    value = {"name": HOSTILE, "list": [HOSTILE, 1.5, None]}
    text = escape_controls(json.dumps(value, ensure_ascii=ensure_ascii, indent=2))
    assert not CONTROL.search(text.replace("\n", "")), text
    assert "\u2028" not in text and "\U000e0001" not in text
    assert json.loads(text) == value
    if not ensure_ascii:
        assert "caf\u00e9" in text  # printable text stays as it is


def test_json_text_is_json_dumps_when_nothing_needs_escaping() -> None:
    value = {"a": [1, "b"], "c": "caf\u00e9"}
    assert json_text(value, indent=2) == json.dumps(value, indent=2)


def test_a_results_file_holds_no_raw_control(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    writer = ResultsWriter(path, None, rewrite=False)
    writer.write(results_row(HOSTILE))
    writer.close()
    text = path.read_text(encoding="utf-8")
    assert not CONTROL.search(text.replace("\n", "")), text
    assert read_rows(path)[0]["variant"] == HOSTILE
