"""The results file: JSON Lines, one row per cell, appended as cells finish.

A row (``docs/sweeps.md`` lists every field)::

    {"cellId": "spot-only/joiner/x1/seed-3", "sweep": ..., "variant": ..., "policy": ...,
     "interruptionRateMultiplier": 1.0, "seed": 3, "inputDigest": ...,
     "metrics": {"cost": ..., "pendingP95Seconds": ..., "podsLost": ..., "reclaims": ...},
     "summaryDigest": ..., "summary": {...summary.json...}, "error": null,
     "nodePoolsYaml": ..., "run": {"backend": ..., "worker": ..., "wallSeconds": ...,
     "attempts": ...}}

Everything but ``run`` depends only on the cell's inputs: the same cell gives the same row
on any backend and machine. Each row is written with one ``write`` and flushed, so a driver
killed mid-sweep leaves whole rows and at most one partial last line, which ``--resume``
drops (with failed rows) before running the missing cells.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from joiner.api.errors import InputError
from joiner.api.jsontext import json_text
from joiner.api.manifests.yamlio import read_text
from joiner.api.validation import shown
from joiner.operator.sweep.cell import summary_text
from joiner.operator.sweep.pool import Finished
from joiner.operator.sweep.spec import SweepPlan

#: Fields of a row that depend on where and when it ran (the rest is reproducible).
TIMING_FIELD = "run"

#: A results file holds a whole summary per cell: thousands of cells reach hundreds of MiB.
MAX_RESULTS_BYTES = 1024 * 1024 * 1024

#: The figures of ``metrics``, each a finite number in a usable row.
METRIC_NAMES = ("cost", "pendingP95Seconds", "podsLost", "reclaims")


def metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """The figures a sweep report aggregates, from one ``summary.json``: total cost (USD),
    the 95th percentile of pod pending time (s), pods lost, and spot reclaims (2-minute
    interruption notices, ``interruptions.byKind.notice``)."""
    return {
        "cost": summary["cost"]["total"],
        "pendingP95Seconds": summary["pods"]["pendingSeconds"]["p95"],
        "podsLost": summary["pods"]["lost"],
        "reclaims": summary["interruptions"]["byKind"].get("notice", 0),
    }


def build_row(plan: SweepPlan, done: Finished, backend: str) -> dict[str, Any]:
    """The results row of a finished cell (see the module doc)."""
    cell = done.task.cell
    out = done.outcome
    summary = json.loads(out.summary_text) if out.summary_text is not None else None
    return {
        "cellId": cell.cell_id,
        "sweep": plan.name,
        "variant": cell.variant,
        "policy": cell.policy,
        "interruptionRateMultiplier": cell.rate_multiplier,
        "seed": cell.seed,
        "inputDigest": done.task.input_digest,
        "metrics": metrics(summary) if summary is not None else None,
        "summaryDigest": out.summary_digest,
        "summary": summary,
        "error": out.error,
        "nodePoolsYaml": plan.variants[cell.variant].node_pools_yaml,
        TIMING_FIELD: {
            "backend": backend,
            "worker": out.worker,
            "wallSeconds": out.wall_s,
            "attempts": done.attempts,
        },
    }


@dataclass(frozen=True, slots=True)
class Existing:
    """Rows already in a results file: good ones by cell id, and how many lines were
    dropped (failed rows, a partial last line)."""

    rows: dict[str, dict[str, Any]]
    dropped: int
    altered: int = 0


def read_rows(path: Path, *, tolerate_partial_tail: bool = False) -> list[dict[str, Any]]:
    """Every row of a results file, in file order.

    Raises:
        InputError: the file cannot be read, a line is not a JSON object (a partial last
            line is skipped when ``tolerate_partial_tail``), or the rows are of more than
            one sweep.
    """
    text = read_text(path, what="results file", max_bytes=MAX_RESULTS_BYTES)
    return parse_rows(text, path, tolerate_partial_tail=tolerate_partial_tail)


def _cut_short_row(line: str) -> bool:
    """Whether ``line`` may be a row whose write was cut short: it begins as every row
    (a JSON object) does. Any other unparsable last line is not a row being written
    (another file given as the results, NUL blocks), which ``--resume`` would otherwise
    drop and write over."""
    return line.startswith("{")


def parse_rows(
    text: str, path: Path, *, tolerate_partial_tail: bool = False
) -> list[dict[str, Any]]:
    """The rows of a results file's text (see ``read_rows``; ``path`` names it in errors).

    Raises:
        InputError: a line is not a JSON object with a cellId, or nests too deeply; rows of
            more than one sweep (``check_one_sweep``).
    """
    lines = text.split("\n")
    rows = []
    sweeps: dict[object, list[int]] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        last = i == len(lines) - 1  # no newline after it: the write was cut short
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if last and tolerate_partial_tail and _cut_short_row(line):
                continue
            raise InputError(f"line {i + 1} is not JSON: {exc.msg}", file=str(path)) from exc
        except RecursionError as exc:
            raise InputError(f"line {i + 1} nests too deeply", file=str(path)) from exc
        if not isinstance(row, dict) or not isinstance(row.get("cellId"), str):
            raise InputError(f"line {i + 1} is not a sweep results row", file=str(path))
        _check_row_fields(row, i + 1, path)
        sweeps.setdefault(_sweep_key(row.get("sweep")), []).append(i + 1)
        rows.append(row)
    check_one_sweep(sweeps, path)
    return rows


def _sweep_key(value: object) -> object:
    """A row's ``sweep`` as a dictionary key (a malformed value by its text)."""
    return value if value is None or isinstance(value, str) else repr(value)


