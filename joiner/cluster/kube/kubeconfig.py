"""Finding the cluster as kubectl does: ``--kubeconfig`` if given, else the files
``$KUBECONFIG`` lists (merged), else ``~/.kube/config``, else the in-cluster ServiceAccount;
``--context`` picks a context of the merged configuration.

The rules are client-go's (``tools/clientcmd/loader.go`` ``NewDefaultClientConfigLoadingRules``
and ``ClientConfigLoadingRules.Load``; ``merged_client_builder.go``
``DeferredLoadingClientConfig.ClientConfig`` for the in-cluster fallback). lightkube's
``KubeConfig.from_env`` reads one file and tries the ServiceAccount first, so the list and
its merge are done here; lightkube's models check each entry and its
``KubeConfig.from_service_account`` reads the ServiceAccount.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import signal
import subprocess
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
from lightkube import KubeConfig
from lightkube.config.kubeconfig import SingleConfig, to_mapping
from lightkube.config.models import Cluster, Context, User, UserExec
from lightkube.core.exceptions import ConfigError

from joiner.api.errors import InputError
from joiner.api.printable import printable

#: Where a pod's ServiceAccount token, CA and namespace are mounted (client-go
#: ``rest/config.go`` ``InClusterConfig``).
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

#: The kubeconfig's lists: (list key, entry key, lightkube model).
_SECTIONS: tuple[tuple[str, str, type], ...] = (
    ("clusters", "cluster", Cluster),
    ("contexts", "context", Context),
    ("users", "user", User),
)


class NoKubeconfigError(InputError):
    """No kubeconfig file exists where kubectl looks and the process is not in a pod; the
    message names every place tried."""


@dataclass
class _File:
    """One kubeconfig file's entries by name (relative paths made absolute) and its
    ``current-context`` ("" when unset)."""

    path: Path
    current_context: str = ""
    entries: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"clusters": {}, "contexts": {}, "users": {}}
    )


@dataclass(frozen=True)
class LoadedConfig:
    """The context chosen (a lightkube ``SingleConfig``) and where it came from: the files
    read, joined by ``:``, or ``in-cluster``; ``found_by`` says how they were found
    (``--kubeconfig``, ``$KUBECONFIG``, ``~/.kube/config`` or ``in-cluster``)."""

    config: SingleConfig
    origin: str
    found_by: str = "--kubeconfig"

    @property
    def described(self) -> str:
        """``origin`` with how it was found, for messages: ``/p/config (from $KUBECONFIG)``."""
        if self.found_by == "in-cluster":
            return "in-cluster ServiceAccount"
        return f"{self.origin} (from {self.found_by})"


def load_config(
    kubeconfig: Path | str | None,
    context: str | None = None,
    *,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> LoadedConfig:
    """The configuration kubectl would use: ``kubeconfig`` alone if given (it must exist);
    else the files ``$KUBECONFIG`` lists (``os.pathsep``-separated; missing ones skipped)
    merged, the first file to name a cluster, context or user winning and
    ``current-context`` from the first file that sets it; else ``$HOME/.kube/config``;
    else, with no ``context`` asked for, the in-cluster ServiceAccount when
    ``KUBERNETES_SERVICE_HOST``/``PORT`` are set and its token exists.

    Raises:
        NoKubeconfigError: none of those exists (every place tried is named).
        InputError: a file is unreadable or not a kubeconfig (file and field named), the
            context is unknown (the contexts that exist are named), or its cluster or user
            is missing.
    """
    if kubeconfig is not None:
        files, found_by = [_read(Path(kubeconfig))], "--kubeconfig"
    else:
        files = [_read(p) for p in _precedence() if p.exists()]
        found_by = "$KUBECONFIG" if os.environ.get("KUBECONFIG") else "~/.kube/config"
    if not files:
        if context is None and _in_cluster_possible(service_account_dir):
            config = _in_cluster(service_account_dir)
            loaded = LoadedConfig(config, "in-cluster", "in-cluster")
        else:
            raise NoKubeconfigError(_nothing_found(context, service_account_dir))
    else:
        config, origin = _select(files, context)
        loaded = LoadedConfig(config, origin, found_by)
    _check_files(loaded)
    _check_data(loaded)
    return loaded


def _credential_fields(loaded: LoadedConfig, *, data: bool) -> list[tuple[str, str | None]]:
    """The selected context's CA, client certificate and key as ``(field, value)``: their
    ``-data`` forms if ``data``, else the file paths and the user's ``tokenFile``."""
    single = loaded.config
    suffix = "-data" if data else ""
    cluster, user = single.cluster, single.user
    named = [
        (
            f"clusters[{single.context.cluster}].certificate-authority{suffix}",
            cluster.certificate_auth_data if data else cluster.certificate_auth,
        )
    ]
    if user is not None:
        where = f"users[{single.context.user}]"
        named += [
            (
                f"{where}.client-certificate{suffix}",
                user.client_cert_data if data else user.client_cert,
            ),
            (f"{where}.client-key{suffix}", user.client_key_data if data else user.client_key),
        ]
        if not data:
            named.append((f"{where}.tokenFile", user.token_file))
    return named


