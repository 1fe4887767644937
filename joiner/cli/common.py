"""What every command shares: the consoles, the bad-input exit, warnings, shared options.

Kept light on purpose: importing this module must not import the simulation, the cloud
providers or any heavy library, so that ``joiner --version`` and ``--help`` start fast. Each
command module imports what it needs inside its command function.
"""

from __future__ import annotations

import inspect
import logging
import shlex
import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from joiner.api.errors import InputError
from joiner.api.grouping import short_form
from joiner.api.printable import printable as clean
from joiner.cli.safeconsole import CleanFormatter, safe_console, show_warnings_on

if TYPE_CHECKING:
    from collections.abc import Sequence

    from joiner.api.manifests import ManifestSet
    from joiner.api.plan_output import StaticDeletion
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.reservations import CapacityReservation
    from joiner.sim.scenario import Scenario

# No escape sequence or emoji from user text reaches the terminal (cli.safeconsole).
err = safe_console(stderr=True)
out = safe_console()

EXIT_BAD_INPUT = 2


def fail(exc: InputError) -> NoReturn:
    """Print a located input error on stderr and exit with status 2.

    Raises:
        typer.Exit: always, with code 2.
    """
    err.print(
        f"[bold red]error:[/] {printable(str(exc), keep_newlines=True)}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_BAD_INPUT)


def configure_logging(verbose: bool) -> None:
    """INFO-level controller logs on stderr with ``-v``, errors only otherwise."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(CleanFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.INFO if verbose else logging.ERROR, handlers=[handler], force=True
    )
    show_warnings_on(err)


def check_region(region: str) -> None:
    """Reject a region the packaged catalog does not know (``--region``).

    Raises:
        InputError: the region is not in the packaged catalog; the known ones are listed.
    """
    from joiner.cloudprovider.catalog import Catalog

    regions = Catalog.load().regions()
    if region not in regions:
        raise InputError(
            f"unknown region {region!r}; known: {', '.join(regions)}", field="--region"
        )


def region_of(m: ManifestSet, region: str | None) -> str:
    """The region to plan a cluster in: ``--region`` if given (checked against the catalog
    and against the cluster's own region), else the one its nodes, NodeClaims and
    EC2NodeClass status show, else us-east-1.

    Raises:
        InputError: unknown ``--region``, or one the cluster contradicts (both are named).
    """
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.simulated.vpc import cluster_region

    if region is not None:
        check_region(region)
    return cluster_region(m, Catalog.load(), region, "--region")


def program() -> str:
    """How to run this Joiner again from the same shell, for a printed next step (quoted
    for a POSIX shell): ``joiner`` when it was not started by its ``joiner`` script
    (``python -m joiner``, a test) or when the name it was started by, looked up on
    ``PATH``, is the program running; else the path it was started by, as given
    (``.venv/bin/joiner`` before the virtual environment is activated, ``./joiner``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    started = Path(argv0)
    if not argv0 or "joiner" not in (started.name, started.resolve().name):
        return "joiner"
    found = shutil.which(started.name)
    if found is not None and Path(found).resolve() == started.resolve():
        return shlex.quote(started.name)
    return shlex.quote(argv0)


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """User text made safe for a terminal: markup escaped, control characters (escape
    sequences included) replaced by ``?``; line breaks kept with ``keep_newlines``."""
    return escape(clean(text, keep_newlines=keep_newlines).replace("\t", "?"))


def print_warnings(warnings: list[str], *, verbose: bool = False) -> None:
    """Each warning on stderr, prefixed ``warning:``; a grouped warning names its first few
    objects unless ``verbose`` (``-v``)."""
    for w in warnings:
        text = w if verbose else short_form(w)
        err.print(f"[bold yellow]warning:[/] {printable(text)}", highlight=False, soft_wrap=True)


#: The narrowest a prose last column (``print_table(prose_last=True)``) is wrapped to.
PROSE_MIN_WIDTH = 30


def print_static_deletions(deletions: Sequence[StaticDeletion]) -> None:
    """One line per NodeClaim a static NodePool's scale-down deletes (``plan``,
    ``disrupt``)."""
    for d in deletions:
        node = f" (node {d.node})" if d.node is not None and d.node != d.nodeClaim else ""
        out.print(
            f"static scale-down: NodePool {escape(d.nodePool)} deletes {escape(d.nodeClaim)}"
            f"{escape(node)} (more nodes than spec.replicas)",
            soft_wrap=True,
            highlight=False,
        )


def print_table(
    title: str,
    columns: list[tuple[str, str]],
    rows: list[list[str]],
    *,
    console: Console = out,
    prose_last: bool = False,
) -> None:
    """A table whose cells are never cut or folded, at any width.

    ``columns`` are (header, justify) pairs, ``rows`` plain text (escaped here, control
    characters replaced). When the table fits the console (80 columns when stdout is not a
    terminal) it is drawn with a header rule; otherwise each row is printed as a record of
    ``header: value`` lines, so no name is ever broken in the middle. ``prose_last``: the
    last column is sentences, which may wrap at spaces (to ``PROSE_MIN_WIDTH`` columns at
    the narrowest), so the table stays a table where its other columns fit.
    """
    from rich import box
    from rich.table import Table

    cells = [[printable(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, (h, _) in enumerate(columns)]
    if prose_last:
        room = console.width - sum(widths[:-1]) - 2 * (len(columns) - 1)
        widths[-1] = min(widths[-1], max(room, PROSE_MIN_WIDTH))
    if sum(widths) + 2 * (len(columns) - 1) <= console.width:
        table = Table(
            title=printable(title),
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
        )
        for i, ((header, justify), width) in enumerate(zip(columns, widths, strict=True)):
            prose = prose_last and i == len(columns) - 1
            table.add_column(
                header,
                justify=justify,  # type: ignore[arg-type]
                no_wrap=not prose,
                min_width=width,
                max_width=width if prose else None,
            )
        for row in cells:
            table.add_row(*row)
        console.print(table)
        return
    lines = [printable(title)]
    for n, row in enumerate(cells):
        for i, ((header, _), cell) in enumerate(zip(columns, row, strict=True)):
            if i == 0 and not header:  # a row label (e.g. the comparison's metric names)
                lines.append(f"- {cell}")
            else:
                lines.append(f"{'-' if i == 0 else ' '} {header}: {cell}")
        if n + 1 < len(cells):
            lines.append("")
    # One print: a line per call cost rich a render each (20,000 rows took minutes).
    console.print("\n".join(lines), highlight=False, soft_wrap=True)


def cluster_flag(
    kubeconfig: Path | None, context: str | None, namespace: str | None = None
) -> str | None:
    """The first cluster option given (``--kubeconfig``, ``--context``, ``--namespace``), or
    None when none is."""
    given = (("--kubeconfig", kubeconfig), ("--context", context), ("--namespace", namespace))
    return next((flag for flag, value in given if value is not None), None)


def cluster_manifests(
    files: list[Path],
    kubeconfig: Path | None,
    *,
    context: str | None = None,
    namespace: str | None = None,
    kwok: bool = False,
) -> ManifestSet:
    """The manifests to plan over: the files' (``-f``), else the live cluster's, found as
    kubectl finds it (``--kubeconfig``, else ``$KUBECONFIG``, ``~/.kube/config``,
    in-cluster; ``--context``; ``--namespace`` restricts the namespaced kinds read).
    ``kwok``: also read the cluster's KWOKNodeClasses (Karpenter-kwok).

    Raises:
        InputError: files together with a cluster option, no files and no kubeconfig found
            (the places tried are named), a file or object does not load, or the cluster
            cannot be read (the API error is named).
    """
    from joiner.api.manifests import load_files

    flag = cluster_flag(kubeconfig, context, namespace)
    if files:
        if flag is not None:
            raise InputError(f"give either -f FILE or {flag}, not both", field=flag)
        return load_files(files)
    from joiner.cluster.kube.kubeconfig import NoKubeconfigError
    from joiner.operator.live import read_cluster

    try:
        return read_cluster(kubeconfig, context=context, namespace=namespace, kwok=kwok)
    except NoKubeconfigError as exc:
        if flag is not None:
            raise
        raise InputError(f"give manifests with -f FILE, or a cluster: {exc.detail}") from exc


KwokTypesOption = Annotated[
    Path | None,
    typer.Option(
        "--kwok-instance-types",
        help="Karpenter-kwok's instance-types file (JSON): the instance types, capacity, "
        "offerings and prices of KWOKNodeClass NodePools (docs/fidelity.md).",
    ),
]


def kwok_types(path: Path | None) -> list[Any] | None:
    """The instance types of ``--kwok-instance-types``, or None.

    Raises:
        InputError: the file is missing or malformed (named).
    """
    if path is None:
        return None
    from joiner.cloudprovider.kwok import load_instance_types

    return list(load_instance_types(path))


def check_port(value: int) -> int:
    """A TCP port option (``--metrics-port``): 0 (any free port) to 65535.

    Raises:
        typer.BadParameter: out of range (a usage error, exit 2).
    """
    if not 0 <= value <= 65535:
        raise typer.BadParameter(f"{value} is not a port: give 1-65535, or 0 for any free port")
    return value


class JoinerGroup(TyperGroup):
    """The command group: a usage error about an option's value is worded for people
    (typer passes pydantic's "Value error, ..." and "Input should be ..." through), and the
    command list shows each command's first help paragraph as one paragraph (typer's rich
    mode keeps the docstring's line breaks there)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if command.short_help is None and command.help:
                first = inspect.cleandoc(command.help).split("\n\n")[0]
                command.short_help = " ".join(first.split())

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            exc.message = (
                exc.message.replace("Value error, ", "")
                .replace("Input should be", "must be")
                .replace(" is not one of ", " is not one of the choices: ")
            )
            raise


def scenario_region(sc: Scenario, region: str | None) -> str:
    """The Scenario's region, which a given ``--region`` must not contradict (it used to be
    ignored without a word).

    Raises:
        InputError: ``--region`` names another region (both are named).
    """
    if region is not None and region != sc.region:
        raise InputError(
            f"--region {region} contradicts the Scenario, which runs in {sc.region} "
            "(its spec.region, or its cluster's); leave --region out",
            field="--region",
        )
    return sc.region


def scenario_reservations(sc: Scenario) -> tuple[CapacityReservation, ...]:
    """The Scenario's ``spec.cloud.capacityReservations`` that launches may use: all of them
    while its ReservedCapacity gate is on, else none, as ``joiner simulate`` reads them."""
    return sc.capacity_reservations if sc.feature_gates.reserved_capacity else ()


def scenario_or_cluster(
    files: list[Path],
    cluster: tuple[Path | None, str | None, str | None],
    region: str | None,
    catalog: Catalog,
) -> tuple[ManifestSet, str, Scenario | None]:
    """What ``advise`` reads: a Scenario alone (its manifests and region; selectors are not
    checked against its VPC) or manifests / a live cluster in ``region`` (``region_of``).
    ``cluster``: ``--kubeconfig``, ``--context``, ``--namespace``. Returns (manifests,
    region, the scenario or None).

    Raises:
        InputError: as ``cluster_manifests``, ``load_scenario`` and ``region_of``.
    """
    from joiner.api.manifests.yamlio import is_scenario_file
    from joiner.sim.scenario import load_scenario

    kubeconfig, context, namespace = cluster
    if cluster_flag(*cluster) is None and len(files) == 1 and is_scenario_file(files[0]):
        sc = load_scenario(files[0], catalog, check_selectors=False)
        return sc.manifests, scenario_region(sc, region), sc
    m = cluster_manifests(files, kubeconfig, context=context, namespace=namespace)
    return m, region_of(m, region), None


class TableOrJson(StrEnum):
    """``-o`` of the commands that print a table for people or JSON for programs."""

    table = "table"
    json = "json"


Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="List every object a grouped warning names; log decisions."
    ),
]
FeatureGatesOption = Annotated[
    str | None,
    typer.Option(
        "--feature-gates",
        help="Karpenter feature gates, e.g. SpotToSpotConsolidation=true (each gate named "
        "overrides the scenario's settings.featureGates; the others keep it).",
    ),
]
ClusterFiles = Annotated[
    list[Path] | None,
    typer.Option(
        "--file", "-f", help="Manifests (repeat), or one Scenario file (its VPC is used)."
    ),
]
KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Read a live cluster through this kubeconfig instead of files (without -f, "
        "as kubectl: $KUBECONFIG, else ~/.kube/config, else in-cluster).",
    ),
]
ContextOption = Annotated[
    str | None,
    typer.Option("--context", help="The kubeconfig context to use (default: current-context)."),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Read the namespaced objects (pods, workloads, DaemonSets, PDBs, claims) of "
        "this namespace only (default: all namespaces).",
    ),
]
RegionOption = Annotated[
    str | None,
    typer.Option(
        help="Region (default: the cluster's, from its nodes' labels and providerIDs, else "
        "us-east-1; a Scenario's own, which it must not contradict)."
    ),
]
OutputOption = Annotated[TableOrJson, typer.Option("--output", "-o")]
