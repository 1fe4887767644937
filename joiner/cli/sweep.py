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
from joiner.api.inputfiles import check_not_input
from joiner.cli.common import err, fail, out, print_table


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
        check_not_input(target, field="--results", inputs=[sweep_file])
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
    results: Annotated[Path, typer.Argument(help="Results file of `joiner sweep`.")],
    html_out: Annotated[
        Path | None,
        typer.Option("--html", help="HTML report path (default: RESULTS with .html)."),
    ] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            help="e.g. 'minimise cost subject to p95 pending <= 60 s and pods lost == 0' "
            "(constraints must hold in every seed).",
        ),
    ] = None,
) -> None:
    """Per variant: median and 5th-95th percentile across seeds of cost, p95 pending, pods
    lost and reclaims; a Pareto plot; with --objective, the recommended variant and its
    NodePool YAML. Exit 1 when no variant meets the objective."""
    from joiner.operator.sweep.report import (
        TABLE_HEADER,
        Recommendation,
        groups,
        parse_objective,
        recommend,
        render_html,
        table_rows,
    )
    from joiner.operator.sweep.results import read_rows

    try:
        require("matplotlib", "report", "joiner sweep report")  # its Pareto plot
        require("jinja2", "report", "joiner sweep report")  # its HTML page
        parsed = parse_objective(objective) if objective is not None else None
        rows = read_rows(results)
        if not rows:
            raise InputError("the results file holds no rows", file=str(results))
    except InputError as exc:
        fail(exc)
    gs = groups(rows)
    rec: Recommendation | None = recommend(rows, parsed) if parsed is not None else None
    name = str(rows[0].get("sweep", results.stem))
    print_table(
        f"Sweep {name}: median [5th-95th percentile] across seeds",
        [(h, "left" if h in ("variant", "policy") else "right") for h in TABLE_HEADER],
        [list(row) for row in table_rows(gs)],
    )
    target = html_out if html_out is not None else results.with_suffix(".html")
    try:
        check_not_input(target, field="--html", inputs=[results])
    except InputError as exc:
        fail(exc)
    try:
        target.write_text(render_html(name, gs, objective, rec), encoding="utf-8")
    except OSError as exc:
        fail(InputError(f"cannot write the report: {exc.strerror or exc}", field="--html"))
    if rec is not None:
        _print_recommendation(objective or "", rec)
    out.print(f"report written to [bold]{escape(str(target))}[/]")
    if rec is not None and rec.variant is None:
        raise typer.Exit(1)


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
