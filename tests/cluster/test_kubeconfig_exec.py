"""Exec credential plugins (``users[].user.exec``): Joiner runs them with a time limit and
turns every failure into an input error naming the kubeconfig, the field and what the
plugin did. No cluster is contacted: the plugins are tiny shell scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from lightkube.config.models import NameValue, UserExec
from lightkube.resources.core_v1 import Namespace
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.kubeconfig import ExecCredentialAuth

V1BETA1 = "client.authentication.k8s.io/v1beta1"


def _plugin(tmp_path: Path, body: str) -> str:
    """An executable shell script running ``body``; returns its path."""
    script = tmp_path / "plugin.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def _kubeconfig(tmp_path: Path, command: str, args: list[str] | None = None) -> Path:
    """A kubeconfig whose user ``u`` authenticates with ``command`` (server port 1: any
    request that got past the plugin would be refused)."""
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters:\n- {name: k, cluster: {server: 'https://127.0.0.1:1'}}\n"
        "contexts:\n- {name: c, context: {cluster: k, user: u}}\n"
        "users:\n- name: u\n  user:\n    exec:\n"
        f"      apiVersion: {V1BETA1}\n      command: {json.dumps(command)}\n"
        f"      args: {json.dumps(args or [])}\n      interactiveMode: Never\n"
    )
    return path


def _auth(command: str, *, timeout_s: float = 10.0, args: list[str] | None = None) -> Any:
    return ExecCredentialAuth(
        UserExec(apiVersion=V1BETA1, command=command, args=args, env=[NameValue("X", "1")]),
        file="kc.yaml",
        user="u",
        timeout_s=timeout_s,
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("exit 1", "exited with code 1 (stderr empty)"),
        (r"printf '\033[31mboom\a\nsecond' >&2; exit 3", "exited with code 3: ?[31mboom?"),
        ("echo 'not json'", "printed 'not json', not an ExecCredential JSON object"),
        ("echo '[1]'", "printed a JSON list, not an ExecCredential object"),
        ("""echo '{"kind":"ExecCredential"}'""", "without a status object"),
        ("""echo '{"status":{}}'""", "returned no status.token"),
        (
            """echo '{"apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}}'""",
            "returned apiVersion 'client.authentication.k8s.io/v1'",
        ),
    ],
)
def test_a_failing_plugin_is_an_input_error_naming_file_field_and_what_it_did(
    tmp_path: Path, body: str, said: str
) -> None:
    with pytest.raises(InputError) as err:
        _auth(_plugin(tmp_path, body)).token()
    assert err.value.file == "kc.yaml"
    assert err.value.field == "users[u].user.exec"
    assert said in err.value.detail


def test_a_missing_command_is_an_input_error() -> None:
    with pytest.raises(InputError, match="could not be started") as err:
        _auth("no-such-command-for-joiner-tests").token()
    assert err.value.field == "users[u].user.exec"


def test_a_plugin_that_never_exits_is_stopped(tmp_path: Path) -> None:
    # A shell whose child sleeps: the whole process group is stopped, not only the shell.
    plugin = _plugin(tmp_path, "sleep 1000 & wait")
    with pytest.raises(InputError, match=r"did not finish within 0.5 s") as err:
        _auth(plugin, timeout_s=0.5).token()
    assert err.value.field == "users[u].user.exec"


def test_the_token_is_sent_and_the_plugin_gets_its_exec_info(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    cred = {"apiVersion": V1BETA1, "kind": "ExecCredential", "status": {"token": "tok"}}
    body = f"printf '%s %s' \"$X\" \"$KUBERNETES_EXEC_INFO\" > {seen}\necho '{json.dumps(cred)}'"
    flow = _auth(_plugin(tmp_path, body)).auth_flow(httpx.Request("GET", "https://k/api"))
    request = next(flow)
    assert request.headers["Authorization"] == "Bearer tok"
    x, info = seen.read_text().split(" ", 1)
    assert x == "1"
    assert json.loads(info) == {
        "apiVersion": V1BETA1,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_the_first_request_of_a_connected_client_raises_the_input_error(tmp_path: Path) -> None:
    # lightkube runs the plugin lazily: the error comes from the first request, not connect.
    client = kube.connect(_kubeconfig(tmp_path, _plugin(tmp_path, "exit 4")))
    with pytest.raises(InputError, match="exited with code 4") as err:
        client.get(Namespace, "default")
    assert err.value.file == str(tmp_path / "config")


@pytest.mark.parametrize("command", ["plan", "install-crds"])
def test_commands_exit_2_on_a_failing_plugin(tmp_path: Path, command: str) -> None:
    path = _kubeconfig(tmp_path, _plugin(tmp_path, "echo denied >&2; exit 4"))
    result = CliRunner().invoke(app, [command, "--kubeconfig", str(path)])
    assert result.exit_code == 2, result.output
    assert "field users[u].user.exec" in result.output
    assert "exited with code 4: denied" in result.output
