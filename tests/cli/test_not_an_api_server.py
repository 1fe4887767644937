"""Commands that talk to a cluster, pointed at a server that is not a Kubernetes API
server, and commands whose standard output cannot be written: each exits with one error
line naming the cause, never a traceback."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
DUMP = REPO / "tests" / "fixtures" / "eks-cluster" / "dump.yaml"
runner = CliRunner()

#: Answers of servers that are not Kubernetes: (status, Content-Type or None, body).
ANSWERS = {
    "plain404": (404, None, b""),
    "500": (500, None, b""),
    "ok-garbage": (200, "application/json", b"\x1b[31mhello\x1b[0m not json"),
}
#: What lightkube tripped on, as the error names it.
CAUSES = {
    "plain404": "missing 'Content-Type'",
    "500": "missing 'Content-Type'",
    "ok-garbage": "its body is not JSON",
}

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}"}}
users:
- name: u
  user: {{token: abc}}
contexts:
- name: ctx
  context: {{cluster: c, user: u}}
current-context: ctx
"""


class _NotKubernetes(http.server.BaseHTTPRequestHandler):
    """Answers every request with the server's ``answer`` (one of ``ANSWERS``)."""

    def _answer(self) -> None:
        status, content_type, body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PATCH = do_POST = do_PUT = _answer

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(params=sorted(ANSWERS))
def not_kubernetes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, str, str]]:
    """A kubeconfig whose server is an in-process HTTP server giving one of ``ANSWERS``,
    with the server's URL and the answer's name."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotKubernetes)
    server.answer = ANSWERS[request.param]  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(server=url))
    try:
        yield kubeconfig, url, request.param
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("command", "doing"),
    [
        (["install-crds"], "reading CustomResourceDefinition nodepools.karpenter.sh"),
        (["plan"], "listing karpenter.sh/v1 NodePool"),
        (["advise"], "listing karpenter.sh/v1 NodePool"),
        (["disrupt"], "listing karpenter.sh/v1 NodePool"),
    ],
)
def test_a_server_that_is_not_kubernetes_is_a_located_error(
    not_kubernetes: tuple[Path, str, str], command: list[str], doing: str
) -> None:
    """Regression (breaker): install-crds showed ``KeyError: 'Content-Type'`` for an
    answer without Content-Type, and every command ``DecodeError`` for a 200 whose body is
    not JSON; all exit 2 naming the kubeconfig, the server and the cause."""
    kubeconfig, url, answer = not_kubernetes
    result = runner.invoke(app, [*command, "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    message = " ".join(result.output.split())
    assert message.startswith(f"error: {kubeconfig} (from --kubeconfig): {doing} ")
    assert f"got an answer from {url} that is not from a Kubernetes API server" in message
    assert CAUSES[answer] in message
    assert "Traceback" not in result.output


def test_import_reads_the_cluster_through_the_same_handling(
    not_kubernetes: tuple[Path, str, str],
) -> None:
    """``joiner import --kubeconfig`` lists the cluster as plan does: the same error."""
    from joiner.cli import importer

    kubeconfig, url, answer = not_kubernetes
    with pytest.raises(InputError, match=r"listing karpenter\.sh/v1 NodePool") as exc:
        importer._objects([], kubeconfig, None)
    assert f"from {url} that is not from a Kubernetes API server ({CAUSES[answer]}" in str(
        exc.value
    )
    assert exc.value.file == f"{kubeconfig} (from --kubeconfig)"


@pytest.mark.parametrize("option", [["--kubeconfig", "/nonexistent"], ["--context", "x"]])
def test_install_crds_print_refuses_a_cluster_option(option: list[str]) -> None:
    """Regression (breaker): ``install-crds --print --kubeconfig /nonexistent`` printed the
    CRDs and ignored the option; --print reads no cluster, so the two are refused."""
    result = runner.invoke(app, ["install-crds", "--print", *option])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert message == (
        f"error: field {option[0]}: --print writes the CRDs to standard output and talks to "
        f"no cluster; give either --print or {option[0]}, not both"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["install-crds", "--print"],
        ["plan", "-f", str(DUMP), "-o", "json"],
        ["plan", "-f", str(DUMP)],
        ["--version"],
    ],
)
def test_a_full_standard_output_is_one_error_line(args: list[str]) -> None:
    """Regression (breaker): output to a full device (``> /dev/full``) ended in an
    ``OSError`` traceback. The entry point (a fresh interpreter, as ``joiner`` is) prints
    one line and exits 1, whether the write failed in the command or at the final flush
    (``--version`` prints less than a buffer)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "joiner", *args],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("warning:")]
    assert errors == ["error: cannot write to standard output: No space left on device"]


def test_a_closed_pipe_exits_without_a_word() -> None:
    """A reader that stops early (``joiner install-crds --print | true``): exit 1, as
    click does for a closed pipe, with nothing on stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "joiner", "install-crds", "--print"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    assert proc.wait() == 1
    assert proc.stderr.read() == b""
    proc.stderr.close()
