"""``joiner simulate``: run a scenario in virtual time and print or compare the outcome."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from joiner.api.errors import InputError
from joiner.cli.common import (
    FeatureGatesOption,
    Verbose,
    configure_logging,
    err,
    fail,
    out,
    print_warnings,
)


def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (kind: Scenario).")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output directory (default: joiner-out/<metadata.name> in the current directory).",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only warnings and the output path.")
    ] = False,
    feature_gates: FeatureGatesOption = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Also write a self-contained HTML report with plots (and the PNGs) here.",
        ),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Run a scenario in virtual time and report nodes, cost and pod wait times; with
    spec.compare, under each policy, side by side."""
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.cli.progress import virtual_time_progress
    from joiner.operator.compare import prepare_policies, run_policies
    from joiner.sim.htmlreport import PolicyData, write_report
    from joiner.sim.scenario import load_scenario

    if verbose:
        configure_logging(True)
    try:
        sc = load_scenario(scenario)
        if feature_gates is not None:
            sc = replace(sc, feature_gates=parse_feature_gates(feature_gates))
        prepared = prepare_policies(sc)
    except InputError as exc:
        fail(exc)
    target = out_dir if out_dir is not None else Path("joiner-out") / sc.name
    summary_path = target / "summary.json"
    try:
        target.mkdir(parents=True, exist_ok=True)
        if summary_path.is_dir():
            raise IsADirectoryError(f"{summary_path} is a directory")
    except OSError as exc:
        fail(InputError(f"cannot write the output directory: {exc}", field="--out"))
    if report is not None:
        try:
            report.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(InputError(f"cannot write the report directory: {exc}", field="--report"))
    offsets = {p: i * sc.duration_s for i, p in enumerate(sc.policies)}
    with virtual_time_progress(
        sc.name, sc.duration_s * len(sc.policies), console=err, enabled=not quiet
    ) as update:
        result = run_policies(sc, prepared=prepared, progress=lambda p, t: update(offsets[p] + t))
    try:
        summary_path.write_text(json.dumps(result.summary, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        fail(InputError(f"cannot write {summary_path}: {exc}", field="--out"))
    page = None
    if report is not None:
        try:
            page = write_report(
                report,
                sc.name,
                {n: PolicyData(r.summary, r.state) for n, r in result.runs.items()},
                sc.duration_s,
            )
        except OSError as exc:
            fail(InputError(f"cannot write the report: {exc}", field="--report"))
    if quiet:
        print_warnings(result.summary["warnings"])
        out.print(str(summary_path))
        if page is not None:
            out.print(str(page))
        return
    if len(result.runs) > 1:
        _print_comparison({n: r.summary for n, r in result.runs.items()})
    else:
        _print_summary(result.summary)
    out.print(f"\nsummary written to [bold]{summary_path}[/]")
    if page is not None:
        out.print(f"report written to [bold]{page}[/]")


def _print_summary(s: dict[str, Any]) -> None:
    print_warnings(s["warnings"])
    groups = Counter(
        (n["nodePool"], n["instanceType"], n["zone"], n["capacityType"], n["pricePerHour"])
        for n in s["nodes"]
    )
    table = Table(title=f"Nodes launched: {s['scenario']} ({s['region']}, seed {s['seed']})")
    for col in ("NodePool", "instance type", "zone", "capacity type", "$/h each", "nodes"):
        keep = col in ("instance type", "zone")
        table.add_column(
            col,
            justify="right" if col in ("$/h each", "nodes") else "left",
            no_wrap=keep,
            min_width=max((len(k[1 if col == "instance type" else 2]) for k in groups), default=4)
            if keep
            else None,
            overflow="fold",
        )
    for (pool, it, zone, ct, price), count in sorted(groups.items()):
        table.add_row(escape(pool), it, zone, ct, f"{price:.4f}", str(count))
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
        f"pods: {pods['scheduled']} ran (bound to a node at least once), "
        f"{pods['pending']} pending at the end, "
        f"{pods['lost']} lost; pending seconds p50 {ps['p50']:.1f}, p95 {ps['p95']:.1f}, "
        f"max {ps['max']:.1f}"
    )
    i = s["interruptions"]
    if i["count"]:
        lead = i["replacementLeadTimeSeconds"]
        lead_text = (
            f"; replacement Ready p50 {lead['p50']:.1f} s (min {lead['min']:.1f} s) before "
            "the reclaim"
            if lead["p50"] is not None and lead["min"] is not None
            else ""
        )
        kinds = ", ".join(f"{k} {v}" for k, v in i["byKind"].items())
        out.print(
            f"interruptions: {i['count']} nodes ({kinds}), {i['podsRescheduledBeforeReclaim']} "
            f"pods rescheduled before the reclaim, {i['podsLost']} lost, {i['pdbViolations']} "
            f"PDB violations{lead_text}"
        )
    d = s["disruptions"]
    if d["commands"] or d["expired"]:
        methods = ", ".join(f"{k} {v}" for k, v in d["byMethod"].items()) or "none"
        out.print(
            f"disruption: {len(d['commands'])} commands ({methods}), {d['podsEvicted']} pods "
            f"evicted, saving ${d['savingsPerHour']:.4f}/h; {d['expired']} NodeClaims expired"
        )
    from joiner.sim.htmlreport import ca_configuration

    line = ca_configuration(s)
    if line is not None:
        out.print(line, markup=False, highlight=False)
    for r in pods["unschedulableReasons"]:
        err.print(
            f"[bold yellow]unschedulable ({r['pods']} pods):[/] {escape(r['reason'])}",
            soft_wrap=True,
        )


def _print_comparison(summaries: dict[str, dict[str, Any]]) -> None:
    from joiner.sim.htmlreport import ca_configuration, comparison_rows

    seen: set[str] = set()
    for s in summaries.values():
        print_warnings([w for w in s["warnings"] if w not in seen])
        seen.update(s["warnings"])
    first = next(iter(summaries.values()))
    table = Table(
        title=f"{first['scenario']}: {first['durationSeconds'] / 3600:g} h, seed {first['seed']}"
    )
    table.add_column("")
    for name in summaries:
        table.add_column(name, justify="right")
    for label, cells in comparison_rows(summaries):
        table.add_row(label, *cells)
    out.print(table)
    for s in summaries.values():
        line = ca_configuration(s)
        if line is not None:
            out.print(line, markup=False, highlight=False)