#: Lines named per sweep in the error for a mixed results file.
_LINES_SHOWN = 5


def check_one_sweep(sweeps: dict[object, list[int]], path: Path) -> None:
    """Refuse a results file whose rows name more than one sweep (``sweep`` field; a row
    without one counts as its own): a report of them would merge unrelated cells.

    ``sweeps`` maps each ``sweep`` value to the (1-based) lines holding it.

    Raises:
        InputError: more than one sweep, naming each with its first lines.
    """
    if len(sweeps) <= 1:
        return
    parts = []
    for name, lines in sweeps.items():
        shown_lines = ", ".join(str(n) for n in lines[:_LINES_SHOWN])
        more = f" and {len(lines) - _LINES_SHOWN} more" if len(lines) > _LINES_SHOWN else ""
        word = "line" if len(lines) == 1 else "lines"
        label = "no sweep name" if name is None else f"sweep {shown(name)}"
        parts.append(f"{label} ({word} {shown_lines}{more})")
    raise InputError(
        f"holds rows of {len(sweeps)} sweeps: {'; '.join(parts)}; a results file holds one "
        "sweep's rows: give each sweep its own file",
        file=str(path),
    )


def existing_rows(path: Path, plan: SweepPlan) -> Existing:
    """The rows ``--resume`` keeps: complete, error-free rows of this sweep's cells whose
    summary matches its digest and whose metrics are those of the summary, all finite
    (``row_problem``); the others are run again and counted in ``Existing.dropped``
    (``Existing.altered`` of them for a digest or metrics that do not match).

    Raises:
        InputError: a row belongs to another sweep (another ``sweep`` name, a cell this
            sweep does not have, or one whose inputs changed since the row was written).
    """
    if not path.exists():
        return Existing({}, 0)
    cells = {c.cell_id: c for c in plan.cells}
    keep: dict[str, dict[str, Any]] = {}
    text = read_text(path, what="results file", max_bytes=MAX_RESULTS_BYTES)
    rows = parse_rows(text, path, tolerate_partial_tail=True)
    lines = sum(1 for line in text.split("\n") if line.strip())
    altered = 0
    for row in rows:
        cid = row["cellId"]
        if row.get("sweep") != plan.name:
            raise InputError(
                f"the results are of sweep {shown(row.get('sweep'))}, not {plan.name!r} "
                f"(cell {cid!r}); write to a new results file",
                file=str(path),
            )
        cell = cells.get(cid)
        if cell is None:
            raise InputError(
                f"the results hold cell {cid!r}, which sweep {plan.name!r} does not have; "
                "write to a new results file",
                file=str(path),
            )
        if row.get("inputDigest") != plan.input_digest(cell):
            raise InputError(
                f"cell {cid!r} was run with other inputs (the sweep, scenario or manifests "
                "changed since); write to a new results file",
                file=str(path),
            )
        if row.get("error") is not None or row.get("summary") is None:
            continue
        if row_problem(row) is not None:
            altered += 1
            continue
        keep[cid] = row
    return Existing(keep, lines - len(keep), altered)


