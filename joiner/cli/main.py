"""``joiner`` command line. Exit codes: 0 success, 2 bad input or usage, 1 internal error."""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from joiner import __version__
from joiner.api import cron, durations
from joiner.api.errors import InputError
from joiner.api.featuregates import FeatureGates
from joiner.api.featuregates import parse as parse_feature_gates
from joiner.api.manifests import ManifestSet, load_files
from joiner.api.manifests.to_v1 import check_reloads, convert_files
from joiner.api.outputs import DisruptionPlan, Plan, SimulationSummary
from joiner.cloudprovider.catalog import Catalog
from joiner.faults.template import load_template
from joiner.operator.chaos import run_experiment
from joiner.operator.compare import prepare_policies, run_policies
from joiner.operator.disrupt import build_disruption_plan
from joiner.operator.lint import lint_manifests
from joiner.operator.live import read_cluster
from joiner.operator.plan import build_plan
from joiner.sim.htmlreport import PolicyData, comparison_rows, write_report
from joiner.sim.scenario import is_scenario_file, json_schema, load_scenario

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


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


def _version(value: bool) -> None:
    if value:
        out.print(f"joiner {__version__}")
        raise typer.Exit(0)


Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Log controller decisions.")]


@app.callback()
def _root(
    verbose: Verbose = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    _configure_logging(verbose)


def _check_region(region: str) -> None:
    """Reject a region the packaged catalog does not know (``--region``)."""
    regions = Catalog.load().regions()
    if region not in regions:
        raise InputError(
            f"unknown region {region!r}; known: {', '.join(regions)}", field="--region"
        )


def _printable(text: str) -> str:
    """User text made safe for a terminal: markup escaped, control characters replaced."""
    return escape("".join(ch if ch.isprintable() else "?" for ch in text))


def _print_warnings(warnings: list[str]) -> None:
    for w in warnings:
        err.print(f"[bold yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)


FeatureGatesOption = Annotated[
    str | None,
    typer.Option(
        "--feature-gates",
        help="Karpenter feature gates, e.g. SpotToSpotConsolidation=true (overrides the "
        "scenario's settings.featureGates).",
    ),
]


@app.command()
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
    if verbose:
        _configure_logging(True)
    try:
        sc = load_scenario(scenario)
        if feature_gates is not None:
            sc = replace(sc, feature_gates=parse_feature_gates(feature_gates))
        prepared = prepare_policies(sc)
    except InputError as exc:
        _fail(exc)
        return
    target = out_dir if out_dir is not None else Path("joiner-out") / sc.name
    summary_path = target / "summary.json"
    try:
        target.mkdir(parents=True, exist_ok=True)
        if summary_path.is_dir():
            raise IsADirectoryError(f"{summary_path} is a directory")
    except OSError as exc:
        _fail(InputError(f"cannot write the output directory: {exc}", field="--out"))
    if report is not None:
        try:
            report.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _fail(InputError(f"cannot write the report directory: {exc}", field="--report"))
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
        total = sc.duration_s * len(sc.policies)
        task = progress.add_task(sc.name, total=total)
        offsets = {p: i * sc.duration_s for i, p in enumerate(sc.policies)}
        result = run_policies(
            sc,
            prepared=prepared,
            progress=lambda p, t: progress.update(task, completed=offsets[p] + t),
        )
        progress.update(task, completed=total)
    try:
        summary_path.write_text(json.dumps(result.summary, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        _fail(InputError(f"cannot write {summary_path}: {exc}", field="--out"))
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
            _fail(InputError(f"cannot write the report: {exc}", field="--report"))
    if quiet:
        _print_warnings(result.summary["warnings"])
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
    _print_warnings(s["warnings"])
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
    for r in pods["unschedulableReasons"]:
        err.print(
            f"[bold yellow]unschedulable ({r['pods']} pods):[/] {escape(r['reason'])}",
            soft_wrap=True,
        )


def _print_comparison(summaries: dict[str, dict[str, Any]]) -> None:
    seen: set[str] = set()
    for s in summaries.values():
        _print_warnings([w for w in s["warnings"] if w not in seen])
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


class SchemaKind(StrEnum):
    scenario = "scenario"
    plan = "plan"
    summary = "summary"
    disruption = "disruption"
    #: The same document, named after its command.
    disrupt = "disrupt"


def schema_text(kind: SchemaKind) -> str:
    """The JSON Schema of a Joiner input or output, as published in docs/."""
    if kind is SchemaKind.scenario:
        doc = json_schema()
    else:
        models: dict[SchemaKind, type[BaseModel]] = {
            SchemaKind.plan: Plan,
            SchemaKind.summary: SimulationSummary,
            SchemaKind.disruption: DisruptionPlan,
            SchemaKind.disrupt: DisruptionPlan,
        }
        doc = models[kind].model_json_schema()
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


@app.command()
def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="Which document.")] = SchemaKind.scenario,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of the scenario file, the plan or disrupt output, or
    summary.json."""
    text = schema_text(kind)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        _fail(InputError(f"cannot write {output}: {exc}", field="--output"))


ClusterFiles = Annotated[
    list[Path] | None,
    typer.Option(
        "--file", "-f", help="Manifests (repeat), or one Scenario file (its VPC is used)."
    ),
]
KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig", help="Read a live cluster through this kubeconfig instead of files."
    ),
]


def _cluster_manifests(files: list[Path], kubeconfig: Path | None) -> ManifestSet:
    """The manifests to plan over: the live cluster's (``--kubeconfig``) or the files'.

    Raises:
        InputError: neither or both given, a file or object does not load, or the cluster
            cannot be read (the API error is named).
    """
    if kubeconfig is None:
        if not files:
            raise InputError("give manifests with -f FILE or a cluster with --kubeconfig")
        return load_files(files)
    if files:
        raise InputError("give either -f FILE or --kubeconfig, not both", field="--kubeconfig")
    return read_cluster(kubeconfig)


RegionOption = Annotated[str, typer.Option(help="Region (ignored for a Scenario).")]


class PlanFormat(StrEnum):
    table = "table"
    json = "json"


class MinValuesPolicy(StrEnum):
    Strict = "Strict"
    BestEffort = "BestEffort"


@app.command()
def plan(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    region: RegionOption = "us-east-1",
    output: Annotated[PlanFormat, typer.Option("--output", "-o")] = PlanFormat.table,
    min_values_policy: Annotated[
        MinValuesPolicy, typer.Option("--min-values-policy", help="Strict or BestEffort.")
    ] = MinValuesPolicy.Strict,
) -> None:
    """Dry run of one provisioning round: which NodeClaims would launch, where pending pods
    fit, and which pods cannot be scheduled and why. Exit 0 with a plan, 2 on bad input."""
    catalog = Catalog.load()
    files = files or []
    try:
        if kubeconfig is None and len(files) == 1 and is_scenario_file(files[0]):
            sc = load_scenario(files[0], catalog, check_selectors=False)
            result = build_plan(
                sc.manifests,
                catalog,
                sc.region,
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                min_values_policy=min_values_policy.value,
            )
        else:
            _check_region(region)
            result = build_plan(
                _cluster_manifests(files, kubeconfig),
                catalog,
                region,
                min_values_policy=min_values_policy.value,
            )
    except InputError as exc:
        _fail(exc)
        return
    if output is PlanFormat.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    _print_warnings(result.warnings)
    n = len(result.nodeClaims)
    if n:
        table = Table(title=f"Plan ({result.region}): {n} NodeClaim{'s' if n != 1 else ''}")
        widest = {
            "launch": max(len(c.launch.instanceType) for c in result.nodeClaims),
            "zone": max(len(c.launch.zone) for c in result.nodeClaims),
            "capacity": 9,
        }
        columns = ("NodeClaim", "NodePool", "launch", "zone", "capacity", "$/h", "pods", "options")
        for col in columns:
            # Instance types and zones are never cut; long names fold instead.
            table.add_column(
                col,
                justify="right" if col in ("$/h", "pods", "options") else "left",
                min_width=widest.get(col),
                no_wrap=col in widest,
                overflow="fold",
            )
        for c in result.nodeClaims:
            table.add_row(
                escape(c.name),
                escape(c.nodePool),
                c.launch.instanceType,
                c.launch.zone,
                c.launch.capacityType,
                f"{c.launch.pricePerHour:.4f}",
                str(len(c.pods)),
                str(len(c.instanceTypes)),
            )
        out.print(table)
    else:
        out.print(f"Plan ({result.region}): no new NodeClaims")
    out.print(
        f"new capacity: [bold]${result.costPerHour:.4f}/h[/]; "
        f"{len(result.placements)} pods fit existing nodes; "
        f"{len(result.unschedulable)} unschedulable"
    )
    grouped: dict[str, list[str]] = {}
    for u in result.unschedulable:
        grouped.setdefault(u.reason, []).append(u.pod)
    for reason, pods in grouped.items():
        shown = ", ".join(pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
        err.print(
            f"[bold yellow]unschedulable ({len(pods)}):[/] {escape(shown)}: {escape(reason)}",
            soft_wrap=True,
        )


@app.command()
def disrupt(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    region: RegionOption = "us-east-1",
    output: Annotated[PlanFormat, typer.Option("--output", "-o")] = PlanFormat.table,
    feature_gates: FeatureGatesOption = None,
    at: Annotated[
        str | None,
        typer.Option(
            help="UTC time the budgets' schedules are evaluated at (ISO 8601, default now)."
        ),
    ] = None,
) -> None:
    """Dry run of disruption on a running cluster: the commands successive passes would take
    (Emptiness, Drift, MultiNodeConsolidation, SingleNodeConsolidation), each assumed to
    complete, and why every other node stays. Exit 0 with an answer, 2 on bad input."""
    try:
        when = _parse_at(at)
        gates = parse_feature_gates(feature_gates) if feature_gates is not None else None
        catalog = Catalog.load()
        files = files or []
        if kubeconfig is None and len(files) == 1 and is_scenario_file(files[0]):
            sc = load_scenario(files[0], catalog, check_selectors=False)
            result = build_disruption_plan(
                sc.manifests,
                catalog,
                sc.region,
                at=when,
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                feature_gates=gates or sc.feature_gates,
            )
        else:
            _check_region(region)
            result = build_disruption_plan(
                _cluster_manifests(files, kubeconfig),
                catalog,
                region,
                at=when,
                feature_gates=gates or FeatureGates(),
            )
    except InputError as exc:
        _fail(exc)
        return
    if output is PlanFormat.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    _print_warnings(result.warnings)
    n = len(result.commands)
    out.print(
        f"[bold]Disruption ({result.region}): {n} command{'s' if n != 1 else ''}[/]"
        if n
        else f"Disruption ({result.region}): no commands"
        + ("" if result.unconsolidatable else " (no managed nodes: nothing to disrupt)")
    )
    for i, c in enumerate(result.commands, 1):
        action = "replace" if c.replacements else "delete"
        out.print(
            f"{i}. {c.method} ({c.reason}): {action} {escape(', '.join(c.candidates))}; "
            f"saves ${c.savingsPerHour:.4f}/h",
            soft_wrap=True,
            highlight=False,
        )
        for r in c.replacements:
            out.print(
                f"   with {r.instanceType} {r.capacityType} in {r.zone} (${r.pricePerHour:.4f}/h)",
                highlight=False,
            )
        if c.detail:
            out.print(f"   because {escape(c.detail)}", soft_wrap=True, highlight=False)
    out.print(
        f"cost: [bold]${result.costPerHourBefore:.4f}/h -> ${result.costPerHourAfter:.4f}/h[/] "
        f"(saving ${result.savingsPerHour:.4f}/h)"
    )
    if result.unconsolidatable:
        out.print("left alone:")
    for u in result.unconsolidatable:
        out.print(f"  {escape(u.node)}: {escape(u.reason)}", soft_wrap=True, highlight=False)


def _parse_at(text: str | None) -> datetime:
    """``--at`` as a UTC instant; now when absent (the CLI edge may read the wall clock)."""
    if text is None:
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InputError(
            f"{text!r} is not an ISO 8601 time such as 2025-01-06T09:30:00Z", field="--at"
        ) from exc
    return cron.check_instant(value, field="--at")


class OutputFormat(StrEnum):
    yaml = "yaml"
    json = "json"


def _literal_str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (user data stays readable)."""


_Dumper.add_representer(str, _literal_str_presenter)


@app.command()
def convert(
    files: Annotated[list[Path], typer.Argument(help="Manifest files (YAML or JSON).")],
    output: Annotated[OutputFormat, typer.Option("--output", "-o", help="Output format.")] = (
        OutputFormat.yaml
    ),
    region: Annotated[str, typer.Option(help="Region for the lint checks.")] = "us-east-1",
) -> None:
    """Print the karpenter.sh/v1 and karpenter.k8s.aws/v1 equivalents of the manifests.

    Defaulted requirements become explicit, removed fields become their successors, and what
    v1 requires but the input lacks is a placeholder (annotation joiner.dev/placeholders),
    reported on stderr with the lint warnings. Other documents pass through unchanged.
    """
    try:
        _check_region(region)
        conversion = convert_files(files)
        check_reloads(conversion.documents)
        manifests = load_files(files)
        findings = lint_manifests(manifests, Catalog.load(), region)
    except InputError as exc:
        _fail(exc)
        return
    if output is OutputFormat.json:
        doc: Any = (
            conversion.documents[0]
            if len(conversion.documents) == 1
            else {"apiVersion": "v1", "kind": "List", "items": conversion.documents}
        )
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(
            yaml.dump_all(conversion.documents, Dumper=_Dumper, sort_keys=False, width=100)
        )
    _print_warnings([*conversion.warnings, *(str(f) for f in findings)])


@app.command()
def lint(
    files: Annotated[
        list[Path], typer.Argument(help="Manifest files, or one Scenario file (its VPC is used).")
    ],
    region: Annotated[str, typer.Option(help="Region (ignored for a Scenario).")] = "us-east-1",
) -> None:
    """Report configuration that cannot work as intended. Exit 1 when it warns, 0 when clean,
    2 on bad input."""
    catalog = Catalog.load()
    try:
        if len(files) == 1 and is_scenario_file(files[0]):
            sc = load_scenario(files[0], catalog, check_selectors=False)
            warnings = list(sc.manifests.warnings)
            findings = lint_manifests(
                sc.manifests,
                catalog,
                sc.region,
                subnets=sc.subnets,
                security_groups=sc.security_groups,
            )
        else:
            _check_region(region)
            manifests = load_files(files)
            warnings = list(manifests.warnings)
            findings = lint_manifests(manifests, catalog, region)
    except InputError as exc:
        _fail(exc)
        return
    all_warnings = [*warnings, *(str(f) for f in findings)]
    _print_warnings(all_warnings)
    if all_warnings:
        err.print(f"{len(all_warnings)} warning(s)")
        raise typer.Exit(1)
    err.print("no warnings")


chaos = typer.Typer(no_args_is_help=True, help="Fault injection with AWS FIS experiment templates.")
app.add_typer(chaos, name="chaos")


@chaos.command("validate")
def chaos_validate(
    template: Annotated[Path, typer.Argument(help="FIS experiment template (JSON).")],
) -> None:
    """Check a template against AWS's schema and Joiner's supported actions; run nothing."""
    try:
        t = load_template(template)
    except InputError as exc:
        _fail(exc)
        return
    out.print(
        f"{escape(str(template))}: valid ({len(t.actions)} action(s), {len(t.targets)} target(s))"
    )


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
    output: Annotated[PlanFormat, typer.Option("--output", "-o")] = PlanFormat.table,
) -> None:
    """Run one experiment against a scenario. Exit 0 survived, 1 a pod was lost or a
    PodDisruptionBudget violated, 2 bad input."""
    try:
        t = load_template(template)
        sc = load_scenario(scenario)
        at_s = None if at is None else durations.parse_required_seconds(at, field="--at")
        verdict = run_experiment(sc, t, at_s)
    except InputError as exc:
        _fail(exc)
        return
    if output is PlanFormat.json:
        sys.stdout.write(json.dumps(verdict.body, indent=2) + "\n")
    else:
        b = verdict.body
        lead = b["replacementLeadTimeSeconds"]
        out.print(
            f"{'[bold green]survived[/]' if verdict.survived else '[bold red]did not survive[/]'}: "
            f"{_printable(str(b['experiment']))} at {b['atSeconds']:.0f} s, "
            f"{b['targets']} target(s); "
            f"{b['podsLost']} pod(s) lost, {b['pdbViolations']} PDB violation(s); at most "
            f"{b['maxPodsPending']} pods pending, longest wait {b['maxPendingSeconds']:.1f} s; "
            + (
                f"replacement lead time p50 {lead['p50']} s, min {lead['min']} s; "
                if lead["p50"] is not None
                else "no replacement lead time (no node got a 2-minute notice); "
            )
            + f"cost during the experiment ${b['costDuringExperiment']:.4f}"
        )
    for reason in verdict.body["failedTargets"]:
        err.print(f"[bold red]experiment failed:[/] {_printable(reason)}", soft_wrap=True)
    if verdict.body["podsPendingAtEnd"]:
        err.print(
            f"[bold red]{verdict.body['podsPendingAtEnd']} pod(s) still pending[/] when the "
            "verdict window closed",
            soft_wrap=True,
        )
    if not verdict.survived:
        raise typer.Exit(1)


@app.command("install-crds")
def install_crds(
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="Install the CRDs into the cluster of this kubeconfig."),
    ] = None,
    print_: Annotated[
        bool, typer.Option("--print", help="Print the CRDs as YAML instead of applying them.")
    ] = False,
) -> None:
    """Install (server-side apply) the NodePool, NodeClaim and EC2NodeClass CRDs, whose
    schemas are generated from Joiner's manifest models; or print them (deploy/crds/)."""
    from joiner.cluster.kube.crds import crds_yaml
    from joiner.operator.controller import install_crds as apply

    if print_:
        sys.stdout.write(crds_yaml())
        return
    if kubeconfig is None:
        _fail(InputError("give --kubeconfig PATH, or --print", field="--kubeconfig"))
        return
    try:
        for name in apply(kubeconfig):
            out.print(f"customresourcedefinition {name} applied")
    except InputError as exc:
        _fail(exc)


