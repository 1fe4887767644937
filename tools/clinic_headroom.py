"""Re-measure ``examples/clinic-headroom``: run every setting, print docs/guides/headroom.md's
table and draw the booking rush's p95 pending against the extra cost per day.

    .venv/bin/python tools/clinic_headroom.py [--out joiner-out/clinic-headroom-table]

writes ``table.md``, ``peak-p95-vs-cost.png`` and each run's ``<scenario>.summary.json`` into
``--out`` (nothing is committed: the repository keeps no images). Each run is a 4-hour
simulation (seconds to a minute each; eight in all).

Extra cost per day: headroom that runs all day (placeholders, a CapacityBuffer) costs the same
at any hour, so it is 6 times the 4-hour run's difference to no headroom; a scheduled
pre-scale acts once a day inside the run, so it is the run's difference itself.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "clinic-headroom"

#: (label, scenario file, True when the setting costs all day).
ROWS: list[tuple[str, str, bool]] = [
    ("none", "no-headroom.yaml", True),
    ("24 placeholders, 24 vCPU", "headroom-24.yaml", True),
    ("48 placeholders, 48 vCPU", "headroom-48.yaml", True),
    ("80 placeholders, 80 vCPU", "scenario.yaml", True),
    (
        "placeholders by cluster-proportional-autoscaler, 1 per 2 cores",
        "headroom-proportional.yaml",
        True,
    ),
    ("CapacityBuffer of 80 x 1 vCPU", "capacity-buffer-80.yaml", True),
    ("pre-scale at 07:50 to ~80 % of the peak", "prescale-150.yaml", False),
    ("pre-scale at 07:50 to the peak", "prescale-peak.yaml", False),
]
HOURS_PER_DAY, RUN_HOURS = 24, 4
TARGET_P95_S = 5.0


@dataclass(frozen=True)
class Row:
    """One setting's figures: the rush's pods and pending seconds, the run's cost (USD) and
    the extra cost per day (None for no headroom)."""

    label: str
    file: str
    pods: int
    p50: float
    p95: float
    max: float
    cost: float
    extra_per_day: float | None


def measure(out: Path) -> list[Row]:
    """Run every row's scenario; return its figures (and keep each summary in ``out``)."""
    from joiner.operator.wiring import SimulationRuntime
    from joiner.sim.scenario import load_scenario

    rows: list[Row] = []
    base_cost = 0.0
    for label, name, all_day in ROWS:
        summary = SimulationRuntime(load_scenario(EXAMPLE / name)).run().summary
        (out / f"{Path(name).stem}.summary.json").write_text(json.dumps(summary, indent=2))
        rush = summary["windows"]["booking-rush"]
        pending = rush["pendingSeconds"]
        cost = float(summary["cost"]["total"])
        extra = None
        if name == "no-headroom.yaml":
            base_cost = cost
        else:
            extra = (cost - base_cost) * (HOURS_PER_DAY / RUN_HOURS if all_day else 1.0)
        rows.append(
            Row(
                label,
                name,
                int(rush["pods"]),
                float(pending["p50"]),
                float(pending["p95"]),
                float(pending["max"]),
                cost,
                extra,
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    """docs/guides/headroom.md's markdown table; the cheapest setting under the target is in
    bold."""
    ok = [r for r in rows if r.extra_per_day is not None and r.p95 < TARGET_P95_S]
    best = min(ok, key=lambda r: r.extra_per_day or 0.0).file if ok else None
    lines = [
        "| headroom | rush pods | p50 pending s | p95 pending s | max s | cost 06:00-10:00 USD "
        "| extra cost per day USD |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        extra = "-" if r.extra_per_day is None else f"{r.extra_per_day:.2f}"
        label, p95 = f"{r.label} (`{r.file}`)", f"{r.p95:.1f}"
        if r.file == best:
            label, p95, extra = f"**{label}**", f"**{p95}**", f"**{extra}**"
        lines.append(
            f"| {label} | {r.pods} | {r.p50:.1f} | {p95} | {r.max:.1f} | {r.cost:.2f} | {extra} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: Path) -> None:
    """p95 pending in the rush against the extra cost per day (no headroom at 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=100)
    for r in rows:
        marker = "s" if r.file.startswith("prescale") else "o"
        ax.scatter([r.extra_per_day or 0.0], [r.p95], marker=marker, s=40, label=r.label)
    ax.axhline(TARGET_P95_S, linestyle="--", linewidth=1, color="grey")
    ax.set_xlabel("extra cost per day, USD (vs no headroom)")
    ax.set_ylabel("p95 pending in the 08:00-08:30 rush, s")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title("clinic-headroom: rush p95 pending vs cost per day (seed 13)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("joiner-out/clinic-headroom-table"))
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = measure(out)
    text = table(rows)
    (out / "table.md").write_text(text)
    plot(rows, out / "peak-p95-vs-cost.png")
    print(text)
    print(f"wrote {out / 'table.md'} and {out / 'peak-p95-vs-cost.png'}")


if __name__ == "__main__":
    main()
