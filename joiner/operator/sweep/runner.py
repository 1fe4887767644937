"""Run a sweep's cells on a backend and stream their rows to the results file.

1. Read the results file: without ``resume`` it must not exist (or ``overwrite``); with
   ``resume`` its good rows are kept and only the missing (or failed) cells run.
2. Build one ``CellTask`` per cell to run, in grid order, and hand them to the backend
   (``LocalPool`` or ``RayBackend``), which yields outcomes as cells finish.
3. Write each cell's row as soon as it finishes and report progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from joiner.api.errors import InputError
from joiner.operator.sweep.cell import CellTask
from joiner.operator.sweep.pool import Finished
from joiner.operator.sweep.results import ResultsWriter, build_row, existing_rows
from joiner.operator.sweep.spec import Bundle, SweepPlan, cell_scenario


class Backend(Protocol):
    """Runs cells and yields each one's outcome as it finishes."""

    def run(
        self, tasks: Sequence[CellTask], bundles: Mapping[str, Bundle]
    ) -> Iterator[Finished]: ...


@dataclass(frozen=True, slots=True)
class SweepRun:
    """What a sweep did: cells already in the results, run now, and failed (cell ids)."""

    total: int
    skipped: int
    ran: int
    failed: tuple[str, ...]
    results: Path
    #: Rows ``--resume`` ran again because their summary or metrics had been altered.
    altered: int = 0


def tasks_for(plan: SweepPlan, skip: set[str] | None = None) -> list[CellTask]:
    """The plan's cells not in ``skip``, as worker tasks, in grid order."""
    skip = skip or set()
    return [
        CellTask(c, cell_scenario(plan.variants[c.variant], c), plan.input_digest(c))
        for c in plan.cells
        if c.cell_id not in skip
    ]


def run_sweep(
    plan: SweepPlan,
    results: Path,
    backend: Backend,
    backend_name: str,
    *,
    resume: bool = False,
    overwrite: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_row: Callable[[dict[str, object]], None] | None = None,
) -> SweepRun:
    """Run the cells still missing from ``results`` (see the module doc).

    ``on_start(to_run, already_done)`` is called once before any cell runs; ``on_row`` after
    each row is written.

    Raises:
        InputError: the results file exists without ``resume``/``overwrite``, belongs to
            another sweep, or cannot be written; Ray cannot be reached.
    """
    if results.is_dir():
        raise InputError("the results path is a directory", file=str(results), field="--results")
    keep: dict[str, dict[str, object]] = {}
    rewrite = overwrite
    altered = 0
    if resume:
        existing = existing_rows(results, plan)
        keep = dict(existing.rows)
        rewrite = existing.dropped > 0
        altered = existing.altered
    elif results.exists() and results.stat().st_size > 0 and not overwrite:
        raise InputError(
            "the results file exists; give --resume to run only the missing cells, or --overwrite",
            file=str(results),
            field="--results",
        )
    tasks = tasks_for(plan, set(keep))
    writer = ResultsWriter(results, keep, rewrite)
    if on_start is not None:
        on_start(len(tasks), len(keep))
    failed: list[str] = []
    ran = 0
    try:
        bundles = {name: v.bundle for name, v in plan.variants.items()}
        for done in backend.run(tasks, bundles) if tasks else iter(()):
            row = build_row(plan, done, backend_name)
            writer.write(row)
            ran += 1
            if row["error"] is not None:
                failed.append(done.task.cell.cell_id)
            if on_row is not None:
                on_row(row)
    finally:
        writer.close()
    return SweepRun(len(plan.cells), len(keep), ran, tuple(failed), results, altered)
