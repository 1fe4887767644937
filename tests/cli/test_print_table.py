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


def test_a_prose_last_column_wraps_so_the_table_stays_a_table():
    """Regression: ``--explain``'s reason column pushed the table past 80 columns, so one
    node's history printed as a table and the next as records; prose now wraps at spaces."""
    reason = "NodePool default budget (nodes=10%) allows 0 more Underutilized disruptions"
    columns = [("pass", "right"), ("method", "left"), ("reason", "left")]
    buf = io.StringIO()
    print_table(
        "n1",
        columns,
        [["1", "MultiNodeConsolidation", reason]],
        console=Console(file=buf, width=60),
        prose_last=True,
    )
    text = buf.getvalue()
    assert "- pass: 1" not in text and "MultiNodeConsolidation" in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 60
    words = " ".join(
        line.split("MultiNodeConsolidation")[-1].strip() for line in text.splitlines()[3:]
    )
    assert " ".join(words.split()) == reason
    # The other columns are never cut: too narrow for them, it is records again.
    narrow = io.StringIO()
    print_table(
        "n1",
        columns,
        [["1", "M" * 50, reason]],
        console=Console(file=narrow, width=60),
        prose_last=True,
    )
    assert "- pass: 1" in narrow.getvalue()
