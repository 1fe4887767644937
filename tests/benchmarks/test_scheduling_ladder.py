"""``benchmarks/scheduling.py --ladder --repeat N``: rounds one after another, each size's
median run, exponents from the medians (no solve is run here: ``run_child`` is replaced)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "benchmarks"))

import realistic  # noqa: E402
import scheduling as bench  # noqa: E402


def test_repeated_ladder_takes_each_sizes_median(monkeypatch: pytest.MonkeyPatch) -> None:
    times = {1000: iter([0.30, 0.10, 0.20]), 5000: iter([0.9, 1.5, 1.0])}
    calls: list[int] = []

    def fake_child(catalog: str, n: int) -> dict[str, Any]:
        calls.append(n)
        return {"catalog": catalog, "pods": n, "cpuSeconds": next(times[n])}

    monkeypatch.setattr(bench, "run_child", fake_child)
    monkeypatch.setattr(realistic, "calibration_cpu_s", lambda: 0.1)
    out = bench.ladder([1000, 5000], repeat=3)
    assert calls == [1000, 5000] * 3  # rounds, not one size three times over
    assert [r["cpuSeconds"] for r in out["runs"]] == [0.20, 1.0]
    assert out["runs"][0]["cpuSecondsRuns"] == [0.30, 0.10, 0.20]
    assert out["growthExponents"][0]["exponent"] == bench.growth_exponent(
        {"pods": 1000, "cpuSeconds": 0.20}, {"pods": 5000, "cpuSeconds": 1.0}
    )
