"""``joiner import`` through the command line, reading saved responses (``--from-file``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from joiner.cli.main import app
from joiner.history.queries import QUERIES, render_queries
from joiner.history.series import Series
from tests.history.test_translate import _answers, _cluster

START, END = "2025-01-06T00:00:00Z", "2025-01-06T02:00:00Z"


def _save(answers: dict[str, list[Series]], where: Path) -> Path:
    """Every catalog query's answer as the JSON ``/api/v1/query_range`` returns."""
    where.mkdir()
    for q in QUERIES:
        result = [
            {
                "metric": dict(s.labels),
                "values": [[t, repr(v)] for t, v in zip(s.times_s, s.values, strict=True)],
            }
            for s in answers.get(q.name, [])
        ]
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        (where / f"{q.name}.json").write_text(json.dumps(body))
    return where


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["import", *args])
    return r.exit_code, r.stdout, r.stderr


def test_print_queries_prints_the_catalog_exactly() -> None:
    code, out, _ = _run("--print-queries")
    assert code == 0
    assert out == render_queries()


def test_import_from_saved_responses_writes_a_scenario(tmp_path: Path) -> None:
    saved = _save(_answers(), tmp_path / "saved")
    dump = _cluster(tmp_path)
    code, out, err = _run(
        "--from-file",
        str(saved),
        "--start",
        START,
        "--end",
        END,
        "-f",
        str(dump),
        "--out",
        str(tmp_path / "week"),
    )
    assert code == 0, err
    assert (tmp_path / "week/scenario.yaml").is_file()
    assert "4 workload traces, 2 as-run nodes, 2 pods" in out
    assert f"next: joiner simulate {tmp_path / 'week/scenario.yaml'}" in out.replace("\n", "")
    # The grouped warnings: one line per kind, with what was assumed.
    assert "1 workload without history (kept at the object's replicas" in err
    assert "[19/19] node_created: 2 series" in err


def test_no_kube_state_metrics_series_exits_2(tmp_path: Path) -> None:
    saved = _save({}, tmp_path / "saved")
    code, _, err = _run(
        "--from-file",
        str(saved),
        "--start",
        START,
        "--end",
        END,
        "-f",
        str(_cluster(tmp_path)),
        "--out",
        str(tmp_path / "week"),
    )
    assert code == 2
    assert "no kube-state-metrics series" in err and str(saved) in err.replace("\n", "")
    assert not (tmp_path / "week").exists()


def test_unusable_options_exit_2(tmp_path: Path) -> None:
    dump = str(_cluster(tmp_path))
    out = str(tmp_path / "o")
    cases = [
        (
            ["--from-file", "x", "--start", END, "--end", START, "-f", dump, "--out", out],
            "is not after --start",
        ),
        (
            [
                "--from-file",
                "x",
                "--start",
                START,
                "--end",
                END,
                "--step",
                "0s",
                "-f",
                dump,
                "--out",
                out,
            ],
            "--step 0s must be positive",
        ),
        (
            ["--from-file", "x", "--start", "yesterday", "--end", END, "-f", dump, "--out", out],
            "is not an RFC 3339 time",
        ),
        (
            [
                "--from-file",
                "x",
                "--start",
                "2025-01-06T00:00:00",
                "--end",
                END,
                "-f",
                dump,
                "--out",
                out,
            ],
            "needs a date, a time and a zone",
        ),
        (
            ["--start", START, "--end", END, "-f", dump, "--out", out],
            "give exactly one of --prometheus URL or --from-file PATH",
        ),
        (
            ["--from-file", "x", "--start", START, "--end", END, "--out", out],
            "give the cluster's objects with -f DUMP or --kubeconfig",
        ),
    ]
    for args, message in cases:
        code, _, err = _run(*args)
        assert code == 2, args
        assert message in err.replace("\n", ""), (args, err)


def test_refuses_a_non_empty_out_directory(tmp_path: Path) -> None:
    saved = _save(_answers(), tmp_path / "saved")
    (tmp_path / "week").mkdir()
    (tmp_path / "week/notes.txt").write_text("mine")
    code, _, err = _run(
        "--from-file",
        str(saved),
        "--start",
        START,
        "--end",
        END,
        "-f",
        str(_cluster(tmp_path)),
        "--out",
        str(tmp_path / "week"),
    )
    assert code == 2 and "is not empty" in err