#: The fields every row has, with the JSON types they hold (``build_row``).
_ROW_FIELDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("variant", str),
    ("policy", str),
    ("interruptionRateMultiplier", (int, float)),
    ("seed", int),
)


#: What each of ``_ROW_FIELDS`` must be, in words (default: a number).
_ROW_FIELD_WORDS = {"variant": "string", "policy": "string", "seed": "whole number"}


def one_sweep(rows: list[dict[str, Any]], path: Path) -> str | None:
    """The name of the sweep of ``rows`` (None: the rows name none), all of one sweep.

    Raises:
        InputError: the rows are of more than one sweep (``check_one_sweep``; line numbers
            are row numbers here).
    """
    sweeps: dict[object, list[int]] = {}
    for n, row in enumerate(rows, 1):
        sweeps.setdefault(_sweep_key(row.get("sweep")), []).append(n)
    check_one_sweep(sweeps, path)
    name = rows[0].get("sweep") if rows else None
    return name if isinstance(name, str) else None


def _check_row_fields(row: dict[str, Any], line: int, path: Path) -> None:
    """Raise ``InputError`` naming the line and field when a row lacks one of
    ``_ROW_FIELDS`` or holds another type there."""
    for name, kind in _ROW_FIELDS:
        value = row.get(name)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise InputError(
                f"line {line} ({row['cellId'][:80]!r}) has {name} {value!r:.80}, not a "
                f"{_ROW_FIELD_WORDS.get(name, 'number')}",
                file=str(path),
                field=name,
            )


def usable(row: dict[str, Any]) -> bool:
    """True when a row's figures may be reported and recommended: it ran without error and
    ``row_problem`` finds nothing wrong with it."""
    return failure(row) is None


#: The longest reason ``failure`` gives (an error's last line may be a long message).
MAX_REASON_CHARS = 300


def failure(row: dict[str, Any]) -> str | None:
    """Why a row's cell counts as failed, or None when its figures are usable: the error
    its cell ran into (the last line of a traceback, or the input error), else what
    ``row_problem`` finds; at most ``MAX_REASON_CHARS`` characters."""
    error = row.get("error")
    why: str | None
    if error is not None:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        why = f"the cell failed: {lines[-1] if lines else 'an empty error'}"
    else:
        why = row_problem(row)
    if why is not None and len(why) > MAX_REASON_CHARS:
        return why[: MAX_REASON_CHARS - 3] + "..."
    return why


def row_problem(row: dict[str, Any]) -> str | None:
    """Why a row's figures cannot be used, or None: its summary does not match its
    ``summaryDigest`` (the SHA-256 of the ``summary.json`` text the cell wrote), its
    ``metrics`` are not those of its summary, or a metric is missing, NaN or infinite."""
    summary = row.get("summary")
    if not isinstance(summary, dict):
        return "it has no summary"
    text = summary_text(summary)
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != row.get("summaryDigest"):
        return "its summary does not match its summaryDigest"
    try:
        derived = metrics(summary)
    except (KeyError, TypeError, AttributeError):
        return "its summary lacks the metrics"
    if row.get("metrics") != derived:
        return "its metrics are not those of its summary"
    for name in METRIC_NAMES:
        value = derived.get(name)
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
        ):
            return f"its metric {name} is {value!r}, not a finite number"
    return None


class ResultsWriter:
    """Appends rows to the results file, one flushed write per row."""

    def __init__(self, path: Path, keep: dict[str, dict[str, Any]] | None, rewrite: bool) -> None:
        """Open ``path``: when ``rewrite``, first replace it (atomically) by ``keep``'s rows.

        Raises:
            InputError: the file or its directory cannot be written.
        """
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if rewrite:
                tmp = path.with_name(path.name + ".tmp")
                with tmp.open("w", encoding="utf-8") as f:
                    for row in (keep or {}).values():
                        f.write(_line(row))
                os.replace(tmp, path)
            self._file: IO[str] = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot write the results: {exc.strerror or exc}", file=str(path)
            ) from exc

    def write(self, row: dict[str, Any]) -> None:
        """Append one row and flush it."""
        self._file.write(_line(row))
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _line(row: dict[str, Any]) -> str:
    return json_text(row, separators=(",", ":")) + "\n"
