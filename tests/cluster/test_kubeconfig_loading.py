"""Finding the cluster as kubectl does (``joiner.cluster.kube.kubeconfig.load_config``):
``--kubeconfig``, else ``$KUBECONFIG``'s files merged, else ``~/.kube/config``, else the
in-cluster ServiceAccount; ``--context``; ``--namespace``. No cluster is contacted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from joiner.api.errors import InputError
from joiner.cli.main import app
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.kubeconfig import NoKubeconfigError, load_config


def _kubeconfig(path: Path, name: str, *, current: str | None = None, token_file: str = "") -> Path:
    """A kubeconfig whose context, cluster and user are all called ``name``, its server
    ``https://NAME.example:6443``, its token ``t-NAME`` or read from ``token_file``."""
    user = f"tokenFile: {token_file}" if token_file else f"token: t-{name}"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        + (f"current-context: {current}\n" if current else "")
        + f"clusters:\n- {{name: {name}, cluster: {{server: https://{name}.example:6443}}}}\n"
        + f"users:\n- {{name: {name}, user: {{{user}}}}}\n"
        + f"contexts:\n- {{name: {name}, context: {{cluster: {name}, user: {name}}}}}\n"
    )
    return path


def _home_config(home: Path, name: str) -> Path:
    """``~/.kube/config`` with context ``name`` current."""
    (home / ".kube").mkdir(exist_ok=True)
    return _kubeconfig(home / ".kube" / "config", name, current=name)


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No $KUBECONFIG, an empty home, not in a pod: kubectl finds nothing. Returns home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    return home