class CloudChoice(StrEnum):
    simulated = "simulated"
    aws = "aws"


@app.command()
def run(
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="The cluster to manage (default: in-cluster)."),
    ] = None,
    cloud: Annotated[
        CloudChoice, typer.Option(help="simulated: kwok Nodes; aws: EC2 (docs/aws.md).")
    ] = CloudChoice.simulated,
    settings: Annotated[
        Path | None, typer.Option("--settings", help="Controller settings (YAML).")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Shadow mode: watch, log and report; write nothing."),
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Append what a --dry-run would write, as JSON lines."),
    ] = None,
    metrics_port: Annotated[int, typer.Option(help="Port of /metrics (0: any).")] = 8080,
    health_port: Annotated[int, typer.Option(help="Port of /healthz and /readyz.")] = 8081,
    identity: Annotated[
        str | None, typer.Option(help="Leader-election identity (default: host-pid).")
    ] = None,
) -> None:
    """Run as a controller on a real cluster: watch pending pods, launch NodeClaims (kwok
    Nodes with simulated capacity), drain through the Eviction API, consolidate, handle
    interruptions. Two replicas elect a leader with a Lease. Exit 0 when stopped, 1 when
    the lease was lost, 2 on bad input."""
    from joiner.operator.controller import ControllerRuntime, load_settings

    _configure_logging(True)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        runtime = ControllerRuntime(
            kubeconfig,
            cloud=cloud.value,
            settings=load_settings(settings),
            dry_run=dry_run,
            metrics_port=metrics_port,
            health_port=health_port,
            report=report.open("a") if report is not None else None,
            identity=identity,
        )
        code = runtime.run()
    except InputError as exc:
        _fail(exc)
        return
    raise typer.Exit(code)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
