"""``joiner import --from-file`` on hand-edited copies of the committed day
(``tests/fixtures/history/day``): each edit is refused with a located error (exit 2) or
imported with its case counted, never a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.testing import golden

FIXTURE = golden.HISTORY / "day"


def _copy(tmp_path: Path) -> Path:
    day = tmp_path / "day"
    shutil.copytree(FIXTURE, day)
    return day


def _edit(day: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = day / "responses" / f"{name}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _import(day: Path, out: Path, *extra: str):
    spec = json.loads((day / "import.json").read_text(encoding="utf-8"))
    args = ["import", "--from-file", str(day / "responses"), "-f", str(day / "dump.yaml")]
    args += ["--start", spec["start"], "--end", spec["end"], "--step", spec["step"]]
    return CliRunner().invoke(app, [*args, "--out", str(out), *extra])


def _first_nan(doc: dict[str, Any]) -> None:
    doc["data"]["result"][0]["values"][0][1] = "NaN"


def _first_inf(doc: dict[str, Any]) -> None:
    doc["data"]["result"][0]["values"][0][1] = "+Inf"


def _first_empty(doc: dict[str, Any]) -> None:
    doc["data"]["result"][0]["values"] = []


@pytest.mark.parametrize(
    ("name", "change"),
    [
        *(
            (job, change)
            for job in ("job_parallelism", "job_start_time", "job_completion_time")
            for change in (_first_nan, _first_inf, _first_empty)
        ),
        ("node_created", _first_empty),
        ("pod_scheduled_time", _first_empty),
    ],
)
def test_a_series_left_without_a_sample_is_counted_not_a_crash(tmp_path, name, change):
    # A Job's series holds one sample; NaN there (or no values at all) left an empty
    # series that the translation read the last sample of.
    day = _copy(tmp_path)
    _edit(day, name, change)
    result = _import(day, tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "sample-less result" in result.output


def _nodes_unnamed(doc: dict[str, Any]) -> None:
    doc["data"]["result"][0]["metric"]["node"] = ""


def test_a_node_series_without_a_node_name_is_counted_not_written(tmp_path):
    # The import wrote an as-run row with an empty node name, which simulate then refused.
    day = _copy(tmp_path)
    for name in ("node_info", "node_labels", "node_created"):
        _edit(day, name, _nodes_unnamed)
    out = tmp_path / "out"
    result = _import(day, out)
    assert result.exit_code == 0, result.output
    assert "nameless result" in result.output
    rows = (out / "as-run" / "nodes.csv").read_text(encoding="utf-8").splitlines()[1:]
    assert rows and all(not row.startswith(",") for row in rows)
    sim = CliRunner().invoke(
        app, ["simulate", str(out / "scenario.yaml"), "-q", "--out", str(tmp_path / "sim")]
    )
    assert sim.exit_code == 0, sim.output


#: A node name holding what a terminal or a CSV reader acts on: ESC and a CSI, BEL, a
#: carriage return alone, a line break, a comma and a quote, DEL, a C1 control, a Unicode
#: line separator and a separator control at the end (white space to ``str.strip``).
HOSTILE_NODE = 'ip-10-16-116-9\x1b[31mred\x07\rcr\n,"q\x7f\x9b\u2028x\x1f'


def test_a_node_name_with_control_characters_stays_one_csv_cell(tmp_path):
    # The csv module's writer left a lone carriage return unquoted: the as-run CSV then
    # read back as two rows. The name must read back exactly, and reach no terminal raw.
    from joiner.sim.asrun_files import load_nodes, load_pods
    from tests.fuzz.harness import CONTROL

    day = _copy(tmp_path)
    for path in (day / "responses").glob("*.json"):
        text = path.read_text(encoding="utf-8")
        hostile = json.dumps(HOSTILE_NODE)[1:-1]
        path.write_text(text.replace("ip-10-16-116-9.ec2.internal", hostile), encoding="utf-8")
    out = tmp_path / "out"
    result = _import(day, out, "--empty-start")
    assert result.exit_code == 0, result.output
    assert not CONTROL.search(result.output), result.output
    nodes = load_nodes(out / "as-run" / "nodes.csv")
    assert HOSTILE_NODE in [n.node for n in nodes]
    assert len(nodes) == 9
    assert len(load_pods(out / "as-run" / "pods.csv")) == 164
