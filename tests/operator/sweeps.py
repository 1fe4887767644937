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
