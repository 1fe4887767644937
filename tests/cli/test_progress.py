"""The virtual-time progress bar: only after the delay, only on a terminal, never when off."""

from __future__ import annotations

import io

from rich.console import Console

from joiner.cli.progress import virtual_time_progress


class _Wall:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(*, terminal: bool, enabled: bool, elapsed_s: float) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=100)
    wall = _Wall()
    with virtual_time_progress(
        "demo", 3600.0, console=console, enabled=enabled, wall=wall
    ) as update:
        update(10.0)
        wall.now = elapsed_s
        update(1800.0)
    return buf.getvalue()


def test_shown_on_a_terminal_once_the_run_is_long():
    assert "simulating" in _run(terminal=True, enabled=True, elapsed_s=2.5)


def test_not_shown_for_short_runs():
    assert _run(terminal=True, enabled=True, elapsed_s=1.0) == ""


def test_not_shown_when_disabled_or_not_a_terminal():
    assert _run(terminal=True, enabled=False, elapsed_s=10.0) == ""
    assert _run(terminal=False, enabled=True, elapsed_s=10.0) == ""
