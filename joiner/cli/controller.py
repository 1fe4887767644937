"""``joiner install-crds`` and ``joiner run``: controller mode on a real API server."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from joiner.api.errors import InputError
from joiner.api.inputfiles import check_output
from joiner.cli.common import ContextOption, check_port, cluster_flag, fail, out
from joiner.cli.logformat import LogFormat, configure_run_logging


def install_crds(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            "--kubeconfig",
            help="Install the CRDs into the cluster of this kubeconfig (default, as kubectl: "
            "$KUBECONFIG, else ~/.kube/config, else in-cluster).",
        ),
    ] = None,
    context: ContextOption = None,
    print_: Annotated[
        bool,
        typer.Option(
            "--print",
            help="Print the CRDs as YAML instead of applying them (reads no cluster: not with "
            "--kubeconfig or --context).",
        ),
    ] = False,
) -> None:
    """Install (server-side apply) Karpenter's own NodePool, NodeClaim and EC2NodeClass
    CRDs, at the version Joiner follows; or print them (the chart's crds/)."""
    from joiner.cluster.kube.crds import crds_yaml
    from joiner.operator.controller import install_crds as apply

    try:
        if print_:
            _print_only(kubeconfig, context)
            sys.stdout.write(crds_yaml())
            return
        for name, applied in apply(kubeconfig, context):
            if applied:
                out.print(f"customresourcedefinition {name} applied")
            else:
                out.print(
                    f"customresourcedefinition {name} unchanged: another installer's, "
                    "identical to Joiner's"
                )
    except InputError as exc:
        fail(exc)


def _print_only(kubeconfig: Path | None, context: str | None) -> None:
    """``install-crds --print`` talks to no cluster: a cluster option with it is refused.

    Raises:
        InputError: ``--kubeconfig`` or ``--context`` given with ``--print`` (named).
    """
    flag = cluster_flag(kubeconfig, context)
    if flag is not None:
        raise InputError(
            f"--print writes the CRDs to standard output and talks to no cluster; give "
            f"either --print or {flag}, not both",
            field=flag,
        )


#: The ``--help`` section of the settings that take Karpenter's flag names.
KARPENTER_PANEL = "Karpenter's settings (flag > environment variable > --settings file)"
#: Karpenter's ``LOG_LEVEL`` values as logging levels.
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}


def _karpenter(flag: str, env: str, example: str = "") -> Any:
    """A Karpenter-named option: text, parsed with the settings (``karpenter_options``);
    its environment variable is read there too, so that the file sits under both."""
    more = f" ({example})" if example else ""
    return typer.Option(
        flag, help=f"Karpenter's {flag}{more}; env {env}.", rich_help_panel=KARPENTER_PANEL
    )


def _given(flags: dict[str, str | None]) -> dict[str, str]:
    """The flags given on the command line (None: not given)."""
    return {k: v for k, v in flags.items() if v is not None}


class CloudChoice(StrEnum):
    simulated = "simulated"
    aws = "aws"


