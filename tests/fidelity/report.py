"""The differential report: JSON, a Markdown table per case, and the headline line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffreport
from harness import Result

BEGIN = "<!-- fidelity-report:begin -->"
END = "<!-- fidelity-report:end -->"


def as_json(results: list[Result], version: str, total_s: float, setup_s: float) -> dict[str, Any]:
    """The whole run as one JSON document."""
    agree = sum(r.agree for r in results)
    return {
        "karpenter": f"sigs.k8s.io/karpenter {version} (kwok provider)",
        "cases": len(results),
        "agree": agree,
        "agreementPercent": round(100.0 * agree / len(results), 1) if results else 0.0,
        "seconds": round(total_s, 1),
        "setupSeconds": round(setup_s, 1),
        "results": [
            {
                "case": r.case.id,
                "kind": r.case.kind,
                "features": list(r.case.features),
                "agree": r.agree,
                "differences": r.differences,
                "seconds": round(r.seconds, 1),
                "karpenter": r.karpenter.as_json(),
                "joiner": r.joiner.as_json(),
            }
            for r in results
        ],
    }


def _summary(side: dict[str, Any], kind: str) -> str:
    if side.get("error"):
        return "error"
    claims = side["nodeClaims"]
    if kind == "provision":
        text = (
            ", ".join(
                f"{c['instanceType']}/{c['capacityType']}/{c['zone'].removeprefix('test-zone-')}"
                for c in claims
            )
            or "no NodeClaim"
        )
        if side["pending"]:
            text += f"; pending {len(side['pending'])}"
        return text
    removed = len(side["removed"])
    repl = ", ".join(f"{c['instanceType']}/{c['capacityType']}" for c in claims)
    reasons = "+".join(side.get("methods") or side["reasons"]) or "none"
    return f"{reasons}: -{removed}" + (f" +[{repl}]" if repl else "")


def markdown(doc: dict[str, Any]) -> str:
    """A table with one row per case, then the features each case covers."""
    lines = [
        f"Karpenter: {doc['karpenter']}. Cases: {doc['cases']}, run time "
        f"{doc['seconds']:.0f} s (of which start-up {doc['setupSeconds']:.0f} s).",
        "",
        "| case | kind | agree | Karpenter + kube-scheduler | Joiner | s |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    for r in doc["results"]:
        mark = "yes" if r["agree"] else "**no**"
        lines.append(
            f"| {r['case']} | {r['kind']} | {mark} | {_summary(r['karpenter'], r['kind'])} | "
            f"{_summary(r['joiner'], r['kind'])} | {r['seconds']:.0f} |"
        )
    lines += diffreport.differences(doc["results"])
    lines += diffreport.feature_table(doc["results"])
    lines += ["", headline(doc)]
    return "\n".join(lines) + "\n"


def headline(doc: dict[str, Any]) -> str:
    """``agreement: A/N cases (P%)``."""
    return diffreport.headline(doc)


def fidelity_page(md: str, page: Path = Path("docs/fidelity.md")) -> str:
    """docs/fidelity.md with the report between its markers replaced by ``md``."""
    return diffreport.splice(md, page, BEGIN, END)
