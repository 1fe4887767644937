"""``benchmarks/versus_karpenter.py``: the Go benchmark line it reads, the instance types it
gives Joiner (Karpenter's fake ones) and Joiner's solve of a pod dump in Karpenter's run's
format. Karpenter's side needs Go and minutes, so it is not run here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from joiner.api import labels, quantity

REPO = Path(__file__).resolve().parents[2]
# Appended, not put first: a module of benchmarks/ must not shadow one of the test paths
# for every later ``import run`` in the suite.
sys.path.append(str(REPO / "benchmarks"))

import scheduling as bench  # noqa: E402
import versus_karpenter as vk  # noqa: E402

LINE = (
    "BenchmarkJoinerMix-2   \t       1\t 805606341 ns/op\t         5.000 nodes\t      2000 pods"
    "\t      2582 pods/sec\t         0.8494 setup+solve-cpu-s/op\t         0.01740 setup-cpu-s"
)


def test_metrics_of_the_benchmark_line() -> None:
    m = vk._metrics(f"goos: linux\n{LINE}\nPASS\n")
    assert m["ns/op"] == 805606341
    assert m["nodes"] == 5 and m["pods"] == 2000
    assert m["setup+solve-cpu-s/op"] == pytest.approx(0.8494)
    assert m["setup-cpu-s"] == pytest.approx(0.0174)


def test_fake_types_are_karpenters() -> None:
    types = bench.karpenter_fake_types(3)
    assert [t.name for t in types] == ["fake-it-0", "fake-it-1", "fake-it-2"]
    t = types[2]
    assert t.capacity == {quantity.CPU: 3000, quantity.MEMORY: 6 * quantity.GIB, quantity.PODS: 30}
    assert t.allocatable[quantity.CPU] == 2900
    assert t.allocatable[quantity.MEMORY] == 6 * quantity.GIB - 10 * quantity.MIB
    assert sorted((o.zone, o.capacity_type) for o in t.offerings) == sorted(bench.FAKE_OFFERINGS)
    prices = {o.price_per_hour for o in t.offerings}
    assert len(prices) == 1 and prices.pop() == pytest.approx(0.3 + 0.6 * quantity.GIB / 1e9)


def _pod(kind: str, value: str, key: str = labels.ZONE) -> dict[str, object]:
    out: dict[str, object] = {
        "labels": {"my-label": value},
        "cpuMilli": 500,
        "memoryBytes": 256 * quantity.MIB,
        "kind": kind,
    }
    if kind != "plain":
        out["topologyKey"] = key
        out["selector"] = {"my-label": value}
    return out


def test_joiner_solves_a_dump(tmp_path: Path) -> None:
    pods = [_pod("plain", "a")] * 4 + [_pod("spread", "b")] * 6 + [_pod("affinity", "c")] * 3
    pods += [_pod("anti-affinity", "d", labels.HOSTNAME)] * 3
    dump = tmp_path / "pods.json"
    dump.write_text(json.dumps(pods))
    row = vk.joiner_solve(dump)
    assert row["scheduled"] == len(pods) and row["unschedulable"] == 0
    # Three pods that repel each other per host need three NodeClaims at least.
    assert row["nodes"] >= 3
    assert row["costPerHour"] > 0 and row["solveCpuSeconds"] >= 0