def run(
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            "--kubeconfig",
            help="The cluster to manage (default, as kubectl: $KUBECONFIG, else "
            "~/.kube/config, else in-cluster).",
        ),
    ] = None,
    context: ContextOption = None,
    cloud: Annotated[
        CloudChoice | None,
        typer.Option(
            help="Required. aws: EC2 (docs/aws.md); simulated: kwok Nodes, for a kwok "
            "test cluster only."
        ),
    ] = None,
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
        int,
        typer.Option(help="Port of /metrics (0: any).", callback=check_port, envvar="METRICS_PORT"),
    ] = 8080,
    health_port: Annotated[
        int,
        typer.Option(
            "--health-port",
            "--health-probe-port",
            help="Port of /healthz and /readyz (0: any).",
            callback=check_port,
            envvar="HEALTH_PROBE_PORT",
        ),
    ] = 8081,
    identity: Annotated[
        str | None, typer.Option(help="Leader-election identity (default: host-pid).")
    ] = None,
    allow_simulated_nodes: Annotated[
        bool,
        typer.Option(
            "--allow-simulated-nodes",
            help="Let --cloud simulated run on a cluster with Nodes kwok does not manage.",
        ),
    ] = False,
    batch_idle_duration: Annotated[
        str | None, _karpenter("--batch-idle-duration", "BATCH_IDLE_DURATION", "default 1s")
    ] = None,
    batch_max_duration: Annotated[
        str | None, _karpenter("--batch-max-duration", "BATCH_MAX_DURATION", "default 10s")
    ] = None,
    feature_gates: Annotated[
        str | None,
        _karpenter("--feature-gates", "FEATURE_GATES", "e.g. SpotToSpotConsolidation=true"),
    ] = None,
    cluster_name: Annotated[
        str | None,
        _karpenter("--cluster-name", "CLUSTER_NAME", "required with --cloud aws; no default"),
    ] = None,
    cluster_endpoint: Annotated[
        str | None, _karpenter("--cluster-endpoint", "CLUSTER_ENDPOINT")
    ] = None,
    interruption_queue: Annotated[
        str | None,
        _karpenter("--interruption-queue", "INTERRUPTION_QUEUE", "an SQS queue name or URL"),
    ] = None,
    log_level: Annotated[
        str | None, _karpenter("--log-level", "LOG_LEVEL", "debug, info or error; default info")
    ] = None,
    leader_election_name: Annotated[
        str | None, _karpenter("--leader-election-name", "LEADER_ELECTION_NAME")
    ] = None,
    leader_election_namespace: Annotated[
        str | None, _karpenter("--leader-election-namespace", "LEADER_ELECTION_NAMESPACE")
    ] = None,
    disable_leader_election: Annotated[
        bool,
        typer.Option(
            "--disable-leader-election",
            help="Run without a Lease (Karpenter's flag; env DISABLE_LEADER_ELECTION=true).",
            rich_help_panel=KARPENTER_PANEL,
        ),
    ] = False,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="json: one JSON object a line, with Karpenter's keys; text: plain lines.",
        ),
    ] = LogFormat.json,
) -> None:
    """Run as a controller on a real cluster: watch pending pods, launch NodeClaims (EC2
    instances with --cloud aws; else kwok Nodes with simulated capacity), drain through the
    Eviction API, consolidate, handle interruptions. Two replicas elect a leader with a
    Lease. Exit 0 when stopped, 1 when the lease was lost, 2 on bad input: no --cloud,
    --cloud aws without a cluster name (--cluster-name, CLUSTER_NAME or clusterName), or
    --cloud simulated (not a dry run) on a cluster with Nodes kwok does not manage."""
    from joiner.operator.controller import ControllerRuntime
    from joiner.operator.controller_settings import load_settings

    flags = _given(
        {
            "--batch-idle-duration": batch_idle_duration,
            "--batch-max-duration": batch_max_duration,
            "--feature-gates": feature_gates,
            "--cluster-name": cluster_name,
            "--cluster-endpoint": cluster_endpoint,
            "--interruption-queue": interruption_queue,
            "--log-level": log_level,
            "--leader-election-name": leader_election_name,
            "--leader-election-namespace": leader_election_namespace,
            "--disable-leader-election": "true" if disable_leader_election else None,
        }
    )

    if cloud is None:
        fail(
            InputError(
                "required: --cloud aws (EC2 instances) or --cloud simulated (kwok Nodes, for a "
                "kwok test cluster); there is no default",
                field="--cloud",
            )
        )
    if report is not None and not dry_run:
        fail(InputError("--report records what a --dry-run would write; add --dry-run"))
    configure_run_logging(log_format)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        report_file = None
        if report is not None:
            check_output(
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
        loaded = load_settings(settings, flags=flags, env=os.environ, cloud=cloud.value)
        configure_run_logging(log_format, level=LOG_LEVELS[loaded.logLevel])
        if cloud.value == "aws" or loaded.interruptionQueue:
            # Before the lease: a missing aws extra is an input error at start-up
            # (MissingExtraError naming joiner[aws]), not a crash once elected.
            importlib.import_module("joiner.cloudprovider.aws")
        runtime = ControllerRuntime(
            kubeconfig,
            context=context,
            cloud=cloud.value,
            settings=loaded,
            dry_run=dry_run,
            metrics_port=metrics_port,
            health_port=health_port,
            report=report_file,
            identity=identity,
            allow_simulated_nodes=allow_simulated_nodes,
        )
        code = runtime.run()
    except InputError as exc:
        fail(exc)
    raise typer.Exit(code)
