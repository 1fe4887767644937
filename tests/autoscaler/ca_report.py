"""The Cluster Autoscaler differential report: JSON, a Markdown table per case, the stack's
timings, and the headline line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffreport
from ca_harness import Result

BEGIN = "<!-- fidelity-autoscaler-report:begin -->"
END = "<!-- fidelity-autoscaler-report:end -->"


def as_json(
    results: list[Result],
    version: str,
    total_s: float,
    setup_s: float,
    timings: list[dict[str, Any]],
) -> dict[str, Any]:
    """The whole run as one JSON document."""
    agree = sum(r.agree for r in results)
    return {
        "clusterAutoscaler": f"cluster-autoscaler {version} (kwok provider)",
        "cases": len(results),
        "agree": agree,
        "agreementPercent": round(100.0 * agree / len(results), 1) if results else 0.0,
        "seconds": round(total_s, 1),
        "setupSeconds": round(setup_s, 1),
        "timings": timings,
        "results": [
            {
                "case": r.case.id,
                "features": list(r.case.features),
                "note": r.case.note,
                "agree": r.agree,
                "differences": r.differences,
                "seconds": round(r.seconds, 1),
                "clusterAutoscaler": r.autoscaler.as_json(),
                "joiner": r.joiner.as_json(),
            }
            for r in results
        ],
    }


def _summary(side: dict[str, Any], case: str) -> str:
    if side.get("error"):
        return "error"
    prefix = f"{case}-"

    def counts(d: dict[str, int]) -> str:
        return " ".join(f"{k.removeprefix(prefix)}={v}" for k, v in d.items() if v) or "none"

    parts = [f"+{counts(side['nodesAdded'])}"]
    for i, ph in enumerate(side["phases"]):
        text = f"p{i + 1}: {counts(ph['nodes'])}"
        if ph["pending"]:
            text += f", pending {counts(ph['pending'])}"
        parts.append(text)
    return "; ".join(parts)


def markdown(doc: dict[str, Any]) -> str:
    """A table with one row per case, the differences, the features each case covers and
    the stack's timings."""
    lines = [
        f"Cluster Autoscaler: {doc['clusterAutoscaler']}. Cases: {doc['cases']}, run time "
        f"{doc['seconds']:.0f} s (of which start-up {doc['setupSeconds']:.0f} s).",
        "",
        "| case | agree | Cluster Autoscaler + kube-scheduler | Joiner's baseline | s |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for r in doc["results"]:
        mark = "yes" if r["agree"] else "**no**"
        lines.append(
            f"| {r['case']} | {mark} | {_summary(r['clusterAutoscaler'], r['case'])} | "
            f"{_summary(r['joiner'], r['case'])} | {r['seconds']:.0f} |"
        )
    lines += diffreport.differences(doc["results"])
    lines += diffreport.feature_table(doc["results"])
    lines += ["", *timing_lines(doc["timings"]), "", headline(doc)]
    return "\n".join(lines) + "\n"


def timing_lines(timings: list[dict[str, Any]]) -> list[str]:
    """The stack's timings per batch and phase: the change to the first node added (scale-up)
    or removed (scale-down), and to stable."""
    lines = [
        "| phase | cases | first node added (s) | first node removed (s) | stable (s) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for t in timings:
        lines.append(
            f"| {t['phase']} | {len(t['cases'])} | {_opt(t['firstNodeAddedSeconds'])} | "
            f"{_opt(t['firstNodeRemovedSeconds'])} | {t['stableSeconds']} |"
        )
    return lines


def _opt(value: Any) -> str:
    return "-" if value is None else f"{value}"


def headline(doc: dict[str, Any]) -> str:
    """``agreement: A/N cases (P%)``."""
    return diffreport.headline(doc)


def page(md: str, path: Path) -> str:
    """The page at ``path`` with the report between its markers replaced by ``md``."""
    return diffreport.splice(md, path, BEGIN, END)
