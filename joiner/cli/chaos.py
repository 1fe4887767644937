"""``joiner chaos``: AWS FIS experiment templates, validated or run against a scenario."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.jsontext import json_text
from joiner.cli.common import OutputOption, TableOrJson, err, fail, out, printable

chaos = typer.Typer(no_args_is_help=True, help="Fault injection with AWS FIS experiment templates.")


@chaos.command("validate")
def chaos_validate(
    template: Annotated[Path, typer.Argument(help="FIS experiment template (JSON).")],
) -> None:
    """Check a template against AWS's schema and Joiner's supported actions; run nothing."""
    from joiner.faults.template import load_template

    try:
        t = load_template(template)
    except InputError as exc:
        fail(exc)
    out.print(
        f"{escape(str(template))}: valid ({len(t.actions)} action(s), {len(t.targets)} target(s))"
    )
    for w in t.warnings:
        err.print(f"[yellow]warning:[/] {escape(w)}")


@chaos.command("run")
def chaos_run(
    template: Annotated[Path, typer.Argument(help="FIS experiment template (JSON).")],
    scenario: Annotated[Path, typer.Option("--scenario", help="Scenario to run it in.")],
    at: Annotated[
        str | None,
        typer.Option(
            "--at", help="Start (Go duration); default: when the initial workload first runs."
        ),
    ] = None,
    output: OutputOption = TableOrJson.table,
) -> None:
    """Run one experiment against a scenario. Exit 0 survived, 1 a pod was lost or a
    PodDisruptionBudget violated, 2 bad input."""
    from joiner.api import durations
    from joiner.faults.template import load_template
    from joiner.operator.chaos import run_experiment
    from joiner.sim.scenario import load_scenario

    try:
        t = load_template(template)
        sc = load_scenario(scenario)
        at_s = None if at is None else durations.parse_required_seconds(at, field="--at")
        verdict = run_experiment(sc, t, at_s)
    except InputError as exc:
        fail(exc)
    for w in t.warnings:
        err.print(f"[yellow]warning:[/] {escape(w)}")
    if output is TableOrJson.json:
        sys.stdout.write(json_text(verdict.body, indent=2) + "\n")
    else:
        b = verdict.body
        lead = b["replacementLeadTimeSeconds"]
        out.print(
            f"{'[bold green]survived[/]' if verdict.survived else '[bold red]did not survive[/]'}: "
            f"{printable(str(b['experiment']))} at {b['atSeconds']:.0f} s, "
            f"{plural(b['targets'], 'target')}; "
            f"{plural(b['podsLost'], 'pod')} lost, "
            f"{plural(b['pdbViolations'], 'PDB violation')}; at most "
            f"{plural(b['maxPodsPending'], 'pod')} pending, longest wait "
            f"{b['maxPendingSeconds']:.1f} s; "
            + (
                f"replacement lead time p50 {lead['p50']} s, min {lead['min']} s; "
                if lead["p50"] is not None
                else "no replacement lead time (no node got a 2-minute notice); "
            )
            + f"cost during the experiment ${b['costDuringExperiment']:.4f}"
        )
    for reason in verdict.body["failedTargets"]:
        err.print(f"[bold red]experiment failed:[/] {printable(reason)}", soft_wrap=True)
    if verdict.body["podsPendingAtEnd"]:
        err.print(
            f"[bold red]{plural(verdict.body['podsPendingAtEnd'], 'pod')} still pending[/] "
            "when the "
            "verdict window closed",
            soft_wrap=True,
        )
    if not verdict.survived:
        raise typer.Exit(1)
