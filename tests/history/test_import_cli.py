"""``joiner import`` through the command line, reading saved responses (``--from-file``)."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from joiner.cli.importer import query_range
from joiner.cli.main import app
from joiner.history.queries import QUERIES, query_step, render_queries
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
    assert "1 unrecorded workload (kept at the object's replicas" in err
    assert "[20/20] node_created: 2 series" in err


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


def test_unusable_options_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No kubeconfig anywhere kubectl looks, and not in a pod.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    dump = str(_cluster(tmp_path))
    files = ["--from-file", "x", "-f", dump, "--out", str(tmp_path / "o")]
    span = ["--start", START, "--end", END]
    prom = [*span, "--prometheus", "http://p:9090", "-f", dump, "--out", str(tmp_path / "p")]
    cases = [
        ([*files, "--start", END, "--end", START], "is not after --start"),
        ([*files, *span, "--step", "0s"], "--step 0s is under a second"),
        # Used to read as 0 and be called not positive.
        ([*files, *span, "--step", "1ns"], "--step 1ns is under a second"),
        # A long range used to run out of memory (MemoryError traceback).
        (
            [*files, "--start", "0001-01-01T00:00:00Z", "--end", "9999-12-31T23:59:59Z"],
            "import at most 90 days",
        ),
        ([*files, "--start", START, "--end", "2025-04-06T00:00:01Z"], "import at most 90 days"),
        ([*files, *span, "--step", "1ms"], "is under a second"),
        # A 12-hour step read a node that ended between two samples as running to the end.
        ([*files, *span, "--step", "12h"], "--step 12h is coarser than 60m"),
        ([*files, *span, "--step", "61m"], "is coarser than 60m"),
        (
            [*files, "--start", START, "--end", "2025-02-06T00:00:00Z", "--step", "1s"],
            "steps of the range; at most 1,000,000",
        ),
        ([*files, "--start", "yesterday", "--end", END], "is not an RFC 3339 time"),
        (
            [*files, "--start", "2025-01-06T00:00:00", "--end", END],
            "is not an RFC 3339 time: give a date, a time and",
        ),
        ([*span, "-f", dump, "--out", "o"], "give exactly one of --prometheus URL or --from"),
        ([*span, "--from-file", "x", "--out", "o"], "give the cluster's objects with -f DUMP"),
        ([*files, *span, "--prometheus", "http://p:9090"], "give exactly one of --prometheus"),
        (
            [*prom, "--basic-auth-user", "me"],
            "--basic-auth-user and --basic-auth-password-file go together",
        ),
        ([*files, *span, "--save-responses", "s"], "apply to --prometheus only"),
        # Used to read every query, then fail "cannot write: File exists" or, saved
        # inside --out, "--out is not empty" with the responses left in it.
        ([*prom, "--save-responses", dump], "field --save-responses: is a file, not a directory"),
        ([*prom, "--save-responses", str(tmp_path / "p/saved")], "overlaps --out"),
        ([*prom, "--save-responses", str(tmp_path)], "overlaps --out"),
        ([*files, *span, "--region", "mars-1"], "unknown region 'mars-1'"),
        # --context reads the cluster kubectl finds (with -f: and the files), here none.
        ([*files, *span, "--context", "c"], "no kubeconfig found; tried --kubeconfig"),
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


def test_the_guide_lists_every_query_as_print_queries_prints_it() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs/guides/last-week.md").read_text()
    assert render_queries() in guide


class _Prometheus(http.server.BaseHTTPRequestHandler):
    """A loopback ``/api/v1/query_range`` answering the catalog's queries from
    ``_answers()`` (every sample, whatever the range: the test's range is the answers')."""

    answers: ClassVar[dict[str, list[Series]]] = {}
    by_promql: ClassVar[dict[str, str]] = {q.promql: q.name for q in QUERIES}
    steps: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        name = self.by_promql[query["query"][0]]
        self.steps[name] = query["step"][0]
        result = [
            {
                "metric": dict(s.labels),
                "values": [[t, repr(v)] for t, v in zip(s.times_s, s.values, strict=True)],
            }
            for s in self.answers.get(name, [])
        ]
        body = json.dumps(
            {"status": "success", "data": {"resultType": "matrix", "result": result}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def test_prometheus_import_saves_responses_that_import_the_same_offline(tmp_path: Path) -> None:
    _Prometheus.answers = _answers()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        dump = str(_cluster(tmp_path))
        code, _, err = _run(
            "--prometheus",
            url,
            "--start",
            START,
            "--end",
            END,
            "-f",
            dump,
            "--out",
            str(tmp_path / "live"),
            "--save-responses",
            str(tmp_path / "saved"),
        )
        assert code == 0, err
    finally:
        server.shutdown()
        thread.join()
    code, _, err = _run(
        "--from-file",
        str(tmp_path / "saved"),
        "--start",
        START,
        "--end",
        END,
        "-f",
        dump,
        "--out",
        str(tmp_path / "offline"),
    )
    assert code == 0, err
    assert "saved step other than asked" not in err
    # The per-pod queries were asked and saved at their coarse step, the others at --step.
    index = json.loads((tmp_path / "saved" / "queries.json").read_text())["queries"]
    for q in QUERIES:
        want = query_step(q, query_range(START, END, "60s"))
        assert float(_Prometheus.steps[q.name]) == index[q.name]["step_s"] == want, q.name
    assert index["pod_created"]["step_s"] > 60.0
    live = sorted(p.relative_to(tmp_path / "live") for p in (tmp_path / "live").rglob("*.*"))
    offline = sorted(
        p.relative_to(tmp_path / "offline") for p in (tmp_path / "offline").rglob("*.*")
    )
    assert live == offline and len(live) == 9  # start.yaml among them
    for rel in live:
        a = (tmp_path / "live" / rel).read_text().replace("live", "offline")
        assert a == (tmp_path / "offline" / rel).read_text(), rel


def test_the_imported_scenario_simulates_with_as_run_beside_both_policies(
    tmp_path: Path,
) -> None:
    saved = _save(_answers(), tmp_path / "saved")
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
    assert code == 0, err
    r = CliRunner().invoke(
        app, ["simulate", str(tmp_path / "week/scenario.yaml"), "-q", "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.stderr
    summary = json.loads(next((tmp_path / "o").rglob("summary.json")).read_text())
    assert list(summary["policies"]) == ["as-run", "joiner", "cluster-autoscaler"]
    as_run = summary["policies"]["as-run"]
    # Node a: spot for the whole 2 h; node b: on-demand from 1200 s to 4800 s.
    assert as_run["nodeHours"] == {"spot": 2.0, "onDemand": 1.0}
    assert [n["name"] for n in as_run["nodes"]] == ["a", "b"]


def test_a_password_or_token_in_the_url_is_never_echoed(tmp_path: Path) -> None:
    # The URL's password and query string used to be printed in "reading ..." and in
    # every error naming the URL. Port 1 on loopback refuses the connection.
    url = "http://me:s3cret@127.0.0.1:1/prom?token=t0ken"
    objects = ["-f", str(_cluster(tmp_path)), "--out", str(tmp_path / "o")]
    code, out, err = _run("--prometheus", url, "--start", START, "--end", END, *objects)
    assert code == 2
    text = (out + err).replace("\n", "")
    assert "s3cret" not in text and "t0ken" not in text
    assert "http://me:***@127.0.0.1:1/prom" in text and "connection was refused" in text


def test_redact_url_hides_passwords_and_query_strings() -> None:
    from joiner.history.prometheus import redact_url

    assert redact_url("https://u:p@h:9090/x?a=b#f") == "https://u:***@h:9090/x"
    assert redact_url("https://u@h/") == "https://u@h/"
    assert redact_url("http://h:9090") == "http://h:9090"
    assert "pw" not in redact_url("http://u:pw@[::1")


def test_force_never_writes_over_or_into_an_input(tmp_path: Path) -> None:
    # --force into the directory holding the dump as objects.yaml used to overwrite it;
    # --from-file DIR/traces with --out DIR wrote traces into the saved responses.
    out = tmp_path / "week"
    saved = _save(_answers(), tmp_path / "saved")
    out.mkdir()
    dump = out / "objects.yaml"
    dump.write_text(_cluster(tmp_path).read_text())
    before = dump.read_bytes()
    span = ["--start", START, "--end", END, "--force"]
    code, _, err = _run("--from-file", str(saved), "-f", str(dump), "--out", str(out), *span)
    assert code == 2 and "would write objects.yaml over or into the input" in err
    assert "[1/" not in err  # refused before any query was read
    assert dump.read_bytes() == before and sorted(p.name for p in out.iterdir()) == ["objects.yaml"]
    inner = saved.rename(out / "traces")
    code, _, err = _run(
        "--from-file", str(inner), "-f", str(_cluster(tmp_path)), "--out", str(out), *span
    )
    assert code == 2 and "over or into the input" in err
    assert not (out / "scenario.yaml").exists()


def test_colon_words_in_user_text_are_not_turned_into_emoji(tmp_path: Path) -> None:
    # Rich replaced ":x:" in messages by an emoji: /etc/passwd's "root:x:0:0" read as
    # "root❌0:0" in an error naming a bad header.
    missing = str(tmp_path / "a:x:b:smile:.yaml")
    span = ["--start", START, "--end", END, "--out", str(tmp_path / "o")]
    code, _, err = _run("--from-file", "x", *span, "-f", missing)
    assert code == 2 and "a:x:b:smile:.yaml" in err.replace("\n", "")


def test_a_path_the_system_refuses_is_exit_2_naming_it(tmp_path: Path) -> None:
    # A name too long as --from-file, --bearer-token-file, --ca-file or --save-responses
    # was an OSError traceback (ENAMETOOLONG from a stat).
    long = str(tmp_path / ("y" * 300))
    span = ["--start", START, "--end", END, "-f", str(_cluster(tmp_path))]
    prom = [*span, "--prometheus", "http://127.0.0.1:1", "--out", str(tmp_path / "o")]
    for args in (
        [*span, "--from-file", long, "--out", str(tmp_path / "o")],
        [*prom, "--bearer-token-file", long],
        [*prom, "--ca-file", long],
        [*prom, "--save-responses", long],
    ):
        code, _, err = _run(*args)
        assert code == 2, (args, err)
        assert "cannot use: File name too long" in err.replace("\n", ""), err


def test_empty_start_writes_no_start_yaml(tmp_path: Path) -> None:
    saved = _save(_answers(), tmp_path / "saved")
    args = ["--from-file", str(saved), "--start", START, "--end", END]
    args += ["-f", str(_cluster(tmp_path))]
    code, out, err = _run(*args, "--out", str(tmp_path / "started"))
    assert code == 0, err
    assert (tmp_path / "started/start.yaml").is_file()
    assert "at the start 1 node and" in out.replace("\n", " ")
    code, out, err = _run(*args, "--empty-start", "--out", str(tmp_path / "empty"))
    assert code == 0, err
    assert not (tmp_path / "empty/start.yaml").exists()
    assert "an empty cluster at the start" in out.replace("\n", " ")
    scenario = (tmp_path / "empty/scenario.yaml").read_text()
    assert "start.yaml" not in scenario
