"""``joiner`` command line. Exit codes: 0 success, 2 bad input or usage, 1 internal error or
standard output that cannot be written.

This module only assembles the application from one module per command group
(``simulate``, ``schema``, ``plan``, ``advise``, ``disrupt``, ``manifests`` for convert and
lint, ``chaos``, ``sweep``, ``controller`` for install-crds and run, ``importer`` for
import); each command imports the simulation, the cloud providers and heavy libraries
inside its function, so
``joiner --version`` and ``--help`` import none of them. The entry point (``main``) also owns
standard output's failures: ``stdout_errors``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any, TextIO

import typer

from joiner import __version__
from joiner.api.inputfiles import start_recording
from joiner.cli import (
    advise,
    chaos,
    controller,
    disrupt,
    importer,
    manifests,
    plan,
    schema,
    simulate,
    sweep,
)
from joiner.cli.common import JoinerGroup, Verbose, configure_logging, err, out
from joiner.sim.gctuning import tune_for_simulation

app = typer.Typer(
    cls=JoinerGroup,
    add_completion=False,
    no_args_is_help=True,
    help="Joiner: just-in-time, Spot-first node provisioning for Kubernetes.",
)


def _version(value: bool) -> None:
    if value:
        out.print(f"joiner {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: Verbose = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    configure_logging(verbose)
    start_recording()  # every file the command reads, so no output is written over one


app.command()(simulate.simulate)
app.command()(schema.schema)
app.command()(plan.plan)
app.command()(advise.advise)
app.command()(disrupt.disrupt)
app.command("import")(importer.import_)
app.command()(manifests.convert)
app.command()(manifests.lint)
app.add_typer(chaos.chaos, name="chaos")
app.add_typer(sweep.sweep, name="sweep")
app.command("install-crds")(controller.install_crds)
app.command()(controller.run)


class StdoutError(OSError):
    """Standard output could not be written (``GuardedStdout``): the original ``OSError``'s
    ``errno`` and ``strerror``."""


class GuardedStdout:
    """Standard output whose write and flush failures raise ``StdoutError``, so that the
    entry point tells them apart from a failure on any other file. Everything else is the
    wrapped stream's (rich asks it ``isatty``, ``fileno``, ``encoding``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text``; raises ``StdoutError`` on an ``OSError``."""
        try:
            return self.stream.write(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from exc

    def flush(self) -> None:
        """Flush; raises ``StdoutError`` on an ``OSError``."""
        try:
            self.stream.flush()
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def stdout_errors() -> Iterator[None]:
    """Standard output's failures as one error line, not a traceback: what the command
    printed is flushed here (not at interpreter exit, where a failure is only reported),
    and a write or flush that fails (``No space left on device`` on a full disk,
    ``/dev/full``) prints ``error: cannot write to standard output: <reason>`` on stderr
    and exits 1. A closed pipe (``joiner plan | head``) exits 1 without a word, as typer
    does for one during the command (typer ``core.py`` ``_main``, ``errno.EPIPE``): the
    reader chose to stop, and stderr has nothing to add.

    Raises:
        SystemExit: code 1 after a failure on standard output; the command's own exit
            otherwise.
    """
    guard = GuardedStdout(sys.stdout)
    sys.stdout = guard
    try:
        try:
            yield
        finally:
            guard.flush()
    except StdoutError as exc:
        # Nothing more reaches the failed stream (the interpreter flushes it at exit).
        sys.stdout = guard.stream
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), guard.stream.fileno())
        if exc.errno != errno.EPIPE:
            err.print(
                f"[bold red]error:[/] cannot write to standard output: {exc.strerror}",
                highlight=False,
                soft_wrap=True,
            )
        raise SystemExit(1) from None


def main() -> None:
    """Console-script entry point.

    numpy's OpenBLAS starts a thread per core when numpy is imported, and those threads
    spin before they sleep: about 0.08 CPU seconds of every command that imports numpy, on a
    2-core machine. Joiner's arrays are small integer masks and sums that never call BLAS,
    so the command asks OpenBLAS for one thread (``OPENBLAS_NUM_THREADS``, read when numpy
    is first imported, which this module does not do: ``tests/cli/test_plan_imports.py``),
    unless the environment already sets it. The cyclic garbage collector runs with the
    simulation's settings (``joiner.sim.gctuning``).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    tune_for_simulation()
    with stdout_errors():
        app()


if __name__ == "__main__":
    main()
