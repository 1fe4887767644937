"""``joiner plan``: one provisioning round as a dry run over files or a live cluster."""

from __future__ import annotations

import sys
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.jsontext import escape_controls
from joiner.api.plan_output import Plan, PlannedNodeClaim
from joiner.cli.common import (
    ClusterFiles,
    ContextOption,
    FeatureGatesOption,
    KubeconfigOption,
    KwokTypesOption,
    NamespaceOption,
    OutputOption,
    RegionOption,
    TableOrJson,
    Verbose,
    cluster_flag,
    cluster_manifests,
    err,
    fail,
    kwok_types,
    out,
    print_static_deletions,
    print_table,
    print_warnings,
    region_of,
    scenario_region,
    scenario_reservations,
)
from joiner.cli.spotprices import (
    SpotPriceHistoryOption,
    check_not_kwok,
    file_spot_prices,
    parse_instant,
    scenario_spot_prices,
)


class MinValuesPolicy(StrEnum):
    Strict = "Strict"
    BestEffort = "BestEffort"


class Packing(StrEnum):
    karpenter = "karpenter"
    cost_optimal = "cost-optimal"


def plan(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    namespace: NamespaceOption = None,
    region: RegionOption = None,
    output: OutputOption = TableOrJson.table,
    kwok_instance_types: KwokTypesOption = None,
    min_values_policy: Annotated[
        MinValuesPolicy, typer.Option("--min-values-policy", help="Strict or BestEffort.")
    ] = MinValuesPolicy.Strict,
    packing: Annotated[
        Packing | None,
        typer.Option(
            "--packing",
            help="karpenter (Karpenter's packing) or cost-optimal (Joiner's cheaper one); "
            "default: a scenario's spec.settings.packing, else karpenter.",
        ),
    ] = None,
    spot_price_history: SpotPriceHistoryOption = None,
    feature_gates: FeatureGatesOption = None,
    at: Annotated[
        str | None,
        typer.Option(
            help="UTC time the Spot price history is read at (ISO 8601); default: a "
            "Scenario's spec.startTime, else the history's latest row.",
        ),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Dry run of one provisioning round: which NodeClaims would launch, where pending pods
    fit, and which pods cannot be scheduled and why. Exit 0 with a plan, 2 on bad input."""
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.plan import build_plan

    catalog = Catalog.load()
    files = files or []
    try:
        when = parse_instant(at, "--at") if at is not None else None
        gates = parse_feature_gates(feature_gates) if feature_gates is not None else None
        check_not_kwok(spot_price_history, kwok_instance_types is not None)
        live = cluster_flag(kubeconfig, context, namespace) is not None
        if not live and len(files) == 1 and _is_scenario(files[0]):
            from joiner.sim.scenario import load_scenario

            sc = load_scenario(files[0], catalog, check_selectors=False)
            prices = scenario_spot_prices(
                sc, catalog, spot_price_history, when, sc.manifests.warnings
            )
            _warn_unused_at(when, prices, sc.manifests.warnings)
            if feature_gates is not None:
                gates = parse_feature_gates(feature_gates, base=sc.feature_gates)
            result = build_plan(
                sc.manifests,
                catalog,
                scenario_region(sc, region),
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                reservations=scenario_reservations(sc),
                min_values_policy=min_values_policy.value,
                packing=packing.value if packing else sc.packing,
                spot_prices=prices,
                feature_gates=gates or sc.feature_gates,
            )
        else:
            manifests = cluster_manifests(
                files,
                kubeconfig,
                context=context,
                namespace=namespace,
                kwok=kwok_instance_types is not None,
            )
            plan_region = region_of(manifests, region)
            prices = file_spot_prices(
                catalog, plan_region, spot_price_history, when, manifests.warnings
            )
            _warn_unused_at(when, prices, manifests.warnings)
            result = build_plan(
                manifests,
                catalog,
                plan_region,
                min_values_policy=min_values_policy.value,
                kwok_types=kwok_types(kwok_instance_types),
                packing=packing.value if packing else "karpenter",
                spot_prices=prices,
                feature_gates=gates,
            )
    except InputError as exc:
        fail(exc)
    if output is TableOrJson.json:
        sys.stdout.write(escape_controls(result.model_dump_json(indent=2)) + "\n")
        return
    print_warnings(result.warnings, verbose=verbose)
    if result.pricesAt is not None:
        out.print(f"Spot prices: per instance type and zone, at {result.pricesAt}", highlight=False)
    n = len(result.nodeClaims)
    later = Counter(p.node for p in result.placements if p.onNodeClaim)
    if n:
        print_table(
            f"Plan ({result.region}): {plural(n, 'NodeClaim')}",
            _claim_columns(pods=True),
            [_claim_row(c, pods=True, later=later) for c in result.nodeClaims],
        )
    else:
        out.print(f"Plan ({result.region}): no new NodeClaims")
    fitting = [p for p in result.placements if not p.afterLaunch]
    out.print(
        f"new capacity: [bold]${result.costPerHour:.4f}/h[/]; "
        f"{plural(len(fitting), 'pod')} "
        f"{'fits' if len(fitting) == 1 else 'fit'} existing capacity"
        + _kube_bound(result)
        + (f", {len(result.preemptions)} by preemption" if result.preemptions else "")
        + f"; {len(result.unschedulable)} unschedulable"
    )
    _print_on_launch(result)
    _print_static(result)
    for pr in result.preemptions:
        gone = (
            f" ({', '.join(pr.notRecreated)} not recreated: no controller)"
            if pr.notRecreated
            else ""
        )
        out.print(
            f"preemption: {escape(pr.pod)} preempts {escape(', '.join(pr.victims))} on node "
            f"{escape(pr.node)}{escape(gone)}",
            soft_wrap=True,
            highlight=False,
        )
    if result.nominated:
        out.print(
            f"{plural(len(result.nominated), 'pending pod')} already nominated to a node by "
            "preemption (status.nominatedNodeName): not provisioned for",
            highlight=False,
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


def _claim_columns(*, pods: bool) -> list[tuple[str, str]]:
    """The columns of a table of planned NodeClaims (``pods``: with their pod count)."""
    columns = [
        ("NodeClaim", "left"),
        ("NodePool", "left"),
        ("launch", "left"),
        ("zone", "left"),
        ("capacity", "left"),
        ("$/h", "right"),
    ]
    return [*columns, *([("pods", "right")] if pods else []), ("types", "right")]


def _claim_row(c: PlannedNodeClaim, *, pods: bool, later: Counter[str] | None = None) -> list[str]:
    """One planned NodeClaim's row (``_claim_columns``); ``later``: NodeClaim -> the pods
    kube-scheduler binds there once it registers (``Placement.onNodeClaim``), shown as
    ``3+1``."""
    extra = (later or Counter())[c.name]
    count = f"{len(c.pods)}+{extra}" if extra else str(len(c.pods))
    row = [
        c.name,
        c.nodePool,
        c.launch.instanceType,
        c.launch.zone,
        c.launch.capacityType,
        f"{c.launch.pricePerHour:.4f}",
    ]
    return [*row, *([count] if pods else []), str(len(c.instanceTypes))]


def _kube_bound(result: Plan) -> str:
    """``" (N bound by kube-scheduler before Karpenter's round)"``, or empty."""
    n = sum(p.boundBy == "kube-scheduler" and not p.afterLaunch for p in result.placements)
    return f" ({n} bound by kube-scheduler before Karpenter's round)" if n else ""


def _print_on_launch(result: Plan) -> None:
    """The pods Karpenter's round leaves out that kube-scheduler binds once the new
    NodeClaims register (``Placement.afterLaunch``; to one of them, or to an existing node),
    one line."""
    later = [p for p in result.placements if p.afterLaunch]
    if later:
        shown = ", ".join(f"{p.pod} on {p.node}" for p in later[:3])
        more = f" and {len(later) - 3} more" if len(later) > 3 else ""
        out.print(
            f"{plural(len(later), 'pod')} left out of Karpenter's round "
            f"{'is' if len(later) == 1 else 'are'} bound by kube-scheduler once the new "
            f"NodeClaims register (on one of them: the +N in its pods column): "
            f"{escape(shown)}{escape(more)}",
            soft_wrap=True,
            highlight=False,
        )


def _print_static(result: Plan) -> None:
    """The static NodePools' NodeClaims to create (a table) and to delete (one line each)."""
    n = len(result.staticNodeClaims)
    if n:
        print_table(
            f"Static NodePools (spec.replicas): {plural(n, 'NodeClaim')}",
            _claim_columns(pods=False),
            [_claim_row(c, pods=False) for c in result.staticNodeClaims],
        )
        out.print(f"static capacity: [bold]${result.staticCostPerHour:.4f}/h[/]")
    print_static_deletions(result.staticDeletions)


def _warn_unused_at(when: object, prices: object, warnings: list[str]) -> None:
    """``--at`` takes effect only with a Spot price history."""
    if when is not None and prices is None:
        warnings.append(
            "--at has no effect: Spot prices are regional without a Spot price history "
            "(--spot-price-history or a Scenario's spec.cloud.spotPriceHistory)"
        )


def _is_scenario(path: Path) -> bool:
    """``api.manifests.yamlio.is_scenario_file``, imported only for a single file (a
    scenario is planned alone); the simulator is imported only for a Scenario."""
    from joiner.api.manifests.yamlio import is_scenario_file

    return is_scenario_file(path)
