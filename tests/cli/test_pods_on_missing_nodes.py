"""Pods of a dump whose node is not in it (or that ``joiner disrupt`` leaves alone) draw one
grouped warning per kind, naming each pod, its node and its file, not one line per pod; in
``disrupt`` a node missing from the dump is not called one "Joiner leaves alone"."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from joiner.cli.main import app

runner = CliRunner()
DUMP = Path(__file__).parents[1] / "fixtures" / "eks-cluster" / "dump.yaml"
GONE = "ip-192-168-14-101.ec2.internal"


def _without_node(tmp_path: Path) -> Path:
    doc = yaml.safe_load(DUMP.read_text())
    doc["items"] = [
        o for o in doc["items"] if not (o["kind"] == "Node" and o["metadata"]["name"] == GONE)
    ]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _about_missing(command: str, path: Path) -> list[str]:
    result = runner.invoke(app, [command, "-f", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return [w for w in json.loads(result.stdout)["warnings"] if GONE in w]


def test_plan_groups_the_pods_of_a_missing_node(tmp_path):
    (warning,) = _about_missing("plan", _without_node(tmp_path))
    assert warning.startswith("4 pods on nodes not in the manifests: their usage is ignored: ")
    assert f"shop/api-7d9f8c6b5-a1b2c (node {GONE}, {tmp_path / 'dump.yaml'})" in warning


def test_disrupt_says_the_node_is_missing_not_left_alone(tmp_path):
    (warning,) = _about_missing("disrupt", _without_node(tmp_path))
    assert warning.startswith("2 pods on nodes not in the manifests stay there, ")
    assert "leaves alone" not in warning and "shop/api-7d9f8c6b5-d3e4f" in warning
