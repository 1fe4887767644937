"""The local backend: a pool of worker processes that survives the death of a worker.

``concurrent.futures.ProcessPoolExecutor`` fails every pending future once one worker dies
(``BrokenProcessPool``), so the pool is built from ``multiprocessing`` primitives instead:

1. Start up to ``workers`` processes (``spawn``: no state forked from the driver), each with
   its own duplex pipe; a worker loops ``recv task -> run_cell -> send outcome`` and exits on
   ``None`` or when the driver's end of the pipe closes (the driver died).
2. Hand each idle worker the next cell; a variant's bundle is sent to a worker once and
   kept there.
3. Wait on every busy worker's pipe and process sentinel. An outcome frees the worker. A
   sentinel without an outcome means the worker died: its one cell is queued again (up to
   ``retries`` more attempts, then reported as failed) and a fresh worker replaces it.
   No other cell is lost.
4. On exit (done, error or Ctrl-C) every worker is told to stop, then terminated.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from joiner.operator.sweep.cell import CellOutcome, CellTask, run_cell
from joiner.operator.sweep.spec import Bundle
from joiner.sim.gctuning import tune_for_simulation

#: ``on_dispatch(cell_id, worker_pid)``: called when a cell is handed to a worker.
DispatchHook = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class Finished:
    """A cell's final outcome and how many attempts it took (``None``: not known)."""

    task: CellTask
    outcome: CellOutcome
    attempts: int | None


def _worker_main(conn: Connection) -> None:
    """A worker's loop (runs in the child process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver handles Ctrl-C and stops us
    # As the CLI without -v: a cell's warnings are in its summary, not on the terminal.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, force=True)
    tune_for_simulation()  # as the CLI's process runs its simulations
    bundles: dict[str, Bundle] = {}
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        task, bundle = message
        if bundle is not None:
            bundles[task.cell.variant] = bundle
        conn.send(run_cell(task, bundles[task.cell.variant]))


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    variants: set[str] = field(default_factory=set)
    task: CellTask | None = None
    attempt: int = 0


class LocalPool:
    """Run cells on ``workers`` local processes; see the module doc for the algorithm.

    Args:
        workers: process count (>= 1).
        retries: how many times a cell whose worker died is run again.
        on_dispatch: test and progress hook, called in the driver.
    """

    def __init__(
        self, workers: int, *, retries: int = 2, on_dispatch: DispatchHook | None = None
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self.retries = retries
        self.on_dispatch = on_dispatch
        self._ctx = multiprocessing.get_context("spawn")

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=_worker_main, args=(child,), name="joiner-sweep-worker", daemon=True
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def run(self, tasks: Sequence[CellTask], bundles: Mapping[str, Bundle]) -> Iterator[Finished]:
        """Yield each cell's outcome as it finishes (completion order)."""
        queue: deque[tuple[CellTask, int]] = deque((t, 1) for t in tasks)
        idle: list[_Worker] = []
        busy: list[_Worker] = []
        try:
            for _ in range(min(self.workers, len(queue))):
                idle.append(self._start())
            while queue or busy:
                while queue and idle:
                    w = idle.pop()
                    task, attempt = queue.popleft()
                    variant = task.cell.variant
                    bundle = None if variant in w.variants else bundles[variant]
                    w.variants.add(variant)
                    w.task, w.attempt = task, attempt
                    # A worker that died idle fails here; its sentinel then queues the cell again.
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        w.conn.send((task, bundle))
                    busy.append(w)
                    if self.on_dispatch is not None and w.process.pid is not None:
                        self.on_dispatch(task.cell.cell_id, w.process.pid)
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
                for w in list(busy):
                    if w.conn not in ready and w.process.sentinel not in ready:
                        continue
                    outcome = self._receive(w)
                    assert w.task is not None
                    task, attempt = w.task, w.attempt
                    busy.remove(w)
                    w.task = None
                    if outcome is not None:
                        idle.append(w)
                        yield Finished(task, outcome, attempt)
                        continue
                    _reap(w)
                    if queue or attempt <= self.retries:
                        idle.append(self._start())
                    if attempt <= self.retries:
                        queue.appendleft((task, attempt + 1))
                    else:
                        lost = CellOutcome(
                            task.cell.cell_id,
                            None,
                            None,
                            f"the worker process died {attempt} times running this cell "
                            f"(exit code {w.process.exitcode})",
                            0.0,
                            "local",
                        )
                        yield Finished(task, lost, attempt)
        finally:
            for w in idle + busy:
                _stop(w)

    @staticmethod
    def _receive(w: _Worker) -> CellOutcome | None:
        """The worker's outcome, or ``None`` when it died without sending one."""
        try:
            if w.conn.poll():
                outcome = w.conn.recv()
                assert isinstance(outcome, CellOutcome)
                return outcome
        except (EOFError, OSError):
            return None
        return None


def _reap(w: _Worker) -> None:
    w.process.join(timeout=5)
    w.conn.close()


def _stop(w: _Worker) -> None:
    with contextlib.suppress(OSError):
        w.conn.send(None)
    w.process.join(timeout=2)
    if w.process.is_alive():
        w.process.terminate()
        w.process.join(timeout=5)
    w.conn.close()
