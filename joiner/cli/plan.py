"""``joiner plan``: one provisioning round as a dry run over files or a live cluster."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from joiner.api.errors import InputError
from joiner.cli.common import (
    ClusterFiles,
    KubeconfigOption,
    KwokTypesOption,
    OutputOption,
    RegionOption,
    TableOrJson,
    check_region,
    cluster_manifests,
    err,
    fail,
    kwok_types,
    out,
    print_warnings,
)


class MinValuesPolicy(StrEnum):
    Strict = "Strict"
    BestEffort = "BestEffort"


def plan(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    region: RegionOption = "us-east-1",
    output: OutputOption = TableOrJson.table,
    kwok_instance_types: KwokTypesOption = None,
    min_values_policy: Annotated[
        MinValuesPolicy, typer.Option("--min-values-policy", help="Strict or BestEffort.")
    ] = MinValuesPolicy.Strict,
) -> None:
    """Dry run of one provisioning round: which NodeClaims would launch, where pending pods
    fit, and which pods cannot be scheduled and why. Exit 0 with a plan, 2 on bad input."""
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.plan import build_plan
    from joiner.sim.scenario import is_scenario_file, load_scenario

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
            check_region(region)
            result = build_plan(
                cluster_manifests(files, kubeconfig, kwok=kwok_instance_types is not None),
                catalog,
                region,
                min_values_policy=min_values_policy.value,
                kwok_types=kwok_types(kwok_instance_types),
            )
    except InputError as exc:
        fail(exc)
    if output is TableOrJson.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    print_warnings(result.warnings)
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
