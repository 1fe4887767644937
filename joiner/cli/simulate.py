"""``joiner simulate``: run a scenario in virtual time and print or compare the outcome."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.inputfiles import check_output, check_output_dir
from joiner.api.jsontext import json_text
from joiner.api.validation import shown
from joiner.cli.common import (
    FeatureGatesOption,
    Verbose,
    configure_logging,
    err,
    fail,
    out,
    print_table,
    print_warnings,
    printable,
)
from joiner.cli.explain import ExplainOption, print_explain

if TYPE_CHECKING:
    from joiner.operator.compare import Comparison
    from joiner.operator.wiring import SimulationRuntime
    from joiner.sim.htmlreport import PolicyData
    from joiner.sim.scenario import Scenario


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
    explain: ExplainOption = None,
    verbose: Verbose = False,
) -> None:
    """Run a scenario in virtual time and report nodes, cost and pod wait times; with
    spec.compare, under each policy, side by side. With --explain NODE, summary.json's
    explain field and a table give NODE's disruption verdict history."""
    from joiner.cli.progress import virtual_time_progress
    from joiner.operator.compare import run_policies

    if verbose:
        configure_logging(True)
    sc, prepared = _load(scenario, feature_gates)
    target = out_dir if out_dir is not None else Path("joiner-out") / sc.name
    summary_path = target / "summary.json"
    _make_output_dirs(target, summary_path, report)
    if report is not None:
        _require_report_extra()
    asked = _explain_names(explain)
    if asked is not None:
        for _name, runtime in prepared:
            runtime.keep_verdicts(asked)
    simulated = [p for p in sc.policies if p != "as-run"]  # the as-run record takes no time
    offsets = {p: i * sc.duration_s for i, p in enumerate(simulated)}
    # Policies run one after another: the bar counts every policy's virtual seconds.
    label = sc.name if len(simulated) <= 1 else f"{sc.name} ({', '.join(simulated)} in turn)"
    with virtual_time_progress(
        label, sc.duration_s * max(1, len(simulated)), console=err, enabled=not quiet
    ) as update:
        result = run_policies(sc, prepared=prepared, progress=lambda p, t: update(offsets[p] + t))
    page = _write_outputs(sc, result, summary_path, report)
    if asked is not None:
        for name in asked:
            _check_explained(name, prepared)
    if quiet:
        _print_quiet(result, verbose, asked)
        out.print(str(summary_path))
        if page is not None:
            out.print(str(page))
        return
    if len(result.summaries) > 1:
        _print_comparison(result.summaries, verbose)
    else:
        _print_summary(result.summary, verbose)
    if asked is not None:
        _print_explained(result.summaries)
    out.print(f"\nsummary written to [bold]{summary_path}[/]")
    if page is not None:
        out.print(f"report written to [bold]{page}[/]")


def _explain_names(explain: list[str] | None) -> tuple[str, ...] | None:
    """``--explain``'s nodes (``history.explain_names``); exits with status 2 when it names
    none."""
    from joiner.controllers.disruption.history import explain_names

    if explain is None:
        return None
    try:
        return explain_names(explain)
    except InputError as exc:
        fail(exc)


def _print_quiet(result: Any, verbose: bool, explain: tuple[str, ...] | None) -> None:
    """``-q``: the warnings (the as-run record's too), and the ``--explain NODE`` table when
    a node was named (``'*'`` goes to summary.json only)."""
    from joiner.controllers.disruption.history import ALL_NODES

    warnings = result.summary["warnings"]
    if result.as_run is not None:
        warnings = warnings + [w for w in result.as_run.summary["warnings"] if w not in warnings]
    print_warnings(warnings, verbose=verbose)
    if explain is not None and ALL_NODES not in explain:
        _print_explained(result.summaries)


def _check_explained(explain: str, prepared: list[tuple[str, SimulationRuntime]]) -> None:
    """Exit 2 (the outputs are written) when no run's disruption passes saw node ``explain``;
    the error names the nodes the first run's passes saw."""
    from joiner.controllers.disruption.history import ALL_NODES, unknown_node

    if explain == ALL_NODES or not prepared:
        return
    if any(explain in runtime.explained_nodes() for _name, runtime in prepared):
        return
    baseline = [n for n, r in prepared if not r.joiner and explain in r.node_names_seen()]
    if baseline:
        fail(
            InputError(
                f"node {shown(explain)} is a node of the {baseline[0]} run only: Cluster "
                "Autoscaler's nodes have no disruption verdicts (its scale-down is not "
                "Karpenter's disruption); name a node of a Joiner policy's run",
                field="--explain",
            )
        )
    fail(unknown_node(explain, prepared[0][1].explained_nodes()))


