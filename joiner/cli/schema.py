"""``joiner schema``: the JSON Schemas of Joiner's inputs and outputs (docs/schemas)."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from joiner.api.errors import InputError
from joiner.api.inputfiles import check_output
from joiner.cli.common import fail


class SchemaKind(StrEnum):
    scenario = "scenario"
    plan = "plan"
    summary = "summary"
    advice = "advice"
    disruption = "disruption"
    sweep = "sweep"
    sweep_report = "sweep-report"
    #: The same document, named after its command.
    disrupt = "disrupt"


def schema_text(kind: SchemaKind) -> str:
    """The JSON Schema of a Joiner input or output, as published in docs/."""
    from pydantic import BaseModel

    from joiner.api.outputs import (
        DisruptionPlan,
        Plan,
        SimulationSummary,
        SpotAdvice,
        SweepReport,
    )
    from joiner.operator.sweep.spec import json_schema as sweep_schema
    from joiner.sim.scenario import json_schema

    if kind is SchemaKind.scenario:
        doc = json_schema()
    elif kind is SchemaKind.sweep:
        doc = sweep_schema()
    else:
        models: dict[SchemaKind, type[BaseModel]] = {
            SchemaKind.plan: Plan,
            SchemaKind.summary: SimulationSummary,
            SchemaKind.advice: SpotAdvice,
            SchemaKind.disruption: DisruptionPlan,
            SchemaKind.disrupt: DisruptionPlan,
            SchemaKind.sweep_report: SweepReport,
        }
        doc = models[kind].model_json_schema()
        doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="Which document.")] = SchemaKind.scenario,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of the scenario or sweep file, the plan, disrupt or advise
    output, or
    summary.json."""
    text = schema_text(kind)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        check_output(output, field="--output")
        output.write_text(text, encoding="utf-8")
    except InputError as exc:
        fail(exc)
    except OSError as exc:
        fail(InputError(f"cannot write {output}: {exc}", field="--output"))
