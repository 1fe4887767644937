"""``--resume`` drops a last line cut short mid-write, and only that: a results path that
holds another file (notes, a NUL-filled block) without a final newline was read as one
partial row, dropped, and written over."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.operator.sweep.results import parse_rows

ROW = (
    '{"cellId":"a/joiner/x1/seed-1","variant":"a","policy":"joiner",'
    '"interruptionRateMultiplier":1,"seed":1}'
)


@pytest.mark.parametrize("tail", [ROW[:40], ROW[:5], "{", '{"cellId": "a/jo', '{"seed":1,"ce'])
def test_a_row_cut_short_is_dropped(tail):
    rows = parse_rows(ROW + "\n" + tail, Path("r.jsonl"), tolerate_partial_tail=True)
    assert [r["cellId"] for r in rows] == ["a/joiner/x1/seed-1"]


@pytest.mark.parametrize(
    "text", ["my precious notes, no newline", "\x00" * 64, ROW + "\nnot a row", "[1, 2"]
)
def test_another_last_line_is_an_error_not_dropped(text):
    with pytest.raises(InputError, match="is not JSON") as exc:
        parse_rows(text, Path("r.jsonl"), tolerate_partial_tail=True)
    assert exc.value.file == "r.jsonl"
