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

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from joiner.api.errors import InputError
from joiner.operator.sweep.pool import Finished
from joiner.operator.sweep.spec import SweepPlan

#: Fields of a row that depend on where and when it ran (the rest is reproducible).
TIMING_FIELD = "run"


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


def read_rows(path: Path, *, tolerate_partial_tail: bool = False) -> list[dict[str, Any]]:
    """Every row of a results file, in file order.

    Raises:
        InputError: the file cannot be read, or a line is not a JSON object (a partial last
            line is skipped when ``tolerate_partial_tail``).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the results: {exc.strerror or exc}", file=str(path)) from exc
    lines = text.split("\n")
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        last = i == len(lines) - 1  # no newline after it: the write was cut short
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if last and tolerate_partial_tail:
                continue
            raise InputError(f"line {i + 1} is not JSON: {exc.msg}", file=str(path)) from exc
        if not isinstance(row, dict) or not isinstance(row.get("cellId"), str):
            raise InputError(f"line {i + 1} is not a sweep results row", file=str(path))
        rows.append(row)
    return rows


def existing_rows(path: Path, plan: SweepPlan) -> Existing:
    """The rows ``--resume`` keeps: complete, error-free rows of this sweep's cells.

    Raises:
        InputError: a row belongs to another sweep (a cell this sweep does not have, or one
            whose inputs changed since the row was written).
    """
    if not path.exists():
        return Existing({}, 0)
    cells = {c.cell_id: c for c in plan.cells}
    keep: dict[str, dict[str, Any]] = {}
    rows = read_rows(path, tolerate_partial_tail=True)
    lines = sum(1 for line in path.read_text(encoding="utf-8").split("\n") if line.strip())
    for row in rows:
        cid = row["cellId"]
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
        if row.get("error") is None and row.get("summary") is not None:
            keep[cid] = row
    return Existing(keep, lines - len(keep))


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
    return json.dumps(row, separators=(",", ":")) + "\n"
