"""The differential report: JSON, a Markdown table per case, and the headline lines (the
generated cases' agreement, then the fixed corpus's as the last line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffreport
from harness import Result

BEGIN = "<!-- fidelity-report:begin -->"
END = "<!-- fidelity-report:end -->"


def _tally(results: list[Result]) -> dict[str, Any]:
    """Plain agreement, and apart from it the cases that agree with Karpenter's plan but
    not its outcome (a kube-scheduler race, harness.Result.race)."""
    agree = sum(r.agree for r in results)
    raced = sum(r.race for r in results)
    return {
        "cases": len(results),
        "agree": agree,
        "agreementPercent": round(100.0 * agree / len(results), 1) if results else 0.0,
        "agreeWithPlanRace": raced,
        "disagree": len(results) - agree - raced,
        "results": _rows(results),
    }


def as_json(
    results: list[Result],
    version: str,
    total_s: float,
    setup_s: float,
    generated: list[Result] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The whole run as one JSON document: the fixed corpus's ``results`` at the top level,
    the generated cases (with their ``seed``) under ``generated`` when there are any."""
    doc = {
        "karpenter": f"sigs.k8s.io/karpenter {version} (kwok provider)",
        **_tally(results),
        "seconds": round(total_s, 1),
        "setupSeconds": round(setup_s, 1),
    }
    if generated:
        doc["generated"] = {"seed": seed, **_tally(generated)}
    return doc


def _rows(results: list[Result]) -> list[dict[str, Any]]:
    return [
        {
            "case": r.case.id,
            "kind": r.case.kind,
            "features": list(r.case.features),
            "agree": r.agree,
            "verdict": r.verdict,
            "differences": r.differences,
            "seconds": round(r.seconds, 1),
            "karpenter": r.karpenter.as_json(),
            "joiner": r.joiner.as_json(),
            **_race_fields(r),
        }
        for r in results
    ]


def _race_fields(r: Result) -> dict[str, Any]:
    """The Karpenter side's plan and bindings, and, for a disagreement with a race, its
    first decision and what differs from it."""
    out: dict[str, Any] = {}
    if r.trace is not None:
        out["karpenterTrace"] = r.trace.as_json()
    if r.first is not None:
        out["firstDecision"] = r.first.as_json()
        out["planDifferences"] = r.plan_differences
    if r.tie_order is not None:
        out["tieOrder"] = r.tie_order
        out["tieDifferences"] = r.tie_differences
    return out


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


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| case | kind | agree | Karpenter + kube-scheduler | Joiner | s |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    marks = {"agree": "yes", "race": "plan (race)"}
    for r in rows:
        mark = marks.get(r.get("verdict", ""), "yes" if r["agree"] else "**no**")
        if "tieOrder" in r:
            mark = f"{'yes' if r['agree'] else mark} (zone ties {r['tieOrder']})"
        lines.append(
            f"| {r['case']} | {r['kind']} | {mark} | {_summary(r['karpenter'], r['kind'])} | "
            f"{_summary(r['joiner'], r['kind'])} | {r['seconds']:.0f} |"
        )
    return lines + diffreport.differences([_explained(r) for r in rows])


def _explained(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its differences prefixed by the race verdict, when there is one."""
    if "planDifferences" not in row:
        return row
    raced = _race_evidence(row["karpenterTrace"])
    first = _summary(row["firstDecision"], row["kind"])
    if row["planDifferences"]:
        note = f"kube-scheduler race ({raced}) but Karpenter's plan differs too ({first}: "
        note += "; ".join(row["planDifferences"]) + ")"
    else:
        note = f"agrees with Karpenter's plan ({first}); kube-scheduler race ({raced})"
    return {**row, "differences": [note, *row["differences"]]}


def _race_evidence(trace: dict[str, Any]) -> str:
    """What shows the race: the displaced pods, and the later NodeClaims that ended empty."""
    parts = []
    if trace["racedPods"]:
        parts.append(", ".join(trace["racedPods"]) + " displaced from the NodeClaim nominated")
    if trace.get("emptiedNodeClaims"):
        parts.append(", ".join(trace["emptiedNodeClaims"]) + " launched later and ended empty")
    return "; ".join(parts)


def markdown(doc: dict[str, Any]) -> str:
    """The fixed corpus's table (one row per case), the features each case covers, then
    the generated cases' table; ends with the two headline lines."""
    lines = [
        f"Karpenter: {doc['karpenter']}. Cases: {doc['cases']}, run time "
        f"{doc['seconds']:.0f} s (of which start-up {doc['setupSeconds']:.0f} s).",
        "",
        *_table(doc["results"]),
    ]
    lines += diffreport.feature_table(doc["results"])
    gen = doc.get("generated")
    if gen:
        lines += [
            "",
            f"Generated cases (tests/fidelity/generator.py), seed {gen['seed']}: reproduce "
            f"with `run.py {_rerun_args(gen)}`.",
            "",
            *_table(gen["results"]),
            "",
            generated_headline(doc),
        ]
    lines += ["", headline(doc)]
    return "\n".join(lines) + "\n"


def _rerun_args(gen: dict[str, Any]) -> str:
    """``run.py``'s arguments that run the generated cases of ``gen`` again: the seed and
    count when they are its first N cases, their ids when some were picked (``--cases``)."""
    ids = [str(r["case"]) for r in gen["results"]]
    if ids == [f"gen-{gen['seed']}-{i}" for i in range(len(ids))]:
        return f"--generated {len(ids)} --seed {gen['seed']}"
    return f"--cases {','.join(ids)}"


def generated_headline(doc: dict[str, Any]) -> str:
    """``generated agreement: A/N cases (P%), seed S`` (then the race tally, ``_raced``;
    empty without generated cases)."""
    gen = doc.get("generated")
    if not gen:
        return ""
    return f"generated {diffreport.headline(gen)}, seed {gen['seed']}{_raced(gen)}"


def headline(doc: dict[str, Any]) -> str:
    """``agreement: A/N cases (P%)`` of the fixed corpus (with the cases that agree with
    Karpenter's plan through a kube-scheduler race, when there are any)."""
    return diffreport.headline(doc) + _raced(doc)


def _raced(tally: dict[str, Any]) -> str:
    """``; R more agree with Karpenter's plan (kube-scheduler race), D disagree`` (empty
    when R is 0)."""
    raced = tally.get("agreeWithPlanRace", 0)
    if not raced:
        return ""
    return (
        f"; {raced} more agree with Karpenter's plan (kube-scheduler race), "
        f"{tally['disagree']} disagree"
    )


def fidelity_page(md: str, page: Path = Path("docs/fidelity.md")) -> str:
    """docs/fidelity.md with the report between its markers replaced by ``md``."""
    return diffreport.splice(md, page, BEGIN, END)
