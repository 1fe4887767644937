"""``joiner install-crds`` and ``joiner run``: controller mode on a real API server."""

from __future__ import annotations

import importlib
import logging
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from joiner.api.errors import InputError
from joiner.api.inputfiles import check_not_input
from joiner.cli.common import check_port, configure_logging, fail, out


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
        fail(InputError("give --kubeconfig PATH, or --print", field="--kubeconfig"))
        return
    try:
        for name in apply(kubeconfig):
            out.print(f"customresourcedefinition {name} applied")
    except InputError as exc:
        fail(exc)


class CloudChoice(StrEnum):
    simulated = "simulated"
    aws = "aws"


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
    metrics_port: Annotated[
        int, typer.Option(help="Port of /metrics (0: any).", callback=check_port)
    ] = 8080,
    health_port: Annotated[
        int, typer.Option(help="Port of /healthz and /readyz (0: any).", callback=check_port)
    ] = 8081,
    identity: Annotated[
        str | None, typer.Option(help="Leader-election identity (default: host-pid).")
    ] = None,
) -> None:
    """Run as a controller on a real cluster: watch pending pods, launch NodeClaims (EC2
    instances with --cloud aws; else kwok Nodes with simulated capacity), drain through the
    Eviction API, consolidate, handle interruptions. Two replicas elect a leader with a
    Lease. Exit 0 when stopped, 1 when the lease was lost, 2 on bad input."""
    from joiner.operator.controller import ControllerRuntime
    from joiner.operator.controller_settings import load_settings

    if report is not None and not dry_run:
        fail(InputError("--report records what a --dry-run would write; add --dry-run"))
    configure_logging(True)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        report_file = None
        if report is not None:
            check_not_input(
                report,
                field="--report",
                inputs=[p for p in (kubeconfig, settings) if p is not None],
            )
            try:
                report_file = report.open("a", encoding="utf-8")
            except OSError as exc:
                raise InputError(
                    f"cannot write the report: {exc.strerror or exc}", file=str(report)
                ) from exc
        loaded = load_settings(settings)
        if cloud.value == "aws" or loaded.interruptionQueue:
            # Before the lease: a missing aws extra is an input error at start-up
            # (MissingExtraError naming joiner[aws]), not a crash once elected.
            importlib.import_module("joiner.cloudprovider.aws")
        runtime = ControllerRuntime(
            kubeconfig,
            cloud=cloud.value,
            settings=loaded,
            dry_run=dry_run,
            metrics_port=metrics_port,
            health_port=health_port,
            report=report_file,
            identity=identity,
        )
        code = runtime.run()
    except InputError as exc:
        fail(exc)
    raise typer.Exit(code)
