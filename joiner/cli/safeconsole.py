"""Terminal output that input text cannot take over: every character a command prints that
is not printable (ESC and the rest of C0 and C1, DEL, bidirectional overrides, and so on)
is shown as ``?``, whatever path the text took to the screen (a message, a table cell, a
NodePool's YAML, a log line, a library's warning). Rich's own styling is not touched: it is
added after the text is cleaned (a render hook on each console), and emoji codes are never
interpreted (``emoji=False``: ``root:x:0:0`` must not print as ``root❌0:0``).
"""

from __future__ import annotations

import logging
import warnings
from typing import TextIO

from rich.console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    RenderableType,
    RenderHook,
    RenderResult,
)
from rich.segment import Segment

from joiner.api.printable import printable


def clean(text: str) -> str:
    """``text`` with each character that is neither printable nor a line break or a tab
    replaced by ``?`` (``joiner.api.printable``, the one cleaning every output shares)."""
    return printable(text)


class _Cleaned:
    """A renderable whose text segments are ``clean``; control segments (cursor moves of a
    progress display) pass as they are."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(clean(segment.text), segment.style)


class _CleanHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Cleaned(r) for r in renderables]


def safe_console(*, stderr: bool = False, file: TextIO | None = None) -> Console:
    """A rich Console (on stdout, or stderr) that prints only ``clean`` text."""
    console = Console(stderr=stderr, file=file, emoji=False)
    console.push_render_hook(_CleanHook())
    return console


class CleanFormatter(logging.Formatter):
    """A log formatter whose lines are ``clean`` (a logged object name cannot carry escape
    sequences to the terminal)."""

    def format(self, record: logging.LogRecord) -> str:
        return clean(super().format(record))


def show_warnings_on(console: Console) -> None:
    """Print Python warnings (a library's, such as matplotlib's about a glyph) on
    ``console`` as ``warning: ...`` lines, cleaned, instead of raw on stderr."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        console.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)

    warnings.showwarning = show
