"""``--explain NODE`` of ``joiner disrupt`` and ``joiner simulate``: why a node is still
there, as the table of its disruption verdict changes (``controllers.disruption.history``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from joiner.api.durations import format_seconds
from joiner.cli.common import out, print_table

ExplainOption = Annotated[
    list[str] | None,
    typer.Option(
        "--explain",
        metavar="NODE",
        help="Print NODE's disruption verdict history: when each pass's verdict changed, "
        "the method and why the node was kept (or the command that took it). Repeat it, or "
        "join names with commas, for several nodes; '*' for every node. It is the explain "
        "field of disrupt's -o json and of simulate's summary.json.",
    ),
]


def _when(entry: Mapping[str, Any], by_pass: bool) -> str:
    if by_pass:
        return str(entry["passNumber"])
    return format_seconds(entry["atSeconds"]) if entry["atSeconds"] > 0 else "0s"


def print_explain(histories: Mapping[str, Mapping[str, Any]], *, by_pass: bool = False) -> None:
    """One table per node of ``histories`` (node name -> ``NodeVerdictHistory`` as a dict):
    time (or, ``by_pass``, the pass number: a dry run's passes share one instant), method,
    verdict kind (or outcome) and the reason in English."""
    for node, history in histories.items():
        entries = history["entries"]
        rows = [
            [
                _when(e, by_pass),
                e["method"],
                e["kind"] or e["outcome"],
                e["message"],
            ]
            for e in entries
        ]
        title = f"{node}: disruption verdict changes"
        first = ("pass" if by_pass else "time", "right")
        print_table(
            title,
            [first, ("method", "left"), ("verdict", "left"), ("reason", "left")],
            rows,
            prose_last=True,
        )
        if history["omitted"]:
            out.print(
                f"({history['omitted']} earlier changes not kept)",
                highlight=False,
            )