def test_kubeconfig_lists_two_files_merged(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go's merge: current-context from the first file that sets it, each context
    from the first file naming it, and the second file's own contexts selectable; a
    relative token file stays relative to the file that holds it; missing files are
    skipped."""
    first = _kubeconfig(tmp_path / "a.yaml", "a", current="a")
    (tmp_path / "sub").mkdir()
    second = _kubeconfig(tmp_path / "sub" / "b.yaml", "b", current="b", token_file="token")
    (tmp_path / "sub" / "token").write_text("t-b")
    # The second file also defines a context "a" pointing elsewhere: the first file wins.
    second.write_text(second.read_text() + "- {name: a, context: {cluster: b, user: b}}\n")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing.yaml'}:{second}")
    loaded = load_config(None)
    assert loaded.origin == f"{first}:{second}"
    assert loaded.config.context_name == "a"
    assert loaded.config.cluster.server == "https://a.example:6443"
    b = load_config(None, "b").config
    assert b.cluster.server == "https://b.example:6443"
    assert b.user is not None and b.user.token_file == str(tmp_path / "sub" / "token")
    # The client built from it talks to the second file's server.
    client = kube.connect(None, context="b")
    assert str(client._client._client.base_url) == "https://b.example:6443"  # type: ignore[attr-defined]


def test_home_kube_config_is_the_fallback(nowhere: Path) -> None:
    _home_config(nowhere, "home")
    loaded = load_config(None)
    assert loaded.origin == str(nowhere / ".kube" / "config")
    assert loaded.config.cluster.server == "https://home.example:6443"


def test_kubeconfig_given_wins_over_the_environment(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "env.yaml", "env", current="env")))
    given = _kubeconfig(tmp_path / "given.yaml", "given", current="given")
    assert load_config(given).config.cluster.server == "https://given.example:6443"
    with pytest.raises(InputError, match="kubeconfig not found"):
        load_config(tmp_path / "absent.yaml")


def test_in_cluster_when_no_file_exists(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_text("not read until a request")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    loaded = load_config(None, service_account_dir=account)  # no namespace file: no error
    assert loaded.origin == "in-cluster"
    assert loaded.config.cluster.server == "https://10.0.0.1:443"
    assert loaded.config.cluster.certificate_auth == str(account / "ca.crt")
    assert loaded.config.user is not None and loaded.config.user.token_file == str(
        account / "token"
    )
    (account / "namespace").write_text("karpenter")
    assert load_config(None, service_account_dir=account).config.user.token == "pod-token"  # type: ignore[union-attr]
    # A kubeconfig file, when there is one, comes first (kubectl's order).
    _home_config(nowhere, "h")
    assert load_config(None, service_account_dir=account).origin.endswith(".kube/config")


def test_nothing_found_names_every_place_tried(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NoKubeconfigError) as exc:
        load_config(None, service_account_dir=tmp_path / "sa")
    text = str(exc.value)
    assert "--kubeconfig (not given)" in text and "$KUBECONFIG (unset)" in text
    assert f"{nowhere / '.kube' / 'config'} (does not exist)" in text
    assert "KUBERNETES_SERVICE_HOST/PORT unset" in text
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'x'}:{tmp_path / 'y'}")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(NoKubeconfigError) as exc:
        load_config(None, service_account_dir=tmp_path / "sa")
    assert f"$KUBECONFIG ({tmp_path / 'x'}, {tmp_path / 'y'}: none exists)" in str(exc.value)
    assert f"no ServiceAccount token at {tmp_path / 'sa' / 'token'}" in str(exc.value)


def test_an_unknown_context_lists_the_contexts(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _kubeconfig(tmp_path / "a.yaml", "a", current="a")
    b = _kubeconfig(tmp_path / "b.yaml", "b")
    monkeypatch.setenv("KUBECONFIG", f"{a}:{b}")
    with pytest.raises(InputError, match=r"context 'zz' not found \(contexts: a, b\)") as exc:
        load_config(None, "zz")
    assert exc.value.field == "--context" and exc.value.file == f"{a}:{b}"
    result = CliRunner().invoke(app, ["plan", "--context", "zz"])
    assert result.exit_code == 2
    assert "context 'zz' not found (contexts: a, b)" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("- just a list\n", None, "not a kubeconfig"),
        ("kind: Pod\n", "kind", "not Config"),
        ("clusters: {a: 1}\n", "clusters", "must be a list"),
        ("clusters: [{cluster: {server: x}}]\n", "clusters[0].name", "non-empty string"),
        ("users: [{name: u, user: {token: 5}}]\n", "users[0].user", "Expected `str"),
        ("current-context: [a]\n", "current-context", "must be a context name"),
        (
            "current-context: c\ncontexts: [{name: c, context: {cluster: gone}}]\n",
            "contexts[c].cluster",
            "cluster 'gone', which is not defined",
        ),
    ],
)
def test_a_file_that_is_not_a_kubeconfig_names_file_and_field(
    tmp_path: Path, text: str, field: str | None, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as exc:
        load_config(path)
    assert exc.value.file == str(path)
    assert exc.value.field == field


def test_a_missing_file_the_context_names_is_named(tmp_path: Path) -> None:
    """lightkube failed on a missing CA with "[Errno 2] No such file or directory", naming
    neither the file nor the field."""
    path = tmp_path / "kc.yaml"
    path.write_text(
        "current-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://k', certificate-authority: ca.pem}}]\n"
        "contexts: [{name: c, context: {cluster: k}}]\n"
    )
    with pytest.raises(InputError, match=f"{tmp_path / 'ca.pem'} does not exist") as exc:
        kube.connect(path)
    assert exc.value.file == str(path)
    assert exc.value.field == "clusters[k].certificate-authority"


def _options(command: click.Command) -> set[str]:
    return {opt for p in command.params for opt in getattr(p, "opts", [])}


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def test_every_command_that_takes_a_kubeconfig_takes_a_context() -> None:
    commands = _commands(typer.main.get_command(app))  # type: ignore[arg-type]
    cluster = {n: c for n, c in commands.items() if "--kubeconfig" in _options(c)}
    assert set(cluster) >= {"plan", "advise", "disrupt", "import", "install-crds", "run"}
    assert [n for n, c in cluster.items() if "--context" not in _options(c)] == []
    # --namespace where a command reads namespaced objects to plan over (docs/reference/cli.md).
    assert {n for n, c in cluster.items() if "--namespace" in _options(c)} == {"plan", "advise"}


class _Recording:
    """A fake lightkube client: records the namespace of every list, answers nothing."""

    def __init__(self) -> None:
        self.namespaces: dict[str, Any] = {}

    def list(self, resource: type, **kwargs: Any) -> list[Any]:
        self.namespaces[resource.__name__] = kwargs.get("namespace")
        return []


def test_namespace_restricts_the_namespaced_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightkube import ALL_NS

    from joiner.operator.live import read_cluster

    fake = _Recording()
    monkeypatch.setattr(kube, "connect", lambda *_a, **_k: fake)
    ms = read_cluster(tmp_path / "kc", namespace="team-a")
    assert fake.namespaces["Pod"] == "team-a"
    assert fake.namespaces["Deployment"] == "team-a"
    assert fake.namespaces["PodDisruptionBudget"] == "team-a"
    assert fake.namespaces["Node"] is None and fake.namespaces["NodePool"] is None
    assert any("read namespace team-a only" in w for w in ms.warnings)
    everything = _Recording()
    monkeypatch.setattr(kube, "connect", lambda *_a, **_k: everything)
    read_cluster(tmp_path / "kc")
    assert everything.namespaces["Pod"] is ALL_NS
    # The command passes -n down.
    cli = _Recording()
    monkeypatch.setattr(kube, "connect", lambda *_a, **_k: cli)
    result = CliRunner().invoke(app, ["plan", "--kubeconfig", str(tmp_path / "kc"), "-n", "x"])
    assert result.exit_code == 0, result.output
    assert cli.namespaces["Pod"] == "x" and cli.namespaces["StorageClass"] is None


def test_files_and_a_cluster_option_together_are_refused(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    for flag, value in (("--context", "a"), ("-n", "team-a")):
        result = CliRunner().invoke(app, ["plan", "-f", str(dump), flag, value])
        assert result.exit_code == 2
        assert "not both" in result.output


def test_a_kubeconfig_variable_listing_no_file_says_so(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", ":::")
    with pytest.raises(NoKubeconfigError) as exc:
        load_config(None, service_account_dir=tmp_path / "sa")
    assert "$KUBECONFIG lists no file" in str(exc.value)
    assert "none exists" not in str(exc.value)


@pytest.mark.parametrize(
    ("where", "field"),
    [
        (
            "cluster: {server: 'https://k:6443', certificate-authority-data: '!!!notbase64'}",
            "clusters[k].certificate-authority-data",
        ),
        (
            "user: {client-certificate-data: 'abcde', client-key-data: 'QQ=='}",
            "users[u].client-certificate-data",
        ),
        (
            "user: {client-certificate-data: 'QQ==', client-key-data: 'abcde'}",
            "users[u].client-key-data",
        ),
    ],
)
def test_data_that_is_not_base64_names_its_field(tmp_path: Path, where: str, field: str) -> None:
    cluster = where if where.startswith("cluster:") else "cluster: {server: 'https://k:6443'}"
    user = where if where.startswith("user:") else "user: {token: t}"
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- {{name: k, {cluster}}}\n"
        f"users:\n- {{name: u, {user}}}\n"
        "contexts:\n- {name: c, context: {cluster: k, user: u}}\n"
    )
    with pytest.raises(InputError, match="not base64") as exc:
        load_config(path)
    assert exc.value.file == str(path)
    assert exc.value.field == field


@pytest.mark.parametrize("found_by", ["$KUBECONFIG", "~/.kube/config", "--kubeconfig"])
def test_an_unreachable_server_names_the_file_and_how_it_was_found(
    tmp_path: Path, nowhere: Path, monkeypatch: pytest.MonkeyPatch, found_by: str
) -> None:
    if found_by == "~/.kube/config":
        path = _home_config(nowhere, "c")
    else:
        path = _kubeconfig(tmp_path / "kc", "c", current="c")
    path.write_text(path.read_text().replace("https://c.example:6443", "https://127.0.0.1:1"))
    if found_by == "$KUBECONFIG":
        monkeypatch.setenv("KUBECONFIG", str(path))
    args = ["--kubeconfig", str(path)] if found_by == "--kubeconfig" else []
    result = CliRunner().invoke(app, ["plan", *args])
    flat = " ".join(result.output.split())
    assert result.exit_code == 2, flat
    assert f"error: {path} (from {found_by}): cannot reach the API server" in flat, flat
    assert "field --kubeconfig" not in flat