def _check_data(loaded: LoadedConfig) -> None:
    """Refuse a context whose ``certificate-authority-data``, ``client-certificate-data``
    or ``client-key-data`` is not base64 (lightkube ``config/models.py`` ``FileStr``
    decodes them with ``base64.b64decode``; its error names no field).

    Raises:
        InputError: naming the field that is not base64.
    """
    for field_name, value in _credential_fields(loaded, data=True):
        if not value:
            continue
        try:
            base64.b64decode(value)
        except binascii.Error as exc:
            raise InputError(
                f"context {loaded.config.context_name!r}: not base64-encoded PEM data ({exc})",
                file=loaded.origin,
                field=field_name,
            ) from exc


def _check_files(loaded: LoadedConfig) -> None:
    """Refuse a context whose CA, client certificate or key, or token file does not exist
    (lightkube would fail on it with an error naming neither the file nor the field).

    Raises:
        InputError: naming the missing file and the field that names it.
    """
    for field_name, value in _credential_fields(loaded, data=False):
        if value and not Path(value).is_file():
            raise InputError(
                f"context {loaded.config.context_name!r}: {value} does not exist or is not a file",
                file=loaded.origin,
                field=field_name,
            )


def _precedence() -> list[Path]:
    """The files kubectl reads without ``--kubeconfig``: ``$KUBECONFIG``'s, each once, in
    order (client-go ``tools/clientcmd/loader.go`` ``NewDefaultClientConfigLoadingRules``),
    else ``~/.kube/config``."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p) for p in dict.fromkeys(listed.split(os.pathsep)) if p]
    return [Path.home() / ".kube" / "config"]


def _read(path: Path) -> _File:
    """One kubeconfig file, each entry checked against lightkube's models.

    Raises:
        InputError: unreadable, not YAML, or not a kubeconfig (file and field named).
    """
    from joiner.api.manifests.yamlio import parse_documents, read_text

    name = str(path)
    docs = parse_documents(read_text(path, what="kubeconfig"), name)
    if not docs:
        return _File(path)  # client-go reads an empty file as an empty configuration
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("not a kubeconfig (one YAML mapping, kind: Config)", file=name)
    doc = docs[0]
    if doc.get("kind", "Config") != "Config":
        raise InputError(f"kind is {doc.get('kind')!r}, not Config", file=name, field="kind")
    current = doc.get("current-context") or ""
    if not isinstance(current, str):
        raise InputError("must be a context name", file=name, field="current-context")
    found = _File(path, current)
    for key, entry_key, model in _SECTIONS:
        for i, item in enumerate(_entries(doc, key, name)):
            found.entries[key].setdefault(*_entry(item, f"{key}[{i}]", entry_key, model, path))
    return found


def _entries(doc: Mapping[str, Any], key: str, name: str) -> list[Any]:
    """The list under ``key`` (absent or null: none).

    Raises:
        InputError: not a list.
    """
    items = doc.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise InputError("must be a list", file=name, field=key)
    return items


def _entry(item: Any, where: str, key: str, model: type, path: Path) -> tuple[str, Any]:
    """An entry (``{name: N, cluster: {...}}``) as its name and lightkube model, with
    relative file paths made absolute against the file's directory (client-go
    ``tools/clientcmd/loader.go`` ``ResolveLocalPaths``), so entries merged from several
    files keep their own base.

    Raises:
        InputError: not a mapping, no name, or a body lightkube's model refuses.
    """
    name = str(path)
    if not isinstance(item, dict):
        raise InputError("must be a mapping with name and " + key, file=name, field=where)
    entry_name = item.get("name")
    if not isinstance(entry_name, str) or not entry_name:
        raise InputError("must be a non-empty string", file=name, field=f"{where}.name")
    body = item.get(key)
    if not isinstance(body, dict):
        raise InputError("must be a mapping", file=name, field=f"{where}.{key}")
    try:
        value = to_mapping([{"name": entry_name, key: body}], key, model)[entry_name]
    except ValueError as exc:  # msgspec's ValidationError: a field of the wrong type
        raise InputError(str(exc), file=name, field=f"{where}.{key}") from exc
    _absolute(value, path.parent)
    return entry_name, value


def _absolute(value: Any, base: Path) -> None:
    """Make ``value``'s file paths absolute against ``base``, in place (client-go
    ``tools/clientcmd/loader.go`` ``GetClusterFileReferences``,
    ``GetAuthInfoFileReferences``: a CA, a client certificate and key, a token file, and an
    exec command that names a path)."""

    def resolve(p: str | None) -> str | None:
        return str(base.absolute() / p) if p and not Path(p).is_absolute() else p

    if isinstance(value, Cluster):
        value.certificate_auth = resolve(value.certificate_auth)
    elif isinstance(value, User):
        value.client_cert = resolve(value.client_cert)
        value.client_key = resolve(value.client_key)
        value.token_file = resolve(value.token_file)
        if value.exec is not None and os.sep in value.exec.command:
            value.exec.command = str(resolve(value.exec.command))


def _select(files: list[_File], context: str | None) -> tuple[SingleConfig, str]:
    """The merged files' context ``context`` (None: the current one) with its cluster and
    user, and the files' names joined by ``:`` (client-go ``tools/clientcmd/loader.go``
    ``ClientConfigLoadingRules.Load``: the first file to set a map entry or
    ``current-context`` wins).

    Raises:
        InputError: no context chosen, an unknown context (those that exist are named), or
            its cluster or user missing.
    """
    origin = ":".join(str(f.path) for f in files)
    merged: dict[str, dict[str, Any]] = {key: {} for key, _, _ in _SECTIONS}
    for f in files:
        for key, entries in f.entries.items():
            for name, value in entries.items():
                merged[key].setdefault(name, value)
    current = next((f.current_context for f in files if f.current_context), "")
    name = context if context is not None else current
    known = ", ".join(sorted(merged["contexts"])) or "none"
    if not name:
        raise InputError(
            f"no current-context is set; give --context (contexts: {known})",
            file=origin,
            field="current-context",
        )
    ctx = merged["contexts"].get(name)
    if ctx is None:
        raise InputError(
            f"context {name!r} not found (contexts: {known})",
            file=origin,
            field="--context" if context is not None else "current-context",
        )
    return _single(name, ctx, merged, origin), origin


def _single(name: str, ctx: Context, merged: dict[str, dict[str, Any]], origin: str) -> Any:
    """Context ``name`` with its cluster and user, as lightkube's ``KubeConfig.get`` builds it.

    Raises:
        InputError: the context's cluster or user is not defined.
    """
    for key, ref in (("clusters", ctx.cluster), ("users", ctx.user)):
        if ref and ref not in merged[key]:
            known = ", ".join(sorted(merged[key])) or "none"
            raise InputError(
                f"context {name!r} names {key[:-1]} {ref!r}, which is not defined ({key}: {known})",
                file=origin,
                field=f"contexts[{name}].{key[:-1]}",
            )
    if not ctx.cluster:
        raise InputError(
            f"context {name!r} names no cluster", file=origin, field=f"contexts[{name}].cluster"
        )
    config = KubeConfig(
        clusters=merged["clusters"],
        contexts=merged["contexts"],
        users=merged["users"],
        current_context=name,
    )
    return config.get()


def _in_cluster_possible(service_account_dir: Path) -> bool:
    """Whether the process runs in a pod (client-go ``tools/clientcmd/client_config.go``
    ``inClusterClientConfig.Possible``):
    ``KUBERNETES_SERVICE_HOST`` and ``_PORT`` set and the ServiceAccount token a file."""
    return (
        bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        and bool(os.environ.get("KUBERNETES_SERVICE_PORT"))
        and (service_account_dir / "token").is_file()
    )


def _in_cluster(service_account_dir: Path) -> Any:
    """The pod's ServiceAccount configuration (lightkube ``KubeConfig.from_service_account``;
    a missing ``namespace`` file is no error, as in client-go ``rest/config.go``
    ``InClusterConfig``:
    Joiner names namespaces itself).

    Raises:
        InputError: the token cannot be read.
    """
    try:
        return KubeConfig.from_service_account(service_account_dir).get()
    except ConfigError:
        if not (service_account_dir / "namespace").exists():
            return _in_cluster_without_namespace(service_account_dir)
        raise
    except OSError as exc:
        raise InputError(
            f"cannot read the ServiceAccount token: {exc.strerror or exc}",
            file=str(service_account_dir / "token"),
        ) from exc


def _in_cluster_without_namespace(service_account_dir: Path) -> Any:
    """``_in_cluster`` when the ServiceAccount has no ``namespace`` file."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ["KUBERNETES_SERVICE_PORT"]
    token_file = str(service_account_dir / "token")
    cluster = Cluster(
        server=f"https://{f'[{host}]' if ':' in host else host}:{port}",
        certificate_auth=str(service_account_dir / "ca.crt"),
    )
    return KubeConfig.from_one(cluster=cluster, user=User(token_file=token_file)).get()


