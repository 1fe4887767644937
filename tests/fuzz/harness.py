"""What every fuzz case checks: a CPU budget (a hang detector), the refusal is an
``InputError`` (never another exception), and a command's exit code and output.

A case either reads its input or raises ``InputError``; anything else (a traceback in the
CLI) fails. Each case runs under a CPU-time budget far above any real input's (the process
timer, ``ITIMER_PROF``): past it the case is a hang. A command exits 0, 1 or 2 (2 prints a
located ``error:``) and prints no raw control character (ESC, BEL, the rest of C0 and C1,
DEL, bidirectional overrides and isolates), whatever its input held.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app

#: CPU seconds one case may use before it counts as a hang.
CPU_BUDGET_S = 20.0
RAW = re.compile(r"Value error,|Input should be|validation error for")
WRONG_PLURAL = re.compile(r"\b1 (nodes|pods|NodeClaims|commands|objects|problems|targets)\b")
#: A raw control character in a command's output: C0 but tab and line feed, DEL, C1, and
#: the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Hang(BaseException):
    """A case past its CPU budget (a BaseException: no ``except Exception`` swallows it)."""


@contextmanager
def cpu_budget(seconds: float = CPU_BUDGET_S) -> Iterator[None]:
    """Raise ``Hang`` in the block once the process has used ``seconds`` of CPU in it."""

    def hang(_signum: int, _frame: Any) -> None:
        raise Hang(f"past {seconds:g} CPU seconds: a hang")

    old = signal.signal(signal.SIGPROF, hang)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def check_message(text: str) -> None:
    """No raw validation text and no wrong plural in a message."""
    assert not RAW.search(text), text
    assert not WRONG_PLURAL.search(text), text


def reads_or_refuses(load: Callable[[], object]) -> InputError | None:
    """Run ``load`` within the budget; its ``InputError`` (checked), or None if it read."""
    with cpu_budget():
        try:
            load()
        except InputError as exc:
            check_message(str(exc))
            return exc
    return None


runner = CliRunner()


def invoke(args: list[str], codes: frozenset[int] = frozenset({0, 1, 2})) -> Result:
    """Run the CLI within the budget and check its exit code and output."""
    with cpu_budget():
        result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.output,
        result.exc_info,
    )
    assert result.exit_code in codes, (args, result.exit_code, result.output)
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream, stream
        assert not CONTROL.search(stream), (args, stream)
        check_message(stream)
    if result.exit_code == 2:
        assert "error:" in result.stderr, (args, result.stderr)
    return result
