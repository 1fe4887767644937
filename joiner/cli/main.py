"""``joiner`` command line. Exit codes: 0 success, 2 bad input or usage, 1 internal error.

This module only assembles the application from one module per command group
(``simulate``, ``schema``, ``plan``, ``advise``, ``disrupt``, ``manifests`` for convert and
lint, ``chaos``, ``sweep``, ``controller`` for install-crds and run, ``importer`` for
import); each command imports the simulation, the cloud providers and heavy libraries
inside its function, so
``joiner --version`` and ``--help`` import none of them.
"""

from __future__ import annotations

import os
from typing import Annotated

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
from joiner.cli.common import JoinerGroup, Verbose, configure_logging, out
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
    app()


if __name__ == "__main__":
    main()
