"""Sweep throughput, printed as JSON: ``make bench``.

Runs the example sweep (``examples/seed-spot/sweep.yaml``: 4 variants x 20 seeds of the seed
scenario) on the local pool with 1 and 2 workers and on a private Ray with 2 CPUs (started
on loopback by the benchmark, its start-up included), and prints cells per second for each,
whether the three results files hold the same rows (sorted by cell id, timing fields
stripped), and the recommendation of ``joiner sweep report --objective`` for docs/guides/sweeps.md's
objective. ``--seeds N`` runs fewer seeds per variant. Never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from joiner.operator.sweep.pool import LocalPool
from joiner.operator.sweep.ray_backend import RayBackend
from joiner.operator.sweep.report import parse_objective, recommend
from joiner.operator.sweep.results import TIMING_FIELD, read_rows
from joiner.operator.sweep.runner import Backend, run_sweep
from joiner.operator.sweep.spec import load_sweep

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "seed-spot" / "sweep.yaml"
OBJECTIVE = "minimise cost subject to p95 pending <= 60 s and pods lost == 0"


def _stripped(path: Path) -> list[dict[str, Any]]:
    rows = read_rows(path)
    for r in rows:
        r.pop(TIMING_FIELD)
    return sorted(rows, key=lambda r: r["cellId"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20, help="seeds per variant (default 20)")
    args = parser.parse_args()
    plan = load_sweep(EXAMPLE)
    seeds = sorted({c.seed for c in plan.cells})[: args.seeds]
    plan = replace(plan, cells=tuple(c for c in plan.cells if c.seed in seeds))
    tmp = Path(tempfile.mkdtemp(prefix="jsb-"))
    backends: list[tuple[str, str, Backend]] = [
        ("local-1-worker", "local", LocalPool(1)),
        ("local-2-workers", "local", LocalPool(2)),
        ("ray-2-cpus", "ray", RayBackend("local", num_cpus=2, temp_dir=str(tmp / "ray"))),
    ]
    runs = []
    files = []
    try:
        for label, name, backend in backends:
            out = tmp / f"{label}.jsonl"
            started = time.perf_counter()
            result = run_sweep(plan, out, backend, name)
            wall = time.perf_counter() - started
            files.append(out)
            runs.append(
                {
                    "backend": label,
                    "cells": result.ran,
                    "failed": len(result.failed),
                    "wallSeconds": round(wall, 2),
                    "cellsPerSecond": round(result.ran / wall, 3),
                }
            )
        first = _stripped(files[0])
        identical = all(_stripped(f) == first for f in files[1:])
        rec = recommend(read_rows(files[1]), parse_objective(OBJECTIVE))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "sweep",
                "sweep": str(EXAMPLE.relative_to(REPO)),
                "variants": len(plan.variants),
                "seedsPerVariant": len(seeds),
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "runs": runs,
                "identicalRowsAcrossBackends": identical,
                "objective": OBJECTIVE,
                "recommended": {"variant": rec.variant, "policy": rec.policy, "cost": rec.value},
                "rejected": rec.rejected,
            },
            indent=2,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
