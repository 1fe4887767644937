"""``joiner run``'s logs: JSON lines with Karpenter's keys by default, ``--log-format
text`` on request, ``--log-level`` honoured; the other commands keep plain text."""

from __future__ import annotations

import io
import json
import logging
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from joiner.api.logkeys import log_keys
from joiner.cli.logformat import JsonFormatter, LogFormat, configure_run_logging, zap_time
from joiner.cli.main import app
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-spot"
#: The keys every line of Karpenter's zap JSON encoder has.
ZAP_KEYS = {"level", "time", "logger", "message"}


@pytest.fixture(autouse=True)
def _restore_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``joiner run`` in-process sets the root logger, the warnings capture and the
    exception hooks; each test gets them back as they were."""
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    logging.captureWarnings(False)
    root.handlers[:] = handlers
    root.setLevel(level)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server refuses connections."""
    path = tmp_path / "unreachable.kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{_closed_port()}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    return path


def _run_until_error(kubeconfig: Path, *args: str) -> list[str]:
    """``joiner run --dry-run`` against an unreachable server: its stderr lines, read until
    the ERROR line that says so, then the rest after SIGTERM (exit 0)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from joiner.cli.main import main; main()",
            "run",
            "--dry-run",
            "--cloud",
            "simulated",
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-port",
            "0",
            "--health-port",
            "0",
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if '"level":"ERROR"' in line:
                break
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        lines += proc.stderr.readlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines


def test_run_logs_one_json_object_a_line_with_karpenters_keys(
    unreachable_kubeconfig: Path,
) -> None:
    lines = _run_until_error(unreachable_kubeconfig)
    objs = [json.loads(line) for line in lines]  # each line, whole, is one JSON object
    assert objs and all(isinstance(o, dict) and o.keys() >= ZAP_KEYS for o in objs), lines
    assert all(o["level"] in {"DEBUG", "INFO", "WARN", "ERROR"} for o in objs)
    errors = [o for o in objs if o["level"] == "ERROR"]
    assert errors[0]["logger"] == "joiner.cluster.kube.client"
    assert errors[0]["message"].startswith("cannot reach the API server https://127.0.0.1:")
    assert any(o["message"] == "stopping" and o["level"] == "INFO" for o in objs)
    # No caller below the debug level (Karpenter's DisableCaller).
    assert not any("caller" in o for o in objs)


def test_log_level_error_suppresses_info(unreachable_kubeconfig: Path) -> None:
    objs = [
        json.loads(line)
        for line in _run_until_error(unreachable_kubeconfig, "--log-level", "error")
    ]
    assert objs and {o["level"] for o in objs} == {"ERROR"}, objs


def test_log_level_debug_adds_the_caller(unreachable_kubeconfig: Path) -> None:
    objs = [
        json.loads(line)
        for line in _run_until_error(unreachable_kubeconfig, "--log-level", "debug")
    ]
    assert any(o["level"] == "DEBUG" for o in objs)
    error = next(o for o in objs if o["level"] == "ERROR")
    assert error["caller"].startswith("kube/client.py:"), error


@pytest.mark.parametrize(
    ("args", "env", "field"),
    [(["--log-level", "warn"], {}, "--log-level"), ([], {"LOG_LEVEL": "trace"}, "LOG_LEVEL")],
)
def test_an_unknown_log_level_is_refused_naming_the_flag(
    unreachable_kubeconfig: Path, args: list[str], env: dict[str, str], field: str
) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "--kubeconfig", str(unreachable_kubeconfig), "--cloud", "simulated", *args],
        env=env,
    )
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"field {field}" in flat and "'debug', 'info' or 'error'" in flat, flat


def test_an_unknown_log_format_is_a_usage_error(unreachable_kubeconfig: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--kubeconfig",
            str(unreachable_kubeconfig),
            "--cloud",
            "simulated",
            "--log-format",
            "logfmt",
        ],
    )
    assert result.exit_code == 2 and "--log-format" in result.output, result.output


def _json_lines(records: list[logging.LogRecord]) -> list[dict[str, Any]]:
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r)) for r in records]


def test_launch_registration_and_initialization_lines_carry_the_objects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="joiner.controllers.nodeclaim.lifecycle"):
        SimulationRuntime(load_scenario(SEED / "scenario.yaml")).run()
    objs = _json_lines(caplog.records)
    launched = [o for o in objs if "launched nodeclaim=" in o["message"]]
    registered = [o for o in objs if "registered nodeclaim=" in o["message"]]
    initialized = [o for o in objs if "initialized nodeclaim=" in o["message"]]
    assert len(launched) == len(registered) == len(initialized) == 7  # seed-spot: 7 nodes
    first = launched[0]
    assert first["NodePool"] == {"name": "my-provisioner"}
    assert f"launched nodeclaim={first['NodeClaim']['name']} " in first["message"]
    for o in registered + initialized:
        assert set(o["Node"]) == {"name"} and o["NodeClaim"]["name"] in o["message"]


def test_disruption_lines_list_the_disrupted_nodes(caplog: pytest.LogCaptureFixture) -> None:
    scenario = REPO / "examples" / "nightly-consolidation" / "scenario.yaml"
    with caplog.at_level(logging.INFO, logger="joiner.controllers.disruption.controller"):
        SimulationRuntime(load_scenario(scenario)).run()
    objs = [o for o in _json_lines(caplog.records) if "] disruption method=" in o["message"]]
    assert objs
    for o in objs:
        nodes = o["disrupted-nodes"]
        assert nodes and all(n["Node"]["name"] in o["message"] and "NodeClaim" in n for n in nodes)


def test_interruption_lines_carry_the_nodeclaim_and_its_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scenario = REPO / "examples" / "spot-interruptions" / "scenario.yaml"
    with caplog.at_level(logging.INFO, logger="joiner.controllers.interruption.controller"):
        SimulationRuntime(load_scenario(scenario)).run()
    objs = [o for o in _json_lines(caplog.records) if "interruption message" in o["message"]]
    assert objs
    for o in objs:
        assert f"nodeclaim={o['NodeClaim']['name']} " in o["message"]
        assert set(o["NodePool"]) == {"name"} and set(o["Node"]) == {"name"}


def test_log_keys_are_klog_object_references() -> None:
    assert log_keys(Pod="team-a/web-1", Node="ip-10-0-0-1", NodeClaim=None) == {
        "Pod": {"name": "web-1", "namespace": "team-a"},
        "Node": {"name": "ip-10-0-0-1"},
    }
    with pytest.raises(ValueError, match="'Nodeclaim': want one of NodeClaim"):
        log_keys(Nodeclaim="x")


def test_an_exception_is_one_line_with_error_and_stacktrace() -> None:
    log = logging.getLogger("joiner.test")
    try:
        raise ValueError("boom\non two lines")
    except ValueError:
        record = log.makeRecord(
            "joiner.test", logging.ERROR, "f.py", 1, "callback failed", (), sys.exc_info()
        )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["level"] == "ERROR" and obj["message"] == "callback failed"
    assert obj["error"] == "ValueError: boom\non two lines"
    assert obj["stacktrace"].startswith("Traceback (most recent call last):")


def test_a_control_character_in_a_value_is_not_written() -> None:
    record = logging.LogRecord(
        "joiner.test", logging.INFO, "f.py", 1, "pod %s", ("a\x9b2Jb",), None
    )
    record.Pod = {"name": "a\u202eb"}
    line = JsonFormatter().format(record)
    assert "\x9b" not in line and "\u202e" not in line
    assert json.loads(line)["Pod"] == {"name": "a?b"}


def test_zap_time_is_iso8601_utc_to_the_millisecond() -> None:
    assert zap_time(1767366245.1239) == "2026-01-02T15:04:05.123Z"


def test_an_uncaught_exception_in_a_thread_is_one_json_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_run_logging(LogFormat.json)

    def crash() -> None:
        raise RuntimeError("informer died")

    t = threading.Thread(target=crash, name="informer-Pod")
    t.start()
    t.join()
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 1, lines
    obj = json.loads(lines[0])
    assert obj["message"] == "uncaught exception in thread informer-Pod"
    assert obj["error"] == "RuntimeError: informer died" and "crash" in obj["stacktrace"]


def test_interactive_commands_log_plain_text(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["-v", "simulate", str(SEED / "scenario.yaml"), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if "launched nodeclaim=" in x]
    assert lines and all(
        x.startswith("INFO joiner.controllers.nodeclaim.lifecycle: [t=") for x in lines
    ), lines[:3]
    assert not any(x.lstrip().startswith("{") for x in result.output.splitlines())
    assert "NodePool" not in "".join(lines)  # the structured keys are JSON-only


def test_a_crash_of_run_is_one_json_line_and_exit_1(unreachable_kubeconfig: Path) -> None:
    """An exception nothing catches in ``joiner run`` (here the runtime itself fails) is
    logged as one JSON line with ``error`` and ``stacktrace``, not a raw traceback."""
    crash = (
        "import joiner.operator.controller as c\n"
        "def boom(self):\n"
        "    raise RuntimeError('runtime broke')\n"
        "c.ControllerRuntime.run = boom\n"
        "from joiner.cli.main import main; main()\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            crash,
            "run",
            "--dry-run",
            "--cloud",
            "simulated",
            "--kubeconfig",
            str(unreachable_kubeconfig),
            "--metrics-port",
            "0",
            "--health-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    objs = [json.loads(line) for line in proc.stderr.splitlines()]
    crashed = [o for o in objs if o.get("error") == "RuntimeError: runtime broke"]
    assert len(crashed) == 1 and crashed[0]["level"] == "ERROR", proc.stderr
    assert "in boom" in crashed[0]["stacktrace"]
