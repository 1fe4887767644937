"""``print_table``: a table when it fits, else one record per row; nothing is ever cut."""

from __future__ import annotations

import io

from rich.console import Console

from joiner.cli.common import print_table

COLUMNS = [("", "left"), ("joiner", "right"), ("cluster-autoscaler", "right")]
ROWS = [["total cost (USD)", "19.72", "21.68"], ["p95 pending (s)", "44.2", "141.8"]]


def _render(width: int, columns=COLUMNS, rows=ROWS) -> str:
    buf = io.StringIO()
    print_table("compare", columns, rows, console=Console(file=buf, width=width))
    return buf.getvalue()


def test_a_wide_console_gets_a_table_with_every_cell_whole():
    text = _render(120)
    assert "total cost (USD)" in text and "cluster-autoscaler" in text and "141.8" in text
    assert "- " not in text


def test_a_narrow_console_gets_records_whose_unlabelled_first_column_is_the_row_name():
    text = _render(30, rows=[[c * 3 if i else c for i, c in enumerate(r)] for r in ROWS])
    lines = text.splitlines()
    # Regression (fresh-user trial): an empty first header printed "- : total cost (USD)".
    assert "- total cost (USD)" in lines
    assert "  joiner: 19.7219.7219.72" in lines
    assert not any(line.startswith("- :") for line in lines)


def test_a_labelled_first_column_keeps_its_header_in_records():
    text = _render(
        20, columns=[("variant", "left"), ("cost (USD)", "right")], rows=[["a" * 30, "1"]]
    )
    assert f"- variant: {'a' * 30}" in text.splitlines()
