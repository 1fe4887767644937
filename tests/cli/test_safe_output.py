"""No raw control byte from an input reaches the terminal, whatever path it takes: a
message, a table cell, a recommended NodePool's YAML, a log line or a library's warning
(``cli.safeconsole``); rich's own styling is kept and emoji codes are not interpreted."""

from __future__ import annotations

import io
import json
import logging
import warnings
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from joiner.cli import common
from joiner.cli.main import app
from joiner.cli.safeconsole import CleanFormatter, _CleanHook, clean, safe_console
from tests.operator.sweeps import results_row

HOSTILE = "web\x1b]0;pwned\x07\x1b[2J\u202e:smile:\x9b31m"
CONTROL = ("\x1b", "\x07", "\u202e", "\x9b")


def _no_control(text: str) -> None:
    assert not any(c in text for c in CONTROL), repr(text)


def test_clean_keeps_line_breaks_and_printable_text():
    assert clean("a\tb\nc") == "a\tb\nc"
    assert clean(HOSTILE) == "web?]0;pwned??[2J?:smile:?31m"


def test_messages_and_tables_are_cleaned_and_emoji_codes_stay_text():
    buf = io.StringIO()
    console = safe_console(file=buf)
    console.print(HOSTILE, markup=False)
    from rich.table import Table

    table = Table()
    table.add_column(HOSTILE)
    table.add_row(HOSTILE)
    console.print(table)
    _no_control(buf.getvalue())
    assert ":smile:" in buf.getvalue()


def test_styling_is_kept_on_a_terminal():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, emoji=False)
    console.push_render_hook(_CleanHook())
    console.print("[bold]ok[/] " + HOSTILE.replace("[", "("), highlight=False)
    assert buf.getvalue().startswith("\x1b[1mok\x1b[0m web?]0;pwned")


def test_log_lines_and_library_warnings_are_cleaned(capsys):
    record = logging.LogRecord("joiner", logging.ERROR, __file__, 1, HOSTILE, None, None)
    _no_control(CleanFormatter("%(message)s").format(record))
    common.configure_logging(False)
    warnings.warn(f"glyph missing from font: {HOSTILE}", UserWarning, stacklevel=1)
    printed = capsys.readouterr().err
    assert "warning: glyph missing" in printed
    _no_control(printed)


def test_a_recommended_nodepool_yaml_is_cleaned(tmp_path: Path):
    row = results_row(HOSTILE, nodePoolsYaml=f"kind: NodePool\nmetadata: {{name: '{HOSTILE}'}}\n")
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(row) + "\n")
    args = ["sweep", "report", str(results), "--html", str(tmp_path / "r.html")]
    result = CliRunner().invoke(app, [*args, "--objective", "minimise cost"])
    assert result.exit_code == 0, result.output
    assert "kind: NodePool" in result.output
    _no_control(result.output)


def test_a_name_is_never_mathtext_nor_a_missing_glyph_in_a_plot(tmp_path: Path):
    # A variant named "$\frobnicate{x}$" ended `sweep report` in matplotlib's mathtext
    # ValueError (a traceback); a control character in a label was drawn as a missing glyph.
    mathtext = "$\\frobnicate{x}$"
    rows = [
        results_row(mathtext),
        results_row(HOSTILE, cellId="b/joiner/x1/seed-1"),
    ]
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = tmp_path / "r.html"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(app, ["sweep", "report", str(results), "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    _no_control(result.output)
    _no_control(html.read_text(encoding="utf-8"))
    assert not [w for w in caught if "Glyph" in str(w.message)], [str(w.message) for w in caught]
