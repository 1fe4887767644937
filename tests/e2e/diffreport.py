"""What the two differential reports (tests/fidelity against Karpenter, tests/autoscaler
against Cluster Autoscaler) print alike: the differences, the feature table, the headline,
and splicing a report between markers into a docs page."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def differences(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines listing each disagreeing case's differences (none when all agree)."""
    differing = [r for r in rows if not r["agree"]]
    if not differing:
        return []
    return ["", "Differences:", ""] + [
        f"- `{r['case']}`: {'; '.join(r['differences'])}" for r in differing
    ]


def feature_table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: each feature with the cases that cover it."""
    features: dict[str, list[str]] = {}
    for r in rows:
        for f in r["features"]:
            features.setdefault(f, []).append(r["case"])
    lines = ["", "| feature | cases |", "| --- | --- |"]
    return lines + [f"| {f} | {', '.join(cs)} |" for f, cs in sorted(features.items())]


def headline(doc: dict[str, Any]) -> str:
    """``agreement: A/N cases (P%)``."""
    return f"agreement: {doc['agree']}/{doc['cases']} cases ({doc['agreementPercent']:.1f}%)"


def splice(md: str, page: Path, begin: str, end: str) -> str:
    """The text of ``page`` with what is between ``begin`` and ``end`` replaced by ``md``
    (a page without them gets both)."""
    text = page.read_text() if page.is_file() else f"{begin}\n{end}\n"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{md}{end}{tail}"
