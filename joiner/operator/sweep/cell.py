"""One sweep cell: what a worker receives, runs and returns (local process or Ray task).

``run_cell`` is the whole of a worker's job: materialize the variant's bundle with the
cell's scenario (seed, policy, multiplier), load it and run it exactly as ``joiner simulate``
does, and return the summary as the text ``simulate`` writes to ``summary.json``. The text
and its SHA-256 are computed on the worker, so the driver can show that a cell's summary is
byte-identical wherever it ran. An ``InputError`` or a crash inside the simulation is
returned as the cell's error (the driver writes it to the cell's row; ``--resume`` runs the
cell again); only the death of the worker process itself is left to the backend's retry.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any

from joiner.api.jsontext import json_text
from joiner.operator.sweep.spec import Bundle, Cell, dump_scenario


@dataclass(frozen=True, slots=True)
class CellTask:
    """A cell and its scenario document; the bundle travels apart (shared per variant)."""

    cell: Cell
    scenario_doc: dict[str, Any]
    input_digest: str


@dataclass(frozen=True, slots=True)
class CellOutcome:
    """What a worker returns: the summary text and digest, or an error; where and how long."""

    cell_id: str
    summary_text: str | None
    summary_digest: str | None
    error: str | None
    wall_s: float
    worker: str


def summary_text(summary: dict[str, Any]) -> str:
    """The exact text ``joiner simulate`` writes to ``summary.json``."""
    return json_text(summary, indent=2) + "\n"


def run_cell(task: CellTask, bundle: Bundle) -> CellOutcome:
    """Run one cell (see the module doc). Never raises for a failing simulation: the error
    and its traceback come back in ``CellOutcome.error``."""
    from joiner.api.errors import InputError
    from joiner.operator.compare import run_policies
    from joiner.sim.scenario import load_scenario

    started = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    try:
        with bundle.materialized(dump_scenario(task.scenario_doc)) as scenario:
            result = run_policies(load_scenario(scenario))
        text = summary_text(result.summary)
    except InputError as exc:
        return CellOutcome(
            task.cell.cell_id, None, None, f"input error: {exc}", _since(started), worker
        )
    except Exception:  # a bug in the simulation: reported in the row, never swallowed
        return CellOutcome(
            task.cell.cell_id, None, None, traceback.format_exc(), _since(started), worker
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return CellOutcome(task.cell.cell_id, text, digest, None, _since(started), worker)


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)
