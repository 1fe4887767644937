"""``joiner import``: a cluster's history from Prometheus as a Scenario directory."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from joiner.api.errors import InputError
from joiner.cli.common import ContextOption, Verbose, err, fail, out, printable, program

if TYPE_CHECKING:
    from joiner.history.series import HistoryWarnings, QueryRange, SeriesSource
    from joiner.history.translate import ClusterObjects


#: The longest range ``joiner import`` reads: 90 days (the replay keeps a value per
#: minute per workload; a century of minutes does not fit in memory).
MAX_RANGE_S = 90 * 86400

#: The coarsest ``--step``: beyond it, nodes and replica changes shorter than a step are
#: mistimed or missed (a node that ended between two 12-hour samples read as running to the
#: end of the range).
MAX_STEP_S = 3600

#: The most evaluation steps of a range (a week at 1s is 604,800; Prometheus is asked in
#: chunks of 11,000).
MAX_STEPS = 1_000_000


def parse_time(value: str, option: str) -> float:
    """An RFC 3339 time (``2025-01-06T00:00:00Z``, an offset such as ``+02:00``) as unix
    seconds.

    Raises:
        InputError: not RFC 3339 or without a time zone, naming ``option``.
    """
    text = value.strip()
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    except (ValueError, IndexError) as exc:
        raise InputError(
            f"{value!r} is not an RFC 3339 time such as 2025-01-06T00:00:00Z", field=option
        ) from exc
    if "T" not in text.upper() or when.tzinfo is None:
        raise InputError(
            f"{value!r} is not an RFC 3339 time: give a date, a time and a zone, e.g. "
            "2026-11-23T00:00:00Z",
            field=option,
        )
    return when.astimezone(UTC).timestamp()


def query_range(start: str, end: str, step: str) -> QueryRange:
    """The range of ``--start``, ``--end`` and ``--step`` (a Go duration).

    Raises:
        InputError: a bad time or duration, ``end`` not after ``start``, a range longer
            than ``MAX_RANGE_S``, a ``step`` under a second or over ``MAX_STEP_S``, or more
            than ``MAX_STEPS`` steps.
    """
    from joiner.api.durations import parse_required_seconds
    from joiner.history.series import QueryRange

    start_s, end_s = parse_time(start, "--start"), parse_time(end, "--end")
    if end_s <= start_s:
        raise InputError(f"--end {end} is not after --start {start}", field="--end")
    if end_s - start_s > MAX_RANGE_S:
        raise InputError(
            f"--start {start} to --end {end} is {(end_s - start_s) / 86400:,.0f} days; "
            f"import at most {MAX_RANGE_S // 86400} days (a week is what the guide reads)",
            field="--end",
        )
    step_s = parse_required_seconds(step, field="--step")
    if step_s < 1:
        raise InputError(f"--step {step} is under a second; give 1s or more", field="--step")
    if step_s > MAX_STEP_S:
        raise InputError(
            f"--step {step} is coarser than {MAX_STEP_S // 60:g}m: the replay would miss the "
            "replica changes and the node lives between samples (the default is 60s, the "
            "scrape interval most clusters use)",
            field="--step",
        )
    rng = QueryRange(start_s, end_s, step_s)
    if rng.steps() > MAX_STEPS:
        raise InputError(
            f"--step {step} makes {rng.steps():,} steps of the range; at most {MAX_STEPS:,} "
            "(give a larger --step)",
            field="--step",
        )
    return rng


def _objects(files: list[Path], kubeconfig: Path | None, context: str | None) -> ClusterObjects:
    """The cluster's objects from ``-f`` dumps, a live cluster, or both (the live
    cluster's objects, then the files': extra manifests such as the NodePools you would
    deploy). The live cluster is read when ``--kubeconfig`` or ``--context`` is given, or
    no ``-f``: found as kubectl finds it (``kube.connect``).

    Raises:
        InputError: no files and no kubeconfig found (the places tried are named), a file
            or object does not load, or the cluster cannot be read.
    """
    from joiner.history.translate import objects_from_documents, objects_from_files

    if kubeconfig is None and context is None and files:
        return objects_from_files(files)
    from joiner.cluster.kube import client as kube
    from joiner.cluster.kube.kubeconfig import NoKubeconfigError
    from joiner.operator.live import cluster_source

    try:
        client = kube.connect(kubeconfig, context=context)
    except NoKubeconfigError as exc:
        if kubeconfig is not None or context is not None:
            raise
        raise InputError(
            f"give the cluster's objects with -f DUMP, or a cluster: {exc.detail}"
        ) from exc
    docs, warnings = kube.list_documents(client, kube.IMPORT_KINDS)
    name = ", ".join([cluster_source(kubeconfig, context), *(str(p) for p in files)])
    if files:
        docs = [*docs, *objects_from_files(files).documents]
    found = objects_from_documents(docs, name)
    found.manifests.warnings[:0] = warnings
    return found


def _source(
    prometheus: str | None,
    from_file: Path | None,
    rng: QueryRange,
    auth: tuple[Path | None, str | None, Path | None, Path | None],
    save: Path | None,
    warnings: HistoryWarnings,
) -> tuple[SeriesSource, str]:
    """The series source and its name for messages.

    Raises:
        InputError: neither or both sources, or auth options that do not go together.
    """
    token, user, password_file, ca = auth
    if (prometheus is None) == (from_file is None):
        raise InputError("give exactly one of --prometheus URL or --from-file PATH")
    if (user is None) != (password_file is None):
        raise InputError(
            "--basic-auth-user and --basic-auth-password-file go together",
            field="--basic-auth-user",
        )
    if from_file is not None:
        if any(a is not None for a in auth) or save is not None:
            raise InputError(
                "auth, --ca-file and --save-responses apply to --prometheus only",
                field="--from-file",
            )
        from joiner.history.files import FileSource

        return FileSource(from_file, rng, warnings=warnings), str(from_file)
    assert prometheus is not None
    from joiner.history.prometheus import PrometheusSource

    basic = None
    if user is not None and password_file is not None:
        from joiner.api.manifests.yamlio import read_text

        basic = (user, read_text(password_file, what="password file").strip("\r\n"))
    source = PrometheusSource(
        prometheus,
        rng,
        bearer_token_file=token,
        basic_auth=basic,
        ca_file=ca,
        save_dir=save,
        warnings=warnings,
    )
    return source, source.shown


def import_(
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Directory to write the Scenario into.")
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="Range start, RFC 3339 (2025-01-06T00:00:00Z).")
    ] = None,
    end: Annotated[str | None, typer.Option(help="Range end, RFC 3339.")] = None,
    step: Annotated[str, typer.Option(help="Query resolution, a Go duration.")] = "60s",
    prometheus: Annotated[
        str | None, typer.Option(help="Prometheus base URL, e.g. http://prometheus:9090.")
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            help="Saved query_range responses (a directory of <query>.json, or one file)."
        ),
    ] = None,
    files: Annotated[
        list[Path] | None,
        typer.Option(
            "--file",
            "-f",
            help="The cluster's objects: kubectl get -o yaml dumps (repeat); with "
            "--kubeconfig, extra manifests (e.g. the NodePools you would deploy).",
        ),
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            help="Read the cluster's objects through this kubeconfig (without -f, as "
            "kubectl: $KUBECONFIG, else ~/.kube/config, else in-cluster)."
        ),
    ] = None,
    context: ContextOption = None,
    bearer_token_file: Annotated[Path | None, typer.Option(help="Bearer token file.")] = None,
    basic_auth_user: Annotated[str | None, typer.Option(help="Basic auth user.")] = None,
    basic_auth_password_file: Annotated[
        Path | None, typer.Option(help="Basic auth password file.")
    ] = None,
    ca_file: Annotated[Path | None, typer.Option(help="CA bundle for Prometheus' TLS.")] = None,
    region: Annotated[
        str | None,
        typer.Option(help="Region of the Scenario (default: the one the nodes' zones are in)."),
    ] = None,
    print_queries: Annotated[
        bool, typer.Option("--print-queries", help="Print the PromQL Joiner runs and exit.")
    ] = False,
    save_responses: Annotated[
        Path | None,
        typer.Option(help="Also save every raw response here, as --from-file reads them."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty --out.")] = False,
    empty_start: Annotated[
        bool,
        typer.Option(
            "--empty-start",
            help="Start every simulated policy from an empty cluster, not from the nodes "
            "and pods the history shows running at --start (start.yaml).",
        ),
    ] = False,
    verbose: Verbose = False,
) -> None:
    """Import a cluster's history from Prometheus (kube-state-metrics series) and its
    objects as a Scenario that replays it: per workload its replicas, and the nodes that
    really ran (the as-run row). Exit 0 with the Scenario written, 2 on bad input."""
    from joiner.history.queries import render_queries

    if print_queries:
        typer.echo(render_queries(), nl=False)
        return
    try:
        if out_dir is None or start is None or end is None:
            raise InputError("give --start, --end and --out (see --help)")
        _run(
            out_dir,
            query_range(start, end, step),
            (prometheus, from_file),
            _objects(files or [], kubeconfig, context),
            (bearer_token_file, basic_auth_user, basic_auth_password_file, ca_file),
            save_responses,
            region,
            force=force,
            verbose=verbose,
            inputs=files or [],
            empty_start=empty_start,
        )
    except InputError as exc:
        fail(exc)
    except OSError as exc:
        # A path given that the system refuses to look at (a name too long, a loop), met
        # by a check before a more precise one could name its option.
        fail(InputError(f"cannot use: {exc.strerror or exc}", file=str(exc.filename or "")))


def _check_save_dir(save: Path, out_dir: Path) -> None:
    """Refuse a ``--save-responses`` that is not a directory, holds a FIFO, a device or a
    directory where a response or the index goes, or overlaps ``--out`` (found before a
    query is read, not after).

    Raises:
        InputError: naming ``--save-responses``.
    """
    from joiner.api.inputfiles import check_output_dir
    from joiner.history.files import INDEX_FILE, response_file_name
    from joiner.history.queries import QUERIES

    names = [INDEX_FILE, *(response_file_name(q.name) for q in QUERIES)]
    check_output_dir(save, field="--save-responses", files=names)
    a, b = save.resolve(), out_dir.resolve()
    if a.is_relative_to(b) or b.is_relative_to(a):
        raise InputError(
            f"overlaps --out {out_dir}; save the responses beside it (e.g. {b.name}-saved)",
            file=str(save),
            field="--save-responses",
        )


def _run(
    out_dir: Path,
    rng: QueryRange,
    sources: tuple[str | None, Path | None],
    objects: ClusterObjects,
    auth: tuple[Path | None, str | None, Path | None, Path | None],
    save: Path | None,
    region: str | None,
    *,
    force: bool,
    verbose: bool,
    inputs: list[Path],
    empty_start: bool = False,
) -> None:
    """Read, translate, write (over none of ``inputs``, the ``-f`` files, nor the other
    files read); print the warnings and the next command. ``empty_start``: no
    ``start.yaml`` (``translate``'s).

    Raises:
        InputError: from any step.
    """
    from joiner.cli.common import check_region, print_warnings
    from joiner.history.series import HistoryWarnings
    from joiner.history.translate import translate
    from joiner.history.writer import check_inputs_clear, check_out_dir, write_scenario

    check_out_dir(out_dir, force=force)
    read = [*inputs, *(p for p in (sources[1], *auth) if isinstance(p, Path))]
    check_inputs_clear(out_dir, read)
    if save is not None:
        _check_save_dir(save, out_dir)
    if region is not None:
        check_region(region)
    warnings = HistoryWarnings()
    source, name = _source(sources[0], sources[1], rng, auth, save, warnings)
    err.print(f"reading {printable(name)} ...", highlight=False)
    imported = translate(
        source,
        name,
        rng,
        objects,
        region=region,
        progress=lambda line: err.print(printable(line), highlight=False),
        warnings=warnings,
        empty_start=empty_start,
    )
    path = write_scenario(imported, out_dir, force=force, inputs=read)
    print_warnings(objects.manifests.warnings, verbose=verbose)
    print_warnings(imported.warnings.render(), verbose=verbose)
    out.print(
        f"wrote {printable(str(path))}: {len(imported.traces)} workload traces, "
        f"{len(imported.nodes)} as-run nodes, {len(imported.pods)} pods; "
        f"{_start_text(imported.start)}",
        highlight=False,
    )
    next_step = f"{program()} simulate {shlex.quote(str(path))}"
    out.print(f"next: {printable(next_step)}", highlight=False, soft_wrap=True)


def _start_text(start: Sequence[Mapping[str, Any]]) -> str:
    """What ``start.yaml`` holds, for the closing line."""
    from joiner.api.grouping import plural

    if not start:
        return "an empty cluster at the start"
    nodes = sum(1 for d in start if d.get("kind") == "Node")
    pods = [d for d in start if d.get("kind") == "Pod"]
    bound = sum(1 for d in pods if (d.get("spec") or {}).get("nodeName"))
    return (
        f"at the start {plural(nodes, 'node')} and {plural(len(pods), 'pod')} "
        f"({bound} bound) in start.yaml"
    )
