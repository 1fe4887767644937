"""Progress bars on stderr, shown only on a terminal and never with ``-q``.

One place for every command's progress display (``simulate`` has its own bar today; the
two can share this module).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from joiner.cli.common import err


class CountBar:
    """A bar over a count of items (cells, runs): done/total, elapsed, ETA."""

    def __init__(self, progress: Progress, label: str) -> None:
        self._progress = progress
        self._task = progress.add_task(label, total=None)

    def start(self, total: int, done: int = 0) -> None:
        """Set the total and what is already done (``--resume``), and start the clock."""
        self._progress.update(self._task, total=total, completed=done)

    def advance(self, n: int = 1) -> None:
        self._progress.update(self._task, advance=n)


@contextmanager
def count_bar(label: str, *, quiet: bool) -> Iterator[CountBar]:
    """A ``CountBar`` on stderr; silent when ``quiet`` or stderr is not a terminal."""
    with Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=quiet or not err.is_terminal,
    ) as progress:
        yield CountBar(progress, label)
