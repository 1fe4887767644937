"""Tables a person reads stay whole at 80 columns and when stdout is not a terminal."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app

DUMP = Path(__file__).resolve().parents[1] / "fixtures" / "eks-cluster" / "dump.yaml"
runner = CliRunner()


def _names_whole(output: str, names: set[str]) -> None:
    words = set(output.replace(";", " ").split())
    for name in names:
        assert name in words, f"{name!r} is broken or missing in:\n{output}"


def test_plan_table_at_80_columns_keeps_every_name_whole() -> None:
    plan = json.loads(runner.invoke(app, ["plan", "-f", str(DUMP), "-o", "json"]).stdout)
    names = {
        v
        for c in plan["nodeClaims"]
        for v in (c["name"], c["nodePool"], c["launch"]["instanceType"], c["launch"]["zone"])
    }
    result = runner.invoke(app, ["plan", "-f", str(DUMP)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    _names_whole(result.stdout, names)


def test_a_table_too_wide_for_the_screen_becomes_records(tmp_path: Path) -> None:
    long_pool = "general-purpose-compute-for-the-booking-backend-team"
    text = DUMP.read_text().replace("name: default\n", f"name: {long_pool}\n")
    text = text.replace("karpenter.sh/nodepool: default", f"karpenter.sh/nodepool: {long_pool}")
    text = text.replace("values:\n      - default", f"values:\n      - {long_pool}")
    dump = tmp_path / "dump.yaml"
    dump.write_text(text)
    result = runner.invoke(app, ["plan", "-f", str(dump)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    _names_whole(result.stdout, {long_pool, "us-east-1a"})
    assert f"NodePool: {long_pool}" in result.stdout


def test_grouped_warnings_name_the_first_few_and_v_lists_all(tmp_path: Path) -> None:
    services = "".join(
        f"---\napiVersion: v1\nkind: Service\nmetadata: {{name: s{i}, namespace: a}}\n"
        for i in range(6)
    )
    dump = tmp_path / "dump.yaml"
    dump.write_text(DUMP.read_text() + "\n" + services)
    short = runner.invoke(app, ["plan", "-f", str(dump)])
    assert "9 objects of kinds Joiner does not model" in short.output
    assert "and 6 more (-v lists them all)" in short.output
    full = runner.invoke(app, ["plan", "-f", str(dump), "-v"])
    assert "Service/s5" in full.output and "more (-v" not in full.output


def test_control_characters_in_names_never_reach_the_terminal(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text(DUMP.read_text().replace("name: aws-auth", 'name: "evil\\e[31mred"'))
    result = runner.invoke(app, ["plan", "-f", str(dump)])
    # Not a DNS-1123 subdomain: refused, and the error names it without the raw escape.
    assert result.exit_code == 2, result.output
    assert "\x1b" not in result.output and "evil?[31mred" in result.output
