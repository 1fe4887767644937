"""Writes an imported history as a Scenario directory.

Layout (every path relative to the directory, every list sorted, so the same history
always gives the same bytes)::

    scenario.yaml            kind: Scenario; compare [as-run, joiner, cluster-autoscaler]
    objects.yaml             the cluster's objects to simulate (a copy, cleaned)
    start.yaml               the cluster at the start: its Nodes and Pods (none: not written)
    traces/<ns>/<kind>.<name>.csv   replicas per minute (minute,value) per workload
    as-run/nodes.csv         the nodes that really ran
    as-run/pods.csv          the pods' creation and scheduling times

Each trace replays as ``trace: {targetPerReplica: 1, min: 0, max: <its largest value>}``:
the workload wants exactly the recorded replicas each minute (``joiner.sim.workloads``,
``Trace.replicas_at``). Nothing is written outside the directory.
"""

from __future__ import annotations

import functools
import json
import math
import re
import urllib.parse
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from joiner.api.errors import InputError
from joiner.api.inputfiles import check_output, check_output_dir
from joiner.api.manifests.models_base import MAX_REPLICAS
from joiner.history.translate import Imported, WorkloadTrace
from joiner.sim.asrun_files import NODES_HEADER, PODS_HEADER, AsRunNode, AsRunPod

#: libyaml's emitter when PyYAML has it (the same YAML, several times faster).
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def check_out_dir(out: Path, *, force: bool) -> None:
    """Refuse a directory that is not empty (unless ``force``) or a path that is not a
    directory (``check_output_dir``).

    Raises:
        InputError: ``out`` is a file, a FIFO or a device, or a non-empty directory without
            ``force``.
    """
    check_output_dir(out, field="--out")
    try:
        if out.is_dir() and any(out.iterdir()) and not force:
            raise InputError(
                "is not empty; give an empty or new directory, or --force to overwrite",
                file=str(out),
                field="--out",
            )
    except OSError as exc:  # a name too long, a directory that cannot be listed
        raise InputError(
            f"cannot use: {exc.strerror or exc}", file=str(out), field="--out"
        ) from exc


#: What the writer writes whatever the history holds (traces go under ``traces/``).
FIXED_FILES = ("scenario.yaml", "objects.yaml", "start.yaml", "as-run/nodes.csv", "as-run/pods.csv")


def check_inputs_clear(out: Path, inputs: Iterable[Path]) -> None:
    """Before anything is read: refuse an ``--out`` whose fixed files, or whose ``traces/``,
    would be written over or into one of ``inputs`` (a directory of saved responses, a
    dump), so a week's download is not wasted on a run that cannot write.

    Raises:
        InputError: as ``write_scenario`` would after the history was read.
    """
    root = out.resolve()
    given = [p for p in inputs if str(p) != "-"]
    _check_not_inputs([(rel, root / rel) for rel in FIXED_FILES], given)
    traces = root / "traces"
    for inp in given:
        if inp.resolve().is_relative_to(traces):
            raise InputError(
                f"would write traces/ over or into the input {inp}; give another --out",
                file=str(inp),
                field="--out",
            )


def file_part(name: str) -> str:
    """``name`` as one path component: characters outside ``[A-Za-z0-9._-]`` (a ``/``,
    a control character, non-ASCII) percent-encoded, and ``.``/``..``/empty spelled out,
    so an object's name can neither leave the directory nor collide with another's."""
    part = urllib.parse.quote(name, safe="")
    if part in ("", ".", ".."):
        return "%2E" * len(part) or "%00"
    return part


def trace_path(tr: WorkloadTrace) -> str:
    """The trace file of a workload, relative to the directory:
    ``traces/<namespace>/<kind>.<name>.csv`` (a Kubernetes name as it is; anything else
    through ``file_part``)."""
    namespace, _, name = tr.key.partition("/")
    return f"traces/{file_part(namespace)}/{tr.kind.lower()}.{file_part(name)}.csv"


