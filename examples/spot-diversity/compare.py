"""Judge spot-diversity over ten seeds: narrow.yaml against broad.yaml, sums across seeds.

Run: .venv/bin/python examples/spot-diversity/compare.py  (prints docs/guides/spot.md's table)
"""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

HERE = Path(__file__).resolve().parent
SEEDS = range(1, 11)
#: A reclaim event taking this many nodes or more at once counts as "large".
LARGE = 3


def judge(name: str, seeds: range = SEEDS) -> dict[str, Any]:
    """Sums over ``seeds`` of one scenario's runs (the same market per seed for both)."""
    base = load_scenario(HERE / f"{name}.yaml")
    totals: dict[str, Any] = {
        "nodes": 0,
        "pools": set(),
        "reclaimEvents": 0,
        "largeEvents": 0,
        "largestReclaim": 0,
        "nodesReclaimed": 0,
        "podsRescheduled": 0,
        "podsLost": 0,
        "cost": 0.0,
        "priceEstimated": False,
    }
    for seed in seeds:
        s = SimulationRuntime(replace(base, seed=seed)).run().summary
        events = s["interruptions"]["reclaimEvents"]
        totals["nodes"] += len(s["nodes"])
        totals["pools"].update(f"{n['instanceType']}/{n['zone']}" for n in s["nodes"])
        totals["reclaimEvents"] += len(events)
        totals["largeEvents"] += sum(1 for e in events if e["nodes"] >= LARGE)
        totals["largestReclaim"] = max([totals["largestReclaim"], *(e["nodes"] for e in events)])
        totals["nodesReclaimed"] += sum(e["nodes"] for e in events)
        totals["podsRescheduled"] += s["interruptions"]["podsRescheduledBeforeReclaim"]
        totals["podsLost"] += s["pods"]["lost"]
        totals["cost"] += s["cost"]["total"]
        totals["priceEstimated"] |= any(n["priceEstimated"] for n in s["nodes"])
    totals["pools"] = len(totals["pools"])
    totals["cost"] = round(totals["cost"], 2)
    return totals


ROWS = (
    ("nodes launched", "nodes"),
    ("distinct Spot pools used", "pools"),
    ("reclaim events", "reclaimEvents"),
    (f"events taking {LARGE}+ nodes at once", "largeEvents"),
    ("largest simultaneous reclaim (nodes)", "largestReclaim"),
    ("nodes reclaimed", "nodesReclaimed"),
    ("pods rescheduled before the reclaim", "podsRescheduled"),
    ("pods lost", "podsLost"),
    ("cost (USD, estimated prices)", "cost"),
)


def table(narrow: dict[str, Any], broad: dict[str, Any]) -> str:
    """docs/guides/spot.md's markdown table."""
    lines = ["| 10 seeds x 7 days, summed | narrow (seed Provisioner) | broad NodePool |"]
    lines.append("|---|---:|---:|")
    lines += [f"| {label} | {narrow[key]} | {broad[key]} |" for label, key in ROWS]
    return "\n".join(lines)


if __name__ == "__main__":
    logging.disable(logging.WARNING)  # each run's configuration warnings, twenty times
    sys.stdout.write(table(judge("narrow"), judge("broad")) + "\n")