def _print_explained(summaries: dict[str, dict[str, Any]]) -> None:
    """The ``explain`` tables of each policy's run that has them (named when compared)."""
    for name, summary in summaries.items():
        explained = summary.get("explain")
        if not explained:
            continue
        if len(summaries) > 1:
            out.print(f"\n[bold]{name}[/]")
        else:
            out.print()
        print_explain(explained)


def _load(
    scenario: Path, feature_gates: str | None
) -> tuple[Scenario, list[tuple[str, SimulationRuntime]]]:
    """The scenario (with ``--feature-gates`` over its own) and one runtime per policy;
    exits with status 2 on an input error."""
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.operator.compare import prepare_policies
    from joiner.sim.scenario import load_scenario

    try:
        sc = load_scenario(scenario)
        if feature_gates is not None:
            sc = replace(
                sc, feature_gates=parse_feature_gates(feature_gates, base=sc.feature_gates)
            )
        return sc, prepare_policies(sc)
    except InputError as exc:
        fail(exc)


def _make_output_dirs(target: Path, summary_path: Path, report: Path | None) -> None:
    """Create ``target`` (where ``summary_path`` goes) and the ``--report`` directory; exits
    with status 2 when either cannot be written, or when a file to write there is not a
    regular file (a FIFO, a device, a directory) or is an input (``check_output_dir``):
    before the run, not after it."""
    from joiner.sim.htmlreport import PLOTS

    try:
        check_output_dir(target, field="--out", files=[summary_path.name])
        if report is not None:
            pages = ["index.html", *(f"{name}.png" for name in PLOTS)]
            check_output_dir(report, field="--report", files=pages)
    except InputError as exc:
        fail(exc)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(InputError(f"cannot write the output directory: {exc}", field="--out"))
    if report is not None:
        try:
            report.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(InputError(f"cannot write the report directory: {exc}", field="--report"))


def _require_report_extra() -> None:
    """Exit with status 2, naming ``joiner[report]``, when ``--report`` cannot be drawn
    (matplotlib or Jinja2 missing): checked before the run, not after it."""
    from joiner.api.extras import MissingExtraError, require

    try:
        for module in ("matplotlib", "jinja2"):
            require(module, "report", "simulate --report")
    except MissingExtraError as exc:
        fail(exc)


def _write_outputs(
    sc: Scenario, result: Comparison, summary_path: Path, report: Path | None
) -> Path | None:
    """Write ``summary.json`` and, with ``--report``, the HTML report; the report page's
    path, or None. Exits with status 2 when a file cannot be written."""
    from joiner.sim.htmlreport import write_report

    try:
        check_output(summary_path, field="--out")
        summary_path.write_text(json_text(result.summary, indent=2) + "\n", encoding="utf-8")
    except InputError as exc:
        fail(exc)
    except OSError as exc:
        fail(InputError(f"cannot write {summary_path}: {exc}", field="--out"))
    if report is None:
        return None
    try:
        return write_report(report, sc.name, _report_data(result), sc.duration_s)
    except InputError as exc:
        fail(exc)
    except OSError as exc:
        fail(InputError(f"cannot write the report: {exc}", field="--report"))


def _report_data(result: Comparison) -> dict[str, PolicyData]:
    """What the HTML report plots of each policy, in ``spec.compare`` order."""
    from joiner.sim.htmlreport import PolicyData

    out: dict[str, PolicyData] = {}
    for name, summary in result.summaries.items():
        run = result.runs.get(name)
        if run is not None:
            out[name] = PolicyData(summary, run.state)
        elif result.as_run is not None:
            out[name] = PolicyData(
                summary, None, pod_spans=result.as_run.pod_spans, waits=result.as_run.waits
            )
    return out