def _nothing_found(context: str | None, service_account_dir: Path) -> str:
    """The places tried, for ``NoKubeconfigError``."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        files = ", ".join(str(p) for p in _precedence())
        found = f"$KUBECONFIG ({files}: none exists)" if files else "$KUBECONFIG lists no file"
        tried = ["--kubeconfig (not given)", found]
    else:
        home = Path.home() / ".kube" / "config"
        tried = ["--kubeconfig (not given)", "$KUBECONFIG (unset)", f"{home} (does not exist)"]
    if context is not None:
        tried.append(f"in-cluster (has no contexts, and --context {context} was given)")
    elif not (
        os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
    ):
        tried.append("in-cluster (KUBERNETES_SERVICE_HOST/PORT unset: not in a pod)")
    else:
        tried.append(f"in-cluster (no ServiceAccount token at {service_account_dir / 'token'})")
    return "no kubeconfig found; tried " + ", ".join(tried)


#: How long an exec credential plugin (``users[].user.exec``) may run, in seconds. client-go
#: (``plugin/pkg/client/auth/exec/exec.go`` ``Authenticator.refreshCredsLocked``) waits for
#: the plugin without a limit; Joiner stops it after this long so a stuck plugin (a login
#: prompt with no terminal, an unreachable identity provider) fails the command instead of
#: hanging it.
EXEC_PLUGIN_TIMEOUT_S = 60.0

#: The ExecCredential API versions client-go accepts (``plugin/pkg/client/auth/exec/exec.go``
#: ``apiVersions``) plus v1alpha1, which lightkube still accepts.
_EXEC_API_VERSIONS = frozenset(
    f"client.authentication.k8s.io/{v}" for v in ("v1alpha1", "v1beta1", "v1")
)


class ExecCredentialAuth(httpx.Auth):
    """Bearer-token authentication from a kubeconfig exec credential plugin, in place of
    lightkube's ``ExecAuth`` (which waits for the plugin without a limit and lets its
    failures out as tracebacks). The plugin runs before the first request and again when
    the API server answers 401, as in lightkube and client-go
    (``plugin/pkg/client/auth/exec/exec.go`` ``Authenticator.refreshCredsLocked``).

    ``file`` and ``user`` name the kubeconfig and the user entry for messages; the plugin
    is stopped after ``timeout_s`` seconds.

    Raises (from a request):
        InputError: the plugin could not be started, timed out, exited non-zero, or printed
            something other than an ExecCredential with ``status.token``.
    """

    def __init__(
        self,
        exec_config: UserExec,
        *,
        file: str,
        user: str,
        timeout_s: float = EXEC_PLUGIN_TIMEOUT_S,
    ) -> None:
        self._exec = exec_config
        self._file = file
        self._field = f"users[{user}].user.exec"
        self._timeout_s = timeout_s
        self._bearer: str | None = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Send ``request`` with the cached token; run the plugin first when there is none
        or the server answered 401."""
        if self._bearer:
            request.headers["Authorization"] = self._bearer
            response = yield request
            if response.status_code != 401:
                return
        self._bearer = f"Bearer {self.token()}"
        request.headers["Authorization"] = self._bearer
        yield request

    def token(self) -> str:
        """Run the plugin and return its ``status.token``.

        Raises:
            InputError: as for the class (file and field named).
        """
        return _token_of(self._run(), self._exec.apiVersion, self._error)

    def _error(self, message: str) -> InputError:
        return InputError(
            f"the exec credential plugin {printable(self._exec.command)!r} {message}",
            file=self._file,
            field=self._field,
        )

    def _run(self) -> bytes:
        """The plugin's stdout (client-go ``exec.go`` ``refreshCredsLocked``: the
        environment plus ``env`` plus ``KUBERNETES_EXEC_INFO``, no stdin as with
        ``interactiveMode: Never``)."""
        api_version = self._exec.apiVersion
        if api_version not in _EXEC_API_VERSIONS:
            raise self._error(
                f"has apiVersion {api_version!r}; expected one of "
                + ", ".join(sorted(_EXEC_API_VERSIONS))
            )
        env = dict(os.environ)
        env.update((v.name, v.value) for v in self._exec.env or [])
        info = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
        env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        command = [self._exec.command, *(self._exec.args or [])]
        try:
            return _run_bounded(command, env, self._timeout_s, self._error)
        except OSError as exc:
            raise self._error(f"could not be started: {exc.strerror or exc}") from exc


