"""``joiner disrupt``: the disruption commands successive passes would take, as a dry run."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.jsontext import escape_controls
from joiner.cli.common import (
    ClusterFiles,
    ContextOption,
    FeatureGatesOption,
    KubeconfigOption,
    KwokTypesOption,
    OutputOption,
    RegionOption,
    TableOrJson,
    Verbose,
    cluster_flag,
    cluster_manifests,
    fail,
    kwok_types,
    out,
    print_static_deletions,
    print_warnings,
    region_of,
    scenario_region,
)
from joiner.cli.explain import ExplainOption, print_explain
from joiner.cli.spotprices import (
    SpotPriceHistoryOption,
    check_not_kwok,
    file_spot_prices,
    parse_instant,
    scenario_spot_prices,
)

if TYPE_CHECKING:
    from joiner.api.outputs import DisruptionPlan


def disrupt(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    region: RegionOption = None,
    output: OutputOption = TableOrJson.table,
    kwok_instance_types: KwokTypesOption = None,
    feature_gates: FeatureGatesOption = None,
    at: Annotated[
        str | None,
        typer.Option(
            help="UTC time the budgets' schedules are evaluated at and a Spot price history "
            "is read at (ISO 8601, default now)."
        ),
    ] = None,
    explain: ExplainOption = None,
    spot_price_history: SpotPriceHistoryOption = None,
    verbose: Verbose = False,
) -> None:
    """Dry run of disruption on a running cluster: the commands successive passes would take
    (Emptiness, Drift, MultiNodeConsolidation, SingleNodeConsolidation), each assumed to
    complete, and why every other node stays. Exit 0 with an answer, 2 on bad input."""
    from joiner.api.featuregates import FeatureGates
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.api.manifests.yamlio import is_scenario_file
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.disrupt import build_disruption_plan
    from joiner.sim.scenario import load_scenario

    try:
        when = _parse_at(at)
        gates = parse_feature_gates(feature_gates) if feature_gates is not None else None
        catalog = Catalog.load()
        files = files or []
        check_not_kwok(spot_price_history, kwok_instance_types is not None)
        live = cluster_flag(kubeconfig, context) is not None
        if not live and len(files) == 1 and is_scenario_file(files[0]):
            sc = load_scenario(files[0], catalog, check_selectors=False)
            prices = scenario_spot_prices(
                sc, catalog, spot_price_history, when, sc.manifests.warnings
            )
            if feature_gates is not None:
                gates = parse_feature_gates(feature_gates, base=sc.feature_gates)
            result = build_disruption_plan(
                sc.manifests,
                catalog,
                scenario_region(sc, region),
                at=when,
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                feature_gates=gates or sc.feature_gates,
                reservations=sc.capacity_reservations,
                explain=explain,
                spot_prices=prices,
            )
        else:
            manifests = cluster_manifests(
                files, kubeconfig, context=context, kwok=kwok_instance_types is not None
            )
            dry_region = region_of(manifests, region)
            prices = file_spot_prices(
                catalog, dry_region, spot_price_history, when, manifests.warnings
            )
            result = build_disruption_plan(
                manifests,
                catalog,
                dry_region,
                at=when,
                feature_gates=gates or FeatureGates(),
                kwok_types=kwok_types(kwok_instance_types),
                explain=explain,
                spot_prices=prices,
            )
    except InputError as exc:
        fail(exc)
    if output is TableOrJson.json:
        unasked = {"explain"} if result.explain is None else None
        text = result.model_dump_json(indent=2, exclude=unasked)
        sys.stdout.write(escape_controls(text) + "\n")
        return
    _print_plan(result, verbose=verbose)


def _print_plan(result: DisruptionPlan, *, verbose: bool) -> None:
    """The human output of ``joiner disrupt``."""
    print_warnings(result.warnings, verbose=verbose)
    if result.pricesAt is not None:
        out.print(f"Spot prices: per instance type and zone, at {result.pricesAt}", highlight=False)
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
    print_static_deletions(result.staticDeletions)
    out.print(_cost_line(result))
    if result.nominated:
        out.print(
            f"{plural(len(result.nominated), 'pending pod')} already nominated to a node by "
            "preemption (status.nominatedNodeName): not provisioned for",
            highlight=False,
        )
    if result.unconsolidatable:
        out.print("left alone:")
    for u in result.unconsolidatable:
        out.print(f"  {escape(u.node)}: {escape(u.reason)}", soft_wrap=True, highlight=False)
    if result.explain is not None:
        print_explain({n: h.model_dump() for n, h in result.explain.items()}, by_pass=True)


def _parse_at(text: str | None) -> datetime:
    """``--at`` as a UTC instant; now when absent (the CLI edge may read the wall clock)."""
    if text is None:
        return datetime.now(UTC)
    return parse_instant(text, "--at")


def _cost_line(result: DisruptionPlan) -> str:
    """The cost before and after, with what the commands save and, when a static NodePool
    scales down, what its deletions save (``savingsPerHour`` counts the commands only, so
    the two add up to the drop)."""
    saving = f"saving ${result.savingsPerHour:.4f}/h"
    if result.staticDeletions:
        dropped = result.costPerHourBefore - result.costPerHourAfter - result.savingsPerHour
        saving = f"commands save ${result.savingsPerHour:.4f}/h, static scale-down ${dropped:.4f}/h"
    return (
        f"cost: [bold]${result.costPerHourBefore:.4f}/h -> ${result.costPerHourAfter:.4f}/h[/] "
        f"({saving})"
    )
