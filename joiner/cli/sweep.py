"""``joiner sweep``: many simulations (seeds x variants x multipliers x policies) locally or on
Ray, results streamed to JSON Lines; ``joiner sweep report`` summarises and recommends.

``joiner sweep SWEEP.yaml`` is short for ``joiner sweep run SWEEP.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from joiner.api.errors import InputError
from joiner.api.extras import require
from joiner.api.grouping import plural
from joiner.api.inputfiles import check_output
from joiner.cli.common import (
    OutputOption,
    TableOrJson,
    err,
    fail,
    out,
    print_table,
    printable,
)


class _DefaultRun(TyperGroup):
    """A group whose first argument, when it is not a sub-command, is ``run``'s."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep = typer.Typer(
    cls=_DefaultRun,
    no_args_is_help=True,
    help="Run a sweep (joiner sweep SWEEP.yaml) or report on its results.",
)


def _default_workers() -> int:
    return os.cpu_count() or 1


@sweep.command("run")
def run(
    sweep_file: Annotated[Path, typer.Argument(help="Sweep file (kind: Sweep).")],
    results: Annotated[
        Path | None,
        typer.Option(
            "--results",
            "-o",
            help="JSON Lines results file (default: joiner-out/<metadata.name>/results.jsonl).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", "-w", min=1, help="Local worker processes (default: the CPU count)."
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run cells as Ray tasks: 'local' (a private Ray on this machine, --workers "
            "CPUs), 'auto' (the cluster `ray start` left here) or a cluster ADDRESS.",
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Run only the cells missing from the results.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing results file.")
    ] = False,
    retries: Annotated[
        int, typer.Option(min=0, help="Runs again a cell whose worker died, this many times.")
    ] = 2,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Run every cell of a sweep (each one `joiner simulate` run), streaming one JSON row per
    cell to the results as cells finish."""
    from joiner.cli.progress import count_bar
    from joiner.operator.sweep.pool import LocalPool
    from joiner.operator.sweep.runner import Backend, run_sweep
    from joiner.operator.sweep.spec import load_sweep

    if resume and overwrite:
        fail(InputError("give --resume or --overwrite, not both", field="--overwrite"))
    n = workers or _default_workers()
    try:
        plan = load_sweep(sweep_file)
    except InputError as exc:
        fail(exc)
    target = results if results is not None else Path("joiner-out") / plan.name / "results.jsonl"
    try:
        # The sweep and every file it names were read by load_sweep: none may be replaced.
        check_output(target, field="--results", inputs=[sweep_file])
    except InputError as exc:
        fail(exc)
    backend: Backend
    if ray is None:
        backend, name = LocalPool(n, retries=retries), "local"
    else:
        from joiner.operator.sweep.ray_backend import RayBackend

        backend, name = RayBackend(ray, num_cpus=n, retries=retries), "ray"
    with count_bar(f"sweep {plan.name}", quiet=quiet) as bar:
        try:
            outcome = run_sweep(
                plan,
                target,
                backend,
                name,
                resume=resume,
                overwrite=overwrite,
                on_start=lambda todo, done: bar.start(todo + done, done),
                on_row=lambda _row: bar.advance(),
            )
        except InputError as exc:
            fail(exc)
    if outcome.altered:
        err.print(
            f"[bold yellow]warning:[/] {plural(outcome.altered, 'row')} of the results did not "
            "match their summary digest or held a metric that is not a finite number: "
            "their cells were run again"
        )
    if not quiet:
        out.print(
            f"{outcome.ran} cells run, {outcome.skipped} already in the results, "
            f"{len(outcome.failed)} failed (of {outcome.total})"
        )
    for cid in outcome.failed:
        err.print(f"[bold red]failed:[/] {escape(cid)} (its row holds the error)")
    out.print(str(outcome.results))
    if outcome.failed:
        raise typer.Exit(1)


@sweep.command("report")
def report(
    results: Annotated[
        Path,
        typer.Argument(help="Results file of `joiner sweep` (-: standard input)."),
    ],
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="HTML report path (default: RESULTS with .html; with RESULTS -, no HTML "
            "unless --html is given). Missing parent directories are created.",
        ),
    ] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            help="e.g. 'minimise cost subject to p95 pending <= 60 s and pods lost == 0' "
            "(constraints must hold in every seed).",
        ),
    ] = None,
    output: OutputOption = TableOrJson.table,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Name every failed cell of each reason.")
    ] = False,
) -> None:
    """Per variant: median and 5th-95th percentile across seeds of cost, p95 pending, pods
    lost and reclaims; the failed cells by reason; a Pareto plot; with --objective, the
    recommended variant and its NodePool YAML. The results must be of one sweep. Exit 1
    when no variant meets the objective, 2 on bad input."""
    from joiner.operator.sweep.report import Recommendation, failures, groups, recommend
    from joiner.operator.sweep.results import one_sweep, read_rows

    target = _report_target(results, html_out)
    try:
        parsed = _report_inputs(objective, target, results, default=html_out is None)
        rows = read_rows(results)
        if not rows:
            raise InputError("the results file holds no rows", file=str(results))
        name = one_sweep(rows, results) or results.stem
    except InputError as exc:
        fail(exc)
    gs, found = groups(rows), failures(rows)
    rec: Recommendation | None = recommend(rows, parsed) if parsed is not None else None
    if target is not None:
        _write_report_page(target, name, gs, objective, rec, found)
    if output is TableOrJson.json:
        from joiner.api.jsontext import json_text
        from joiner.operator.sweep.report import report_document

        where = str(target) if target is not None else None
        doc = report_document(name, gs, found, rec, objective, where)
        typer.echo(json_text(doc, indent=2))
    else:
        _print_report(name, gs, found, verbose=verbose)
        if rec is not None:
            _print_recommendation(objective or "", rec)
        if target is not None:
            out.print(f"report written to [bold]{escape(str(target))}[/]")
    if rec is not None and rec.variant is None:
        raise typer.Exit(1)


def _report_target(results: Path, html_out: Path | None) -> Path | None:
    """The HTML page's path: ``--html``, else the results path with ``.html``; None (no
    page) for results read from standard input (``-``) without ``--html``."""
    if html_out is not None:
        return html_out
    if str(results) == "-":
        return None
    return results.with_suffix(".html")


def _report_inputs(
    objective: str | None, target: Path | None, results: Path, *, default: bool
) -> Any:
    """The parsed ``--objective`` (or None), after the extras and the HTML target (None:
    none; ``default``: not chosen by ``--html``) were checked (before any work).

    Raises:
        InputError: a missing extra, a bad objective, or an unusable HTML path.
    """
    from joiner.operator.sweep.report import parse_objective

    require("matplotlib", "report", "joiner sweep report")  # its Pareto plot
    require("jinja2", "report", "joiner sweep report")  # its HTML page
    parsed = parse_objective(objective) if objective is not None else None
    if target is None:
        return parsed
    try:
        check_output(target, field="--html", inputs=[results])
    except InputError as exc:
        if not default:
            raise
        raise InputError(
            "is the default HTML path (the results' path with .html), and it "
            f"{exc.detail.removesuffix('; choose another path')}; give --html PATH to write "
            "the report elsewhere",
            file=exc.file,
        ) from exc
    return parsed


def _write_report_page(
    target: Path, name: str, gs: Any, objective: str | None, rec: Any, found: Any
) -> None:
    """Write the HTML page, creating missing parent directories (as ``simulate --out``
    does); exits with status 2, naming the path, when it cannot be written."""
    from joiner.operator.sweep.report import render_html

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_html(name, gs, objective, rec, found), encoding="utf-8")
    except OSError as exc:
        fail(
            InputError(
                f"cannot write the report: {exc.strerror or exc}",
                file=str(target),
                field="--html",
            )
        )


def _print_report(name: str, gs: Any, found: Any, *, verbose: bool) -> None:
    """The table, then one line per failure reason naming its cells (the first few
    unless ``verbose``)."""
    from joiner.api.grouping import SHOWN
    from joiner.operator.sweep.report import TABLE_HEADER, failure_lines, table_rows

    print_table(
        f"Sweep {name}: median [5th-95th percentile] across seeds",
        [(h, "left" if h in ("variant", "policy") else "right") for h in TABLE_HEADER],
        [list(row) for row in table_rows(gs)],
    )
    for line in failure_lines(found, shown=None if verbose else SHOWN):
        err.print(f"[bold red]failed:[/] {printable(line)}", highlight=False, soft_wrap=True)


def _print_recommendation(objective: str, rec: Any) -> None:
    for choice, why in rec.rejected.items():
        err.print(f"rejected {escape(choice)}: {escape(why)}", highlight=False)
    if rec.variant is None:
        err.print(f"[bold red]no variant meets[/] {escape(objective)}")
        return
    out.print(
        f"recommended: [bold]{escape(rec.variant)}[/] under {escape(rec.policy)} "
        f"(median {rec.value:g})"
    )
    if rec.node_pools_yaml:
        out.print(escape(rec.node_pools_yaml), highlight=False, soft_wrap=True)