def _run_bounded(command: list[str], env: dict[str, str], timeout_s: float, error: Any) -> bytes:
    """``command``'s stdout; it runs in its own process group, killed whole after
    ``timeout_s`` seconds (so a shell's children cannot keep the pipes open).

    Raises:
        OSError: the command cannot be started.
        InputError: from ``error`` (a message to an ``InputError``): timed out or non-zero.
    """
    proc = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise error(f"did not finish within {timeout_s:g} s; it was stopped") from exc
    if proc.returncode != 0:
        lines = stderr.decode(errors="replace").strip().splitlines()
        said = f": {printable(lines[0], keep_newlines=False)}" if lines else " (stderr empty)"
        how = (
            f"was killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else (f"exited with code {proc.returncode}")
        )
        raise error(f"{how}{said}")
    return stdout


def _token_of(stdout: bytes, api_version: str, error: Any) -> str:
    """``status.token`` of the ExecCredential the plugin printed (client-go ``exec.go``
    ``refreshCredsLocked``: the same apiVersion, a ``status``, a token).

    Raises:
        InputError: from ``error``: not JSON, not an object, another apiVersion, no status,
            or no token (client certificates from a plugin are not modelled).
    """
    text = stdout.decode(errors="replace").strip()
    first = printable(text.splitlines()[0], keep_newlines=False)[:80] if text else ""
    try:
        cred = json.loads(text)
    except ValueError as exc:
        raise error(f"printed {first!r}, not an ExecCredential JSON object") from exc
    if not isinstance(cred, dict):
        raise error(f"printed a JSON {type(cred).__name__}, not an ExecCredential object")
    if cred.get("apiVersion", api_version) != api_version:
        got = printable(str(cred.get("apiVersion")), keep_newlines=False)
        raise error(f"returned apiVersion {got!r}; the kubeconfig asks for {api_version!r}")
    status = cred.get("status")
    if not isinstance(status, dict):
        raise error("returned an ExecCredential without a status object")
    token = status.get("token")
    if not isinstance(token, str) or not token:
        raise error("returned no status.token (client certificates from a plugin are not modelled)")
    return token
