"""Regressions from the controller-mode user trial: the Lease namespace missing, an
unreachable API server (logged, /healthz, SIGTERM in --dry-run), errors that were
tracebacks (ports in use, an unknown region, plan/disrupt against an unreachable server),
and ``install-crds`` (help text, --print equal to the chart's crds/)."""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app
from joiner.cluster.kube.client import ApiReachability
from joiner.cluster.kube.crds import CRD_FILES, crd_documents
from joiner.cluster.kube.leader import LeaderElector
from joiner.operator.controller import ControllerRuntime, ControllerSettings

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def _poll(what: str, probe: Callable[[], T | None], timeout_s: float = 30.0) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = probe()
        if got is not None and got is not False:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server refuses connections."""
    path = tmp_path / "unreachable.kubeconfig"
    port = _closed_port()
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n"
    )
    return path


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


# -- 2. the Lease's namespace does not exist ----------------------------------------------


class _NoNamespace:
    """A Lease API whose namespace is missing for the first ``missing_for`` creates."""

    def __init__(self, missing_for: int) -> None:
        self.missing_for = missing_for
        self.creates = 0

    def get(self, *_a: Any, **_kw: Any) -> Any:
        raise ApiError(status=Status(code=404, message='leases "l" not found'))

    def create(self, _obj: Any) -> Any:
        self.creates += 1
        if self.creates <= self.missing_for:
            raise ApiError(status=Status(code=404, message='namespaces "joiner" not found'))
        return _obj


def test_missing_lease_namespace_is_one_error_naming_the_fix_and_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = _NoNamespace(missing_for=4)
    elector = LeaderElector(client, "joiner", "l", "me", retry_s=0.01)  # type: ignore[arg-type]
    problems: list[str | None] = []
    original = elector._refused

    def spy(exc: ApiError) -> None:
        original(exc)
        problems.append(elector.problem)

    elector._refused = spy  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="joiner.cluster.kube.leader"):
        assert elector.acquire(threading.Event())
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "namespace 'joiner' does not exist" in errors[0]
    assert "kubectl create namespace joiner" in errors[0]
    assert "helm install joiner deploy/chart -n joiner --create-namespace" in errors[0]
    assert "leaderElection.namespace" in errors[0]
    assert not any(r.levelno == logging.WARNING for r in caplog.records)
    assert len(problems) == 4 and all(p is not None for p in problems)
    assert elector.problem is None and elector.leader  # created once the namespace exists


class _FailingCredentials(_NoNamespace):
    """A client whose kubeconfig exec plugin fails for the first ``failing_for`` requests
    (an expired SSO login), then a Lease API with its namespace present."""

    def __init__(self, failing_for: int) -> None:
        super().__init__(missing_for=0)
        self.failing_for = failing_for
        self.calls = 0

    def get(self, *a: Any, **kw: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failing_for:
            raise InputError(
                "the exec credential plugin '/bin/false' exited with code 1",
                file="kubeconfig",
                field="users[u].user.exec",
            )
        return super().get(*a, **kw)


def test_failing_credentials_are_one_error_not_a_warning_every_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: an exec plugin that fails was a WARNING every retry period, forever; it
    is one ERROR naming the kubeconfig field (``/readyz`` fails meanwhile), and the Lease
    is taken once the credentials work again."""
    elector = LeaderElector(_FailingCredentials(5), "joiner", "l", "me", retry_s=0.01)  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG, logger="joiner.cluster.kube.leader"):
        assert elector.acquire(threading.Event())
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "users[u].user.exec" in errors[0] and "Fix the credentials" in errors[0]
    assert not any(r.levelno == logging.WARNING for r in caplog.records)
    assert elector.leader


