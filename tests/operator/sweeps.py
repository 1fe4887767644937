"""Small sweeps for tests: the example's variants, a few seeds and short runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "seed-spot" / "sweep.yaml"


def small_sweep(
    tmp: Path, *, seeds: int = 2, variants: int = 2, duration: str = "20m", name: str = "small"
) -> Path:
    """A copy of the example sweep with ``variants`` of its variants, ``seeds`` seeds and
    ``duration`` runs (a scenario patch on each variant), written under ``tmp``."""
    doc: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    doc["metadata"]["name"] = name
    spec = doc["spec"]
    spec["scenario"] = str(EXAMPLE.parent / spec["scenario"])
    spec["seeds"] = {"start": 1, "count": seeds}
    spec["variants"] = spec["variants"][:variants]
    for v in spec["variants"]:
        v["scenario"] = {"spec": {"duration": duration}}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def rows(path: Path) -> list[dict[str, Any]]:
    """The results rows, sorted by cell id, without their timing fields."""
    out = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in out:
        r.pop("run")
    return sorted(out, key=lambda r: r["cellId"])


def results_row(variant: str = "a", **extra: Any) -> dict[str, Any]:
    """A valid results row of one cell (cost 1, p95 pending 2 s) whose summary matches its
    digest; ``extra`` replaces fields."""
    import hashlib

    from joiner.operator.sweep.cell import summary_text

    summary = {
        "cost": {"total": 1.0},
        "pods": {"pendingSeconds": {"p95": 2.0}, "lost": 0},
        "interruptions": {"byKind": {}},
    }
    row = {
        "cellId": "a/joiner/x1/seed-1",
        "sweep": "s",
        "variant": variant,
        "policy": "joiner",
        "interruptionRateMultiplier": 1.0,
        "seed": 1,
        "metrics": {"cost": 1.0, "pendingP95Seconds": 2.0, "podsLost": 0, "reclaims": 0},
        "summary": summary,
        "summaryDigest": hashlib.sha256(summary_text(summary).encode()).hexdigest(),
        "error": None,
    }
    return {**row, **extra}
