"""``joiner convert`` and ``joiner lint``: commands over manifest files alone."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from joiner.api.errors import InputError
from joiner.api.grouping import plural
from joiner.api.jsontext import json_text
from joiner.cli.common import (
    ClusterFiles,
    FeatureGatesOption,
    RegionOption,
    Verbose,
    err,
    fail,
    print_warnings,
    region_of,
    scenario_region,
    scenario_reservations,
)


class OutputFormat(StrEnum):
    yaml = "yaml"
    json = "json"


def _dump_yaml(documents: list[Any]) -> str:
    """Multi-document YAML with block style for multi-line strings (user data stays
    readable); PyYAML is imported here, not at start-up."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def literal_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, literal_str)
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, width=100)


def convert(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Manifest files (YAML or JSON).", show_default=False),
    ] = None,
    file_options: Annotated[
        list[Path] | None, typer.Option("--file", "-f", help="Manifest files (repeat).")
    ] = None,
    output: Annotated[OutputFormat, typer.Option("--output", "-o", help="Output format.")] = (
        OutputFormat.yaml
    ),
    region: RegionOption = None,
) -> None:
    """Print the karpenter.sh/v1 and karpenter.k8s.aws/v1 equivalents of the manifests.

    Defaulted requirements become explicit, removed fields become their successors, and what
    v1 requires but the input lacks is a placeholder (annotation joiner.dev/placeholders),
    reported on stderr with the lint warnings. Other documents pass through unchanged.
    Files are given as arguments or with -f, as lint takes them.
    """
    files = [*(paths or []), *(file_options or [])]
    if not files:
        fail(InputError("give manifest files (as arguments or with -f)"))
    from joiner.api.manifests import load_files
    from joiner.api.manifests.to_v1 import check_reloads, convert_files
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.lint import lint_manifests

    try:
        conversion = convert_files(files)
        check_reloads(conversion.documents)
        manifests = load_files(files)
        findings = lint_manifests(manifests, Catalog.load(), region_of(manifests, region))
    except InputError as exc:
        fail(exc)
    if output is OutputFormat.json:
        doc: Any = (
            conversion.documents[0]
            if len(conversion.documents) == 1
            else {"apiVersion": "v1", "kind": "List", "items": conversion.documents}
        )
        sys.stdout.write(json_text(doc, indent=2) + "\n")
    else:
        sys.stdout.write(_dump_yaml(conversion.documents))
    print_warnings([*conversion.warnings, *(str(f) for f in findings)])


def lint(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Manifest files, or one Scenario file (its VPC is used).", show_default=False
        ),
    ] = None,
    file_options: ClusterFiles = None,
    region: RegionOption = None,
    feature_gates: FeatureGatesOption = None,
    verbose: Verbose = False,
) -> None:
    """Report configuration that cannot work as intended. Exit 1 when it warns, 0 when clean,
    2 on bad input. Files are given as arguments or with -f (plan, disrupt and advise take
    them with -f only); --feature-gates as plan takes it (NodeOverlay, StaticCapacity)."""
    files = [*(paths or []), *(file_options or [])]
    if not files:
        fail(InputError("give manifest files (as arguments or with -f) or one Scenario file"))
    from joiner.api.featuregates import FeatureGates
    from joiner.api.featuregates import parse as parse_feature_gates
    from joiner.api.manifests import load_files
    from joiner.api.manifests.yamlio import is_scenario_file
    from joiner.api.overlays import gate_warnings
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.lint import lint_manifests
    from joiner.operator.run_report import repair_tolerations_warning
    from joiner.scheduling.static import gate_warnings as static_gate_warnings
    from joiner.sim.scenario import load_scenario

    catalog = Catalog.load()
    try:
        if len(files) == 1 and is_scenario_file(files[0]):
            sc = load_scenario(files[0], catalog, check_selectors=False)
            gates = sc.feature_gates
            if feature_gates is not None:
                gates = parse_feature_gates(feature_gates, base=gates)
            warnings = list(sc.manifests.warnings)
            warnings += gate_warnings(sc.manifests.nodeoverlays, gates.node_overlay)
            warnings += static_gate_warnings(sc.manifests.nodepools, gates.static_capacity)
            repair = repair_tolerations_warning(sc)
            if repair is not None:
                warnings.append(repair)
            findings = lint_manifests(
                sc.manifests,
                catalog,
                scenario_region(sc, region),
                subnets=sc.subnets,
                security_groups=sc.security_groups,
                reservations=scenario_reservations(sc),
                static_capacity=gates.static_capacity,
            )
        else:
            from joiner.cloudprovider.simulated.vpc import status_vpc

            gates = (
                parse_feature_gates(feature_gates) if feature_gates is not None else FeatureGates()
            )
            manifests = load_files(files)
            where = region_of(manifests, region)
            # A dump's EC2NodeClass status is the cluster's VPC.
            classes, subnets, groups = status_vpc(manifests.nodeclasses, catalog, where)
            manifests.nodeclasses = classes
            warnings = list(manifests.warnings)
            warnings += gate_warnings(manifests.nodeoverlays, enabled=gates.node_overlay)
            warnings += static_gate_warnings(manifests.nodepools, on=gates.static_capacity)
            findings = lint_manifests(
                manifests,
                catalog,
                where,
                subnets=subnets or None,
                security_groups=groups,
                static_capacity=gates.static_capacity,
            )
    except InputError as exc:
        fail(exc)
    all_warnings = [*warnings, *(str(f) for f in findings)]
    print_warnings(all_warnings, verbose=verbose)
    if all_warnings:
        err.print(plural(len(all_warnings), "warning"))
        raise typer.Exit(1)
    err.print("no warnings")