def test_readyz_fails_while_the_lease_namespace_is_missing() -> None:
    runtime = ControllerRuntime(None, metrics_port=None, health_port=None)
    runtime.ready = True
    assert runtime._is_ready()
    elector = LeaderElector(_NoNamespace(1), "joiner", "l", "me")  # type: ignore[arg-type]
    runtime.elector = elector
    elector._refused(ApiError(status=Status(code=404, message='namespaces "joiner" not found')))
    assert not runtime._is_ready()


# -- 3. an unreachable API server -----------------------------------------------------------


def test_reachability_logs_once_and_turns_unhealthy_after_the_threshold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import httpx2 as httpx

    now = [100.0]
    r = ApiReachability(30.0, now=lambda: now[0])
    err = httpx.ConnectError("refused", request=httpx.Request("GET", "https://10.1.2.3:6443/api"))
    with caplog.at_level(logging.INFO, logger="joiner.cluster.kube.client"):
        r.failed(err)
        now[0] += 29.0
        r.failed(err)
        assert r.healthy()
        now[0] += 1.0
        assert not r.healthy()
        r.ok()
        assert r.healthy()
    errors = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.ERROR]
    assert errors == [
        "cannot reach the API server https://10.1.2.3:6443: refused (retrying; /healthz "
        "fails after 30 s)"
    ]
    assert any("reachable again" in rec.getMessage() for rec in caplog.records)


@pytest.mark.parametrize("dry_run", [True, False])
def test_healthz_fails_once_the_api_server_is_unreachable_for_the_threshold(
    unreachable_kubeconfig: Path, dry_run: bool
) -> None:
    health = _closed_port()
    runtime = ControllerRuntime(
        unreachable_kubeconfig,
        dry_run=dry_run,
        metrics_port=None,
        health_port=health,
        unhealthy_after_s=0.5,
        settings=ControllerSettings.model_validate(
            {"leaderElection": {"retryPeriodSeconds": 0.1, "renewDeadlineSeconds": 1}}
        ),
    )
    codes: list[int] = []
    t = threading.Thread(target=lambda: codes.append(runtime.run()))
    t.start()
    try:
        _poll("/healthz answering", lambda: _get(health, "/healthz") != 0)
        _poll("/healthz 503", lambda: _get(health, "/healthz") == 503)
    finally:
        runtime.stop()
        t.join(30)
    assert not t.is_alive() and codes == [0]