def scenario_name(out: Path) -> str:
    """A metadata name from the directory's name (characters outside ``[A-Za-z0-9._-]``
    become ``-``; at most 63), or ``imported``."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", out.resolve().name)[:63].lstrip("._-")
    return name or "imported"


def _check_not_inputs(paths: Iterable[tuple[str, Path]], inputs: Iterable[Path]) -> None:
    """Raise ``InputError`` when a file to write is one of ``inputs`` or inside an input
    directory (``--force`` into the directory holding the dump would overwrite it)."""
    resolved = [(given, given.resolve()) for given in inputs if str(given) != "-"]
    for rel, path in paths:
        for given, inp in resolved:
            clash = path.is_relative_to(inp) if inp.is_dir() else path == inp
            if clash or (path.exists() and inp.exists() and path.samefile(inp)):
                raise InputError(
                    f"would write {rel} over or into the input {given}; give another --out",
                    file=str(given),
                    field="--out",
                )
        check_output(path, field="--out")  # a FIFO, a device; any other file read


def write_scenario(
    imported: Imported, out: Path, *, force: bool = False, inputs: Iterable[Path] = ()
) -> Path:
    """Write ``imported`` into ``out`` (module docstring) and return the Scenario's path.
    ``inputs``: the files and directories read (nothing is written over or into them).

    Raises:
        InputError: as ``check_out_dir``; a path outside ``out`` or over an input.
    """
    check_out_dir(out, force=force)
    files: dict[str, str] = {
        "objects.yaml": yaml.dump_all(list(imported.documents), Dumper=_DUMPER, sort_keys=True),
        "as-run/nodes.csv": _csv(NODES_HEADER, [_node_row(n) for n in imported.nodes]),
        "as-run/pods.csv": _csv(PODS_HEADER, [_pod_row(p) for p in imported.pods]),
    }
    if imported.start:
        files["start.yaml"] = yaml.dump_all(list(imported.start), Dumper=_DUMPER, sort_keys=True)
    for tr in imported.traces:
        files[trace_path(tr)] = _trace_csv(tr.values)
    files["scenario.yaml"] = _scenario_yaml(imported, out)
    root = out.resolve()
    paths = {rel: (root / rel).resolve() for rel in files}
    for rel, path in sorted(paths.items()):
        # Every path checked before the first is written: no half-written directory.
        if not path.is_relative_to(root):
            raise InputError(f"refusing to write {rel!r} outside the directory", file=str(out))
    _check_not_inputs(sorted(paths.items()), inputs)
    for rel, text in sorted(files.items()):
        try:
            paths[rel].parent.mkdir(parents=True, exist_ok=True)
            paths[rel].write_text(text, encoding="utf-8", newline="")
        except OSError as exc:
            raise InputError(
                f"cannot write {rel}: {exc.strerror or exc}", file=str(out), field="--out"
            ) from exc
    return out / "scenario.yaml"


def _scenario_yaml(imported: Imported, out: Path) -> str:
    rng = imported.range
    start = datetime.fromtimestamp(rng.start_s, UTC)
    spec: dict[str, Any] = {}
    if imported.region:
        spec["region"] = imported.region
    spec["startTime"] = start.isoformat().replace("+00:00", "Z")
    spec["duration"] = _duration(rng.end_s - rng.start_s)
    spec["manifests"] = ["objects.yaml", "start.yaml"] if imported.start else ["objects.yaml"]
    if imported.cloud is not None:
        spec["cloud"] = dict(imported.cloud)
    spec["compare"] = ["as-run", "joiner", "cluster-autoscaler"]
    spec["asRun"] = {"nodes": "as-run/nodes.csv", "pods": "as-run/pods.csv"}
    workloads: list[dict[str, Any]] = []
    for tr in imported.traces:
        top = max(tr.values, default=0.0)
        workloads.append(
            {
                "deployment": tr.key,
                "trace": {
                    "file": trace_path(tr),
                    "targetPerReplica": 1,
                    "min": 0,
                    "max": min(MAX_REPLICAS, max(1, math.ceil(top))),
                },
            }
        )
    for key, run_s in sorted(imported.cron_run_s.items()):
        workloads.append({"cronJob": key, "runFor": f"{round(run_s)}s"})
    if workloads:
        spec["workloads"] = workloads
    doc = {
        "apiVersion": "joiner.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": scenario_name(out)},
        "spec": spec,
    }
    head = (
        f"# Imported by joiner import: {spec['startTime']} for {spec['duration']}.\n"
        f"# Run: joiner simulate {_comment_path(out / 'scenario.yaml')}\n"
    )
    return head + yaml.safe_dump(doc, sort_keys=False)


def _comment_path(path: Path) -> str:
    """``path`` for a YAML comment: as it is when printable ASCII, else JSON-quoted with
    ``\\u`` escapes (a newline in ``--out`` ended the comment and wrote YAML; a control or
    a Unicode line-break character would too, or make the file unloadable)."""
    text = str(path)
    if text.isascii() and text.isprintable():
        return text
    return json.dumps(text)


def _duration(seconds: float) -> str:
    """A Go duration for the range: whole hours, else whole minutes, else seconds."""
    s = math.ceil(seconds - 1e-9)
    if s % 3600 == 0:
        return f"{s // 3600}h"
    if s % 60 == 0:
        return f"{s // 60}m"
    return f"{s}s"


def _num(v: float) -> str:
    """A number as a CSV cell: an integer without ``.0``, else up to 3 decimals."""
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _trace_csv(values: tuple[float, ...]) -> str:
    """``minute,value`` rows (a week is 10,080 of them: each distinct value is formatted
    once)."""
    text: dict[float, str] = {}
    for v in set(values):
        text[v] = _num(v)
    cells = map(text.__getitem__, values)
    rows = map(",".join, zip(_minutes(len(values)), cells, strict=False))
    return "minute,value\n" + "\n".join(rows) + "\n"


@functools.lru_cache(maxsize=4)
def _minutes(n: int) -> tuple[str, ...]:
    """``("0", "1", ..., str(n - 1))``, kept per ``n`` (every trace of an import has the
    same length)."""
    return tuple(str(m) for m in range(n))


def _node_row(n: AsRunNode) -> list[str]:
    return [
        n.node,
        n.instance_type,
        n.capacity_type,
        n.zone,
        n.node_pool,
        _num(n.start_s),
        "" if n.end_s is None else _num(n.end_s),
    ]


def _pod_row(p: AsRunPod) -> list[str]:
    return [
        p.namespace,
        p.pod,
        _num(p.created_s),
        "" if p.scheduled_s is None else _num(p.scheduled_s),
    ]


def _csv(header: tuple[str, ...], rows: list[list[str]]) -> str:
    """The CSV text of ``rows`` under ``header``, one ``\\n``-ended line per row, each cell
    as ``csv_cell`` writes it: the file reads back (``joiner.sim.asrun_files``) to the
    names and label values the cluster had, control characters included."""
    lines = [",".join(map(csv_cell, row)) + "\n" for row in [list(header), *rows]]
    return "".join(lines)


def csv_cell(text: str) -> str:
    """One CSV cell (RFC 4180): as it is when it is printable and holds no comma or quote;
    else quoted (quotes doubled), so that a name holding a carriage return, a line break,
    ESC or a separator stays one cell of one row (the csv module's writer left a lone
    carriage return unquoted, and a reader took it for the end of the row). The reader
    strips spaces and tabs around a cell, quoted or not."""
    if text.isprintable() and not any(c in text for c in ',"'):
        return text
    return '"' + text.replace('"', '""') + '"'
