"""``joiner advise``: the Spot risk of each NodePool (pools, reclaims, pods disrupted, cost)."""

from __future__ import annotations

import sys

from rich.markup import escape
from rich.table import Table

from joiner.api.errors import InputError
from joiner.api.jsontext import escape_controls
from joiner.cli.common import (
    ClusterFiles,
    ContextOption,
    FeatureGatesOption,
    KubeconfigOption,
    NamespaceOption,
    OutputOption,
    RegionOption,
    TableOrJson,
    err,
    fail,
    out,
    print_warnings,
    scenario_or_cluster,
    scenario_reservations,
)


def advise(
    files: ClusterFiles = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    namespace: NamespaceOption = None,
    region: RegionOption = None,
    output: OutputOption = TableOrJson.table,
    feature_gates: FeatureGatesOption = None,
) -> None:
    """How risky is each NodePool's Spot setup at the manifests' load: the Spot pools it can
    use, expected reclaims and pods disrupted per month, cost per month and the largest share
    of its nodes in one pool. A Scenario brings its region, VPC, seed, market data and
    feature gates (--feature-gates overrides the gates it names)."""
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.advise import advise as build_advice

    catalog = Catalog.load()
    try:
        m, region, sc = scenario_or_cluster(
            files or [], (kubeconfig, context, namespace), region, catalog
        )
        base = sc.feature_gates if sc is not None else None
        gates = parse_feature_gates(feature_gates, base=base) if feature_gates is not None else base
        if sc is None:
            result = build_advice(m, catalog, region, feature_gates=gates)
        else:
            result = build_advice(
                m,
                catalog,
                region,
                seed=sc.seed,
                hazard=sc.hazard,
                inputs=sc.market,
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                reservations=scenario_reservations(sc),
                feature_gates=gates,
            )
    except InputError as exc:
        fail(exc)
    if not result.nodePools:
        print_warnings(result.warnings)
        fail(
            InputError(
                "no NodePool or Provisioner in the manifests: nothing to advise on (pass the "
                "NodePools with -f, e.g. -f nodepools.yaml -f app.yaml)"
            )
        )
    if output is TableOrJson.json:
        sys.stdout.write(escape_controls(result.model_dump_json(indent=2)) + "\n")
        return
    print_warnings(result.warnings)
    if result.priceEstimated:
        err.print(
            f"[bold yellow]prices are estimated:[/] {escape(result.priceNote or 'see priceNote')}",
            soft_wrap=True,
        )
    star = "*" if result.priceEstimated else ""
    table = Table(title=f"Spot risk per NodePool ({result.region}, seed {result.seed})")
    table.add_column("")
    for a in result.nodePools:
        table.add_column(escape(a.name), justify="right", overflow="fold")
    rows: list[tuple[str, list[str]]] = [
        ("Spot instance types", [str(a.spotInstanceTypes) for a in result.nodePools]),
        ("Spot pools (type x zone)", [str(a.spotPools) for a in result.nodePools]),
        (
            "nodes: running + new (Spot)",
            [
                f"{a.runningNodes} + {a.nodes - a.runningNodes} ({a.spotNodes})"
                for a in result.nodePools
            ],
        ),
        ("largest pool", [a.largestPool or "-" for a in result.nodePools]),
        ("share of nodes in it", [f"{a.largestPoolShare:.0%}" for a in result.nodePools]),
        (
            "expected reclaims / month",
            [f"{a.expectedReclaimsPerMonth:.2f}" for a in result.nodePools],
        ),
        (
            "reclaim events / month",
            [f"{a.expectedReclaimEventsPerMonth:.2f}" for a in result.nodePools],
        ),
        ("pods disrupted / month", [f"{a.podsDisruptedPerMonth:.2f}" for a in result.nodePools]),
        (f"cost / month (USD){star}", [f"{a.costPerMonth:,.2f}" for a in result.nodePools]),
    ]
    for label, cells in rows:
        table.add_row(label, *cells)
    out.print(table)
    if result.priceEstimated:
        out.print("* prices are estimated: " + escape(result.priceNote))
    # The findings are the advice itself: on stdout with the table, so a redirect keeps them.
    for a in result.nodePools:
        for finding in a.findings:
            out.print(
                f"[bold yellow]NodePool {escape(a.name)}:[/] {escape(finding)}", soft_wrap=True
            )
