"""``joiner import --kubeconfig K --context C``: the client talks to the named context."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.cluster.kube.client import IMPORT_KINDS, PLAN_KINDS, connect

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: a
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
"""


def _server(client: object) -> str:
    return str(client._client._client.base_url)  # type: ignore[attr-defined]


def test_context_selects_the_server(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    assert _server(connect(path)) == "https://a.example:6443"
    assert _server(connect(path, context="b")) == "https://b.example:6443"
    with pytest.raises(InputError, match=r"Context 'zz' not found \(contexts: a, b\)"):
        connect(path, context="zz")


def test_import_reads_cronjobs_besides_the_plans_kinds() -> None:
    assert [k.kind for k in IMPORT_KINDS] == [*(k.kind for k in PLAN_KINDS), "CronJob"]
