"""Progress bars on stderr, shown only on a terminal and never with ``-q``.

One place for every command's progress display: ``count_bar`` over a count of items (a
sweep's cells and runs) and ``virtual_time_progress`` over a simulation's virtual time
(``simulate``). The latter appears only once the run has taken about ``DELAY_S`` (2 s) of
wall time and is transient (erased when the run ends), so piped or captured output is
unchanged; code running simulations inside worker processes passes ``enabled=False``. The
wall clock read here is the terminal's business, never the simulation's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
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


#: Runs shorter than this (wall seconds) never show a bar.
DELAY_S = 2.0


@contextmanager
def virtual_time_progress(
    label: str,
    total_s: float,
    *,
    console: Console,
    enabled: bool,
    delay_s: float = DELAY_S,
    wall: Callable[[], float] = time.monotonic,
) -> Iterator[Callable[[float], None]]:
    """Yield ``update(virtual_s)``: report how far (0..``total_s`` virtual seconds) the run is.

    The bar is drawn on ``console`` once ``delay_s`` of ``wall`` time has passed, when
    ``enabled`` and the console is a terminal.
    """
    show = enabled and console.is_terminal
    progress = Progress(
        TextColumn("[bold]simulating[/] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s virtual"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not show,
    )
    task = progress.add_task(label, total=total_s)
    start = wall()
    started = False

    def update(virtual_s: float) -> None:
        nonlocal started
        if not show:
            return
        if not started:
            if wall() - start < delay_s:
                return
            progress.start()
            started = True
        progress.update(task, completed=min(virtual_s, total_s))

    try:
        yield update
    finally:
        if started:
            progress.stop()
