"""Every output a command writes is a regular file or nothing yet: a FIFO (which blocked the
command until some other process read it), a device or a directory where a file goes is
refused before the command does its work, exit 2 naming the path and the option."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from tests.operator.sweeps import results_row, small_sweep

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot" / "scenario.yaml"
DAY = REPO / "tests" / "fixtures" / "history" / "day"
runner = CliRunner()

#: Wall seconds past which a command is taken to be blocked on its output (a refusal takes
#: a second or two; this only turns a hang into a failure).
BLOCKED_S = 300


class Blocked(BaseException):
    """The command did not return: it is waiting on its output."""


@contextmanager
def _not_blocked() -> Iterator[None]:
    def blocked(_signum: int, _frame: Any) -> None:
        raise Blocked(f"still running after {BLOCKED_S} s: blocked on its output")

    old = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(BLOCKED_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _results(tmp: Path) -> Path:
    path = tmp / "results.jsonl"
    path.write_text(json.dumps(results_row()) + "\n")
    return path


def _import_args(tmp: Path) -> list[str]:
    """``joiner import`` of the committed day, without ``--out``."""
    spec = json.loads((DAY / "import.json").read_text())
    options = {"--from-file": DAY / "responses", "-f": DAY / "dump.yaml"}
    options |= {f"--{key}": spec[key] for key in ("start", "end", "step")}
    return ["import", *(str(part) for pair in options.items() for part in pair)]


def _prometheus_args(tmp: Path) -> list[str]:
    # Refused before Prometheus is asked anything: nothing listens on the port.
    return [
        "import",
        "--prometheus",
        "http://127.0.0.1:9",
        "-f",
        str(DAY / "dump.yaml"),
        "--start",
        "2026-11-23T00:00:00Z",
        "--end",
        "2026-11-23T01:00:00Z",
        "--out",
        str(tmp / "out"),
    ]


def _default_html(tmp: Path) -> list[str]:
    """``sweep report RESULTS`` whose default report, ``RESULTS`` with ``.html``, is a FIFO."""
    results = _results(tmp)
    _fifo(results.with_suffix(".html"))
    return ["sweep", "report", str(results)]


def _simulate_report(name: str) -> Callable[[Path], list[str]]:
    """``simulate`` whose ``--report`` directory holds a FIFO named ``name``."""

    def args(tmp: Path) -> list[str]:
        report = _fifo(tmp / "r" / name).parent
        return ["simulate", str(SEED), "--out", str(tmp / "o"), "--report", str(report)]

    return args


def _sweep_args(tmp: Path) -> list[str]:
    """``sweep run`` of a one-cell sweep, ending with ``-o`` (its results path follows)."""
    return ["sweep", "run", str(small_sweep(tmp, seeds=1, variants=1)), "-o"]


def _kubeconfig(tmp: Path) -> Path:
    path = tmp / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return path


#: (case id, the option named, a function of tmp_path giving the command line): each case's
#: output is made a FIFO, a directory or a device by the command line itself.
Case = tuple[str, str, Callable[[Path], list[str]]]
CASES: list[Case] = [
    (
        "simulate --out DIR/summary.json a FIFO",
        "--out",
        lambda t: [
            "simulate",
            str(SEED),
            "-q",
            "--out",
            str(_fifo(t / "o" / "summary.json").parent),
        ],
    ),
    (
        "simulate --out a FIFO",
        "--out",
        lambda t: ["simulate", str(SEED), "--out", str(_fifo(t / "o"))],
    ),
    (
        "simulate --out DIR/summary.json a directory",
        "--out",
        lambda t: ["simulate", str(SEED), "--out", str(_dir(t / "o" / "summary.json").parent)],
    ),
    *(
        (f"simulate --report DIR/{name} a FIFO", "--report", _simulate_report(name))
        for name in ("index.html", "cost.png")
    ),
    ("sweep run -o a FIFO", "--results", lambda t: [*_sweep_args(t), str(_fifo(t / "r"))]),
    ("sweep run -o a directory", "--results", lambda t: [*_sweep_args(t), str(_dir(t / "r"))]),
    (
        "sweep report --html a FIFO",
        "--html",
        lambda t: ["sweep", "report", str(_results(t)), "--html", str(_fifo(t / "r.html"))],
    ),
    (
        "sweep report --html a device",
        "--html",
        lambda t: ["sweep", "report", str(_results(t)), "--html", os.devnull],
    ),
    (
        "sweep report's default RESULTS.html a FIFO",
        "--html",
        _default_html,
    ),
    (
        "run --report a FIFO",
        "--report",
        lambda t: [
            "run",
            "--kubeconfig",
            str(_kubeconfig(t)),
            "--cloud",
            "simulated",
            "--dry-run",
            "--report",
            str(_fifo(t / "report.jsonl")),
        ],
    ),
    (
        "import --out a FIFO",
        "--out",
        lambda t: [*_import_args(t), "--out", str(_fifo(t / "out"))],
    ),
    (
        "import --out DIR/scenario.yaml a FIFO",
        "--out",
        lambda t: [
            *_import_args(t),
            "--out",
            str(_fifo(t / "o" / "scenario.yaml").parent),
            "--force",
        ],
    ),
    (
        "import --save-responses DIR/queries.json a FIFO",
        "--save-responses",
        lambda t: [
            *_prometheus_args(t),
            "--save-responses",
            str(_fifo(t / "saved" / "queries.json").parent),
        ],
    ),
    (
        "import --save-responses a FIFO",
        "--save-responses",
        lambda t: [*_prometheus_args(t), "--save-responses", str(_fifo(t / "saved"))],
    ),
    ("schema -o a FIFO", "--output", lambda t: ["schema", "-o", str(_fifo(t / "s.json"))]),
    ("schema -o a directory", "--output", lambda t: ["schema", "-o", str(_dir(t / "s"))]),
]


@pytest.mark.parametrize(("option", "args"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_output_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, option: str, args: Callable[[Path], list[str]]
) -> None:
    argv = args(tmp_path)
    with _not_blocked():
        result = runner.invoke(app, argv)
    assert result.exit_code == 2, (argv, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "error:" in result.output and option in result.output, result.output
    assert any(
        words in result.output for words in ("FIFO", "a device", "a directory", "not a directory")
    ), result.output