def duration_text(seconds: float) -> str:
    """A duration as people read it: whole days, hours, minutes and seconds with the zero
    ones left out (``2h``, ``2m39s``, ``7d``, ``1d2h30m``); under a second, ``0s``."""
    total = round(seconds)
    if total <= 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, total = divmod(total, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def _print_summary(s: dict[str, Any], verbose: bool) -> None:
    print_warnings(s["warnings"], verbose=verbose)
    groups = Counter(
        (n["nodePool"], n["instanceType"], n["zone"], n["capacityType"], n["pricePerHour"])
        for n in s["nodes"]
    )
    print_table(
        f"Nodes, at the start and launched: {s['scenario']} ({s['region']}, seed {s['seed']})",
        [
            ("NodePool", "left"),
            ("instance type", "left"),
            ("zone", "left"),
            ("capacity type", "left"),
            ("$/h each", "right"),
            ("nodes", "right"),
        ],
        [
            [pool, it, zone, ct, f"{price:.4f}", str(count)]
            for (pool, it, zone, ct, price), count in sorted(groups.items())
        ],
    )
    cost = s["cost"]
    pods = s["pods"]
    ps = pods["pendingSeconds"]
    if cost["pricesEstimated"]:
        from rich.markup import escape

        out.print(f"[bold yellow]prices are estimated:[/] {escape(cost['priceNote'])}")
    out.print(
        f"cost over {duration_text(s['durationSeconds'])}: [bold]${cost['total']:.4f}[/]"
        + ("*" if cost["pricesEstimated"] else "")
        + " "
        f"({100 - cost['savingsPercent']:.1f}% of all on-demand: "
        f"${cost['onDemandEquivalent']:.4f}), "
        f"peak ${cost['perHourPeak']:.4f}/h"
    )
    out.print(
        f"pods: {pods['scheduled']} ran (bound to a node at least once), "
        f"{pods['pending']} pending at the end, "
        f"{pods['lost']} lost"
    )
    out.print(f"pending seconds p50 {ps['p50']:.1f}, p95 {ps['p95']:.1f}, max {ps['max']:.1f}")
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
            f"interruptions: {plural(i['count'], 'node')} ({kinds}), "
            f"{plural(i['podsRescheduledBeforeReclaim'], 'pod')} rescheduled before the "
            f"reclaim, {i['podsLost']} lost, {plural(i['pdbViolations'], 'PDB violation')}"
            f"{lead_text}"
        )
    reclaims = i["reclaimEvents"]
    if reclaims:
        largest = max(reclaims, key=lambda e: (e["nodes"], -e["atSeconds"]))
        out.print(
            f"Spot reclaim events: {len(reclaims)} ({sum(e['nodes'] for e in reclaims)} nodes); "
            f"largest took {largest['nodes']} at once ({largest['instanceType']} in "
            f"{largest['zone']} at {largest['atSeconds'] / 3600:.1f} h)"
        )
    d = s["disruptions"]
    if d["commands"] or d["expired"]:
        methods = ", ".join(f"{k} {v}" for k, v in d["byMethod"].items()) or "none"
        out.print(
            f"disruption: {plural(len(d['commands']), 'command')} ({methods}), "
            f"{plural(d['podsEvicted'], 'pod')} evicted; "
            f"{plural(d['expired'], 'NodeClaim')} expired"
        )
    from joiner.sim.htmlreport import ca_configuration

    line = ca_configuration(s)
    if line is not None:
        out.print(line, markup=False, highlight=False)
    for r in pods["unschedulableReasons"]:
        err.print(
            f"[bold yellow]unschedulable ({plural(r['pods'], 'pod')}):[/] {printable(r['reason'])}",
            soft_wrap=True,
        )


def _print_comparison(summaries: dict[str, dict[str, Any]], verbose: bool) -> None:
    from rich.markup import escape

    from joiner.sim.htmlreport import ca_configuration, comparison_notes, comparison_rows

    seen: set[str] = set()
    for s in summaries.values():
        print_warnings([w for w in s["warnings"] if w not in seen], verbose=verbose)
        seen.update(s["warnings"])
    first = next(iter(summaries.values()))
    print_table(
        f"{first['scenario']}: {duration_text(first['durationSeconds'])}, seed {first['seed']}",
        [("", "left"), *((name, "right") for name in summaries)],
        [[label, *cells] for label, cells in comparison_rows(summaries)],
    )
    for note in comparison_notes(summaries):
        out.print(f"[bold yellow]cost left partial:[/] {escape(note)}")
    notes: dict[str, list[str]] = {}
    for name, s in summaries.items():
        if s["cost"]["pricesEstimated"]:
            notes.setdefault(s["cost"]["priceNote"], []).append(name)
    for note, names in notes.items():
        out.print(f"[bold yellow]prices are estimated ({', '.join(names)}):[/] {escape(note)}")
    for s in summaries.values():
        line = ca_configuration(s)
        if line is not None:
            out.print(line, markup=False, highlight=False)