def test_dry_run_against_an_unreachable_server_logs_it_and_stops_on_sigterm(
    unreachable_kubeconfig: Path,
) -> None:
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
            str(unreachable_kubeconfig),
            "--metrics-port",
            "0",
            "--health-port",
            str(_closed_port()),
            "--log-format",
            "text",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ERROR"):
                assert "cannot reach the API server https://127.0.0.1:" in line
                break
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert "stopping" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- 4. errors that were tracebacks ---------------------------------------------------------


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something is listening on."""
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _run(kubeconfig: Path, *args: str) -> Any:
    """``joiner run --kubeconfig K --cloud simulated ARGS...`` in-process."""
    return CliRunner().invoke(
        app, ["run", "--kubeconfig", str(kubeconfig), "--cloud", "simulated", *args]
    )


@pytest.mark.parametrize("flag", ["--metrics-port", "--health-port"])
def test_a_port_in_use_is_an_error_naming_the_flag(
    unreachable_kubeconfig: Path, busy_port: int, flag: str
) -> None:
    other = "--health-port" if flag == "--metrics-port" else "--metrics-port"
    result = _run(unreachable_kubeconfig, flag, str(busy_port), other, "0")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: field {flag}: cannot listen on port {busy_port}" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_region_in_the_settings_is_an_error_naming_the_field(
    tmp_path: Path, unreachable_kubeconfig: Path
) -> None:
    settings = tmp_path / "s.yaml"
    settings.write_text("region: mars-1\n")
    result = _run(unreachable_kubeconfig, "--settings", str(settings))
    assert result.exit_code == 2, result.output
    assert "field region: unknown region 'mars-1'" in result.output
    assert str(settings) in result.output


def test_run_without_cloud_is_refused_before_connecting(unreachable_kubeconfig: Path) -> None:
    """No default cloud: without --cloud, ``joiner run`` exits 2 naming the flag and both
    choices, before it reads the settings or reaches the API server."""
    for extra in ([], ["--dry-run"]):
        result = CliRunner().invoke(
            app, ["run", "--kubeconfig", str(unreachable_kubeconfig), *extra]
        )
        assert result.exit_code == 2, result.output
        flat = " ".join(result.output.split())
        assert "error: field --cloud: required: --cloud aws" in flat, flat
        assert "--cloud simulated" in flat
        assert "cannot reach" not in flat


@pytest.mark.parametrize("command", ["plan", "disrupt", "install-crds"])
def test_an_unreachable_server_is_an_error_naming_it(
    unreachable_kubeconfig: Path, command: str
) -> None:
    result = CliRunner().invoke(app, [command, "--kubeconfig", str(unreachable_kubeconfig)])
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert (
        f"error: {unreachable_kubeconfig} (from --kubeconfig): cannot reach the API server "
        "https://127.0.0.1:" in flat
    ), flat
    assert "Traceback" not in result.output


# -- 6. install-crds ------------------------------------------------------------------------


def test_install_crds_help_and_print_match_the_chart_and_karpenters_files() -> None:
    runner = CliRunner()
    raw = runner.invoke(app, ["install-crds", "--help"]).output
    help_text = " ".join(raw.replace("│", " ").split())  # rich's box, folded lines joined
    assert "instead of files" not in help_text
    assert "Install the CRDs into the cluster of this kubeconfig" in help_text
    printed = runner.invoke(app, ["install-crds", "--print"])
    assert printed.exit_code == 0
    # Byte for byte: the chart's crds/ files, one after the other, NodePool first.
    chart = REPO / "deploy" / "chart" / "crds"
    assert sorted(p.name for p in chart.iterdir()) == sorted(CRD_FILES.values())
    expected = "".join((chart / f).read_text() for f in CRD_FILES.values())
    assert printed.stdout == expected
    # Each chart file is one line naming Karpenter's module, version and file, then the
    # vendored file (tools/refresh_schemas.py copies it from that module), unchanged.
    vendored = REPO / "joiner" / "api" / "schemas"
    sources = {s["file"]: s for s in json.loads((vendored / "sources.json").read_text())}
    for name in CRD_FILES.values():
        head, _, body = (chart / name).read_text().partition("\n")
        src = sources[name]
        assert head == f"# Source: {src['module']} {src['version']} {src['path']}, unchanged."
        assert body == (vendored / name).read_text(), f"{name}: rerun tools/refresh_schemas.py"
    assert sources["karpenter.sh_nodepools.yaml"]["module"] == "sigs.k8s.io/karpenter"
    assert sources["karpenter.k8s.aws_ec2nodeclasses.yaml"]["module"] == (
        "github.com/aws/karpenter-provider-aws"
    )
    # What install-crds applies is those documents (plus its ownership label).
    docs = [d for d in yaml.safe_load_all(printed.stdout) if d]
    assert docs == crd_documents()
    assert [d["spec"]["names"]["kind"] for d in docs] == list(CRD_FILES)


def test_listing_from_something_that_is_not_an_api_server_is_a_located_error():
    """Regression (fix helper): lightkube raised KeyError('Content-Type') on a non-JSON 404
    from a server that is not Kubernetes, and `plan --kubeconfig` showed a traceback."""
    from joiner.api.errors import InputError
    from joiner.cluster.kube.client import list_documents

    class NotKubernetes:
        def list(self, *_args: Any, **_kwargs: Any) -> Any:
            raise KeyError("Content-Type")

    with pytest.raises(InputError, match="not from a Kubernetes API server") as exc:
        list_documents(NotKubernetes())
    assert exc.value.field == "--kubeconfig"
