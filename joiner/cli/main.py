"""``joiner`` command line. Exit codes: 0 success, 2 bad input or usage, 1 internal error."""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from joiner.api.errors import InputError
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import json_schema, load_scenario

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Joiner: just-in-time, Spot-first node provisioning for Kubernetes.",
)
err = Console(stderr=True)
out = Console()

EXIT_BAD_INPUT = 2


def _fail(exc: InputError) -> None:
    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log controller decisions.")
    ] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (kind: Scenario).")],
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Output directory [default: joiner-out/<metadata.name>/]."),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the output path.")
    ] = False,
) -> None:
    """Run a scenario in virtual time and report nodes, cost and pod wait times."""
    try:
        sc = load_scenario(scenario)
        runtime = SimulationRuntime(sc)
    except InputError as exc:
        _fail(exc)
        return
    show_progress = err.is_terminal and not quiet
    with Progress(
        TextColumn("[bold]simulating[/] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} s virtual"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not show_progress,
    ) as progress:
        task = progress.add_task(sc.name, total=sc.duration_s)
        result = runtime.run(progress=lambda t: progress.update(task, completed=t))
        progress.update(task, completed=sc.duration_s)
    target = out_dir if out_dir is not None else Path("joiner-out") / sc.name
    target.mkdir(parents=True, exist_ok=True)
    summary_path = target / "summary.json"
    summary_path.write_text(json.dumps(result.summary, indent=2) + "\n", encoding="utf-8")
    if quiet:
        out.print(str(summary_path))
        return
    _print_summary(result.summary)
    out.print(f"\nsummary written to [bold]{summary_path}[/]")


def _print_summary(s: dict[str, Any]) -> None:
    for w in s["warnings"]:
        err.print(f"[bold yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
    groups = Counter(
        (n["nodePool"], n["instanceType"], n["zone"], n["capacityType"], n["pricePerHour"])
        for n in s["nodes"]
    )
    table = Table(title=f"Nodes launched: {s['scenario']} ({s['region']}, seed {s['seed']})")
    for col in ("NodePool", "instance type", "zone", "capacity type", "$/h each", "nodes"):
        table.add_column(col, justify="right" if col in ("$/h each", "nodes") else "left")
    for (pool, it, zone, ct, price), count in sorted(groups.items()):
        table.add_row(pool, it, zone, ct, f"{price:.4f}", str(count))
    out.print(table)
    cost = s["cost"]
    pods = s["pods"]
    ps = pods["pendingSeconds"]
    hours = s["durationSeconds"] / 3600
    out.print(
        f"cost over {hours:g} h: [bold]${cost['total']:.4f}[/] "
        f"(all on-demand: ${cost['onDemandEquivalent']:.4f}, "
        f"saving {cost['savingsPercent']:.1f}%), "
        f"peak ${cost['perHourPeak']:.4f}/h"
    )
    out.print(
        f"pods: {pods['scheduled']} scheduled, {pods['pending']} pending at the end, "
        f"{pods['lost']} lost; pending seconds p50 {ps['p50']:.1f}, p95 {ps['p95']:.1f}, "
        f"max {ps['max']:.1f}"
    )
    for r in pods["unschedulableReasons"]:
        err.print(
            f"[bold yellow]unschedulable ({r['pods']} pods):[/] {escape(r['reason'])}",
            soft_wrap=True,
        )


@app.command()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of the scenario file."""
    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
