"""The lightkube client, Karpenter's custom resources as lightkube generic resources, CRD
installation, and listing a live cluster as manifest documents for the loader.

Objects listed from the API become plain dicts with ``apiVersion`` and ``kind`` (a list's
items carry neither), so ``joiner.api.manifests.loader.load_documents`` reads them exactly
as it reads files.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
from lightkube import ALL_NS, Client
from lightkube.config.client_adapter import ExecAuth
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.core.resource import NamespacedResource, Resource
from lightkube.generic_resource import create_global_resource
from lightkube.models.meta_v1 import Status
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import DaemonSet, Deployment, ReplicaSet, StatefulSet
from lightkube.resources.batch_v1 import CronJob, Job
from lightkube.resources.core_v1 import (
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.resources.storage_v1 import StorageClass

from joiner.api.errors import InputError
from joiner.cluster.kube.crds import crd_documents
from joiner.cluster.kube.kubeconfig import ExecCredentialAuth, load_config

log = logging.getLogger(__name__)

#: Field manager of every write (server-side apply and patches).
FIELD_MANAGER = "joiner"

NodePoolResource = create_global_resource("karpenter.sh", "v1", "NodePool", "nodepools")
NodeClaimResource = create_global_resource("karpenter.sh", "v1", "NodeClaim", "nodeclaims")
EC2NodeClassResource = create_global_resource(
    "karpenter.k8s.aws", "v1", "EC2NodeClass", "ec2nodeclasses"
)
KWOKNodeClassResource = create_global_resource(
    "karpenter.kwok.sh", "v1alpha1", "KWOKNodeClass", "kwoknodeclasses"
)
NodeOverlayResource = create_global_resource(
    "karpenter.sh", "v1alpha1", "NodeOverlay", "nodeoverlays"
)


@dataclass(frozen=True)
class Kind:
    """A kind the controller lists and watches: its lightkube resource and the
    ``apiVersion``/``kind`` its items get for the loader."""

    resource: type[Resource]
    api_version: str
    kind: str


#: Kinds read from the cluster (NodeClaims are Joiner's own, read separately).
NODEPOOL = Kind(NodePoolResource, "karpenter.sh/v1", "NodePool")
EC2NODECLASS = Kind(EC2NodeClassResource, "karpenter.k8s.aws/v1", "EC2NodeClass")
NODECLAIM = Kind(NodeClaimResource, "karpenter.sh/v1", "NodeClaim")
#: Karpenter-kwok's NodeClass (read with ``--kwok-instance-types``).
KWOKNODECLASS = Kind(KWOKNodeClassResource, "karpenter.kwok.sh/v1alpha1", "KWOKNodeClass")
#: Karpenter's NodeOverlay (read with the ``NodeOverlay`` feature gate on).
NODEOVERLAY = Kind(NodeOverlayResource, "karpenter.sh/v1alpha1", "NodeOverlay")
POD = Kind(Pod, "v1", "Pod")
NODE = Kind(Node, "v1", "Node")
DAEMONSET = Kind(DaemonSet, "apps/v1", "DaemonSet")
PDB = Kind(PodDisruptionBudget, "policy/v1", "PodDisruptionBudget")
PVC = Kind(PersistentVolumeClaim, "v1", "PersistentVolumeClaim")
PV = Kind(PersistentVolume, "v1", "PersistentVolume")
STORAGECLASS = Kind(StorageClass, "storage.k8s.io/v1", "StorageClass")
#: What ``joiner plan``/``disrupt``/``advise --kubeconfig`` read (workloads add missing
#: replicas): the kinds docs/guides/your-cluster.md has a dump list, so a cluster read live
#: and its dump give one answer. NodeClaims too: one launched whose Node has not registered
#: holds its pods' room (Karpenter pkg/controllers/state/cluster.go UpdateNodeClaim tracks
#: NodeClaims before their Nodes).
PLAN_KINDS = (
    NODEPOOL,
    EC2NODECLASS,
    NODECLAIM,
    Kind(Node, "v1", "Node"),
    POD,
    Kind(Deployment, "apps/v1", "Deployment"),
    Kind(ReplicaSet, "apps/v1", "ReplicaSet"),
    Kind(StatefulSet, "apps/v1", "StatefulSet"),
    Kind(Job, "batch/v1", "Job"),
    DAEMONSET,
    PDB,
    PVC,
    PV,
    STORAGECLASS,
    # Workload templates name PriorityClasses; admission resolves them (api.manifests.priority).
    Kind(PriorityClass, "scheduling.k8s.io/v1", "PriorityClass"),
)
#: What ``joiner import --kubeconfig`` reads: the plan's kinds and the CronJobs whose runs
#: the history replays.
IMPORT_KINDS = (*PLAN_KINDS, Kind(CronJob, "batch/v1", "CronJob"))


def connect(
    kubeconfig: Path | str | None,
    *,
    timeout_s: float = 30.0,
    user_agent: str | None = None,
    context: str | None = None,
) -> Client:
    """A lightkube client for the cluster kubectl would talk to: the one composition point
    of every command's cluster client. ``kubeconfig`` (``--kubeconfig``) if given, else
    ``$KUBECONFIG``'s files merged, else ``~/.kube/config``, else the in-cluster
    ServiceAccount (``kubeconfig.load_config``); ``context`` (``--context``) names the
    context to use instead of the current one. Each request times out after ``timeout_s``;
    ``user_agent`` (such as ``joiner/0.1 (replica-a)``) is sent as ``User-Agent``, so the
    API server's audit log tells replicas apart.

    Raises:
        InputError: no configuration found (the places tried are named), a file is missing
            or not a kubeconfig, the context is unknown (the contexts are named), its
            server is not an http(s) URL, or its credentials cannot be used.
    """
    loaded = load_config(kubeconfig, context)
    single, where = loaded.config, loaded.origin
    server = str(getattr(single.cluster, "server", "") or "")
    try:
        url = httpx.URL(server)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise InputError(
            f"context {single.context_name!r}: server {server!r} is not a URL", file=where
        ) from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError(
            f"context {single.context_name!r}: server {server!r} is not an http(s) URL such "
            "as https://127.0.0.1:6443",
            file=where,
        )
    try:
        client = Client(
            config=single, field_manager=FIELD_MANAGER, timeout=httpx.Timeout(timeout_s)
        )
    except (ConfigError, OSError, ValueError) as exc:  # a CA or key file, base64 data
        raise InputError(
            f"context {single.context_name!r}: its credentials cannot be used: {exc}",
            file=where,
        ) from exc
    # lightkube takes no headers and runs exec plugins without a time limit; its httpx
    # client (created eagerly) carries the User-Agent and Joiner's exec authentication.
    http = _http_client(client)
    if user_agent:
        http.headers["User-Agent"] = user_agent
    if isinstance(http.auth, ExecAuth) and single.user is not None and single.user.exec:
        http.auth = ExecCredentialAuth(single.user.exec, file=where, user=single.context.user or "")
    _SOURCES[client] = loaded.described
    _SERVERS[client] = server
    return client


def _http_client(client: Any) -> httpx.Client:
    """The httpx client inside a lightkube ``Client`` (lightkube creates it eagerly)."""
    http = getattr(getattr(client, "_client", None), "_client", None)
    if not isinstance(http, httpx.Client):
        raise RuntimeError("lightkube's HTTP client is not where Joiner expects it")
    return http


#: The HTTP methods by which a client writes to the API server.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def guard_writes(client: Any, check: Callable[[str], None]) -> None:
    """Make ``check(what)`` the last step before each write ``client`` (from ``connect``)
    sends: an httpx request hook, run once the request is built and authenticated, just
    before the transport sends it. ``what`` is ``"PATCH /api/v1/nodes/c-1"``-style. When
    ``check`` raises, the request is not sent and its exception reaches the caller
    (lightkube and ``Answering`` pass it unchanged). Reads (GET, watches) are not checked.

    The fence (``fence.py``) checks at the call too; this check leaves the smallest window
    between the lease's last proof and the bytes leaving the process."""

    def hook(request: httpx.Request) -> None:
        if request.method in WRITE_METHODS:
            check(f"{request.method} {request.url.path}")

    _http_client(client).event_hooks["request"].append(hook)


def server_of(exc: httpx.HTTPError) -> str:
    """The API server a transport error was about (``https://host:port``), or
    ``"the API server"`` when the error carries no request."""
    try:
        url = exc.request.url
    except RuntimeError:  # httpx raises this when the error has no request
        return "the API server"
    return f"{url.scheme}://{url.netloc.decode()}"


#: Where each client ``connect`` built found its cluster (``LoadedConfig.described``).
_SOURCES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
#: The API server each client ``connect`` built talks to, as its kubeconfig names it.
_SERVERS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def server_url(client: Any) -> str:
    """The API server ``client`` (from ``connect``) talks to, as its kubeconfig's
    ``server`` names it (``https://127.0.0.1:6443``); ``"the API server"`` for a client
    built elsewhere."""
    try:
        return _SERVERS.get(client) or "the API server"
    except TypeError:  # not weakly referenceable: not a client connect built
        return "the API server"


def source_of(client: Any) -> str | None:
    """Where ``client`` (from ``connect``) found its cluster, such as
    ``/home/me/.kube/config (from $KUBECONFIG)``; None for a client built elsewhere."""
    try:
        return _SOURCES.get(client)
    except TypeError:  # not weakly referenceable: not a client connect built
        return None


def unreachable(exc: httpx.HTTPError, client: Any = None) -> InputError:
    """An ``InputError`` naming the server a transport error could not reach (or that
    answered with something other than the Kubernetes API's JSON), and the kubeconfig
    ``client`` came from (``--kubeconfig`` when unknown)."""
    where = _where(client)
    if isinstance(exc, httpx.HTTPStatusError):
        return InputError(
            f"{server_of(exc)} did not answer as a Kubernetes API server: {exc}", **where
        )
    return InputError(f"cannot reach the API server {server_of(exc)}: {exc}", **where)


def no_answer(exc: Exception, client: Any, doing: str) -> InputError:
    """The one ``InputError`` of every command that reads or writes the cluster once
    (``plan``, ``advise``, ``disrupt``, ``import``, ``install-crds``) for a request that got
    no Kubernetes answer: a transport error or a status without a Kubernetes Status
    (``unreachable``), or a garbled answer (``garbled``: an error without
    ``Content-Type``, a body that is not JSON) from whatever listens at the kubeconfig's
    server, named (``server_url``) with ``doing`` (such as ``listing v1 Node``) and the
    kubeconfig ``client`` came from. ``ApiError`` (the server's own refusal) is the
    caller's to word."""
    if isinstance(exc, httpx.HTTPError):
        return unreachable(exc, client)
    # lightkube's generic_client.py transform_exception reads the Content-Type header of
    # every error answer (KeyError without one); its decoders raise msgspec's DecodeError
    # (a ValueError) on a body that is not JSON.
    what = f"missing {exc}" if isinstance(exc, KeyError) else f"its body is not JSON: {exc}"
    return InputError(
        f"{doing} got an answer from {server_url(client)} that is not from a Kubernetes API "
        f"server ({what}); check the kubeconfig's server",
        **_where(client),
    )


#: The exceptions of lightkube failing on an answer that is not the API's JSON (``garbled``).
GARBLED = (KeyError, ValueError)
#: What ``no_answer`` words: transport errors and statuses without a Kubernetes Status
#: (``httpx.HTTPError``; ``ApiError`` is one too, so callers catch it first), and garbled
#: answers (``GARBLED``).
NO_ANSWER = (httpx.HTTPError, *GARBLED)


def _where(client: Any) -> dict[str, str]:
    """``InputError`` location for ``client``: the kubeconfig it came from as ``file``, or
    ``field --kubeconfig`` when that is unknown."""
    source = source_of(client)
    return {"file": source} if source else {"field": "--kubeconfig"}


class ApiReachability:
    """Whether the API server answers, as seen by the informers and the leader elector.

    Callers report each request's outcome (``ok`` / ``failed``). The first failure after a
    success is logged once as an ERROR naming the server, and the recovery once as INFO;
    ``healthy()`` turns False once failures have lasted ``threshold_s`` without a success
    in between (``/healthz`` answers 503 then, so a liveness probe restarts the pod).
    Thread-safe.
    """

    def __init__(
        self, threshold_s: float = 30.0, *, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold_s = threshold_s
        self._now = now
        self._lock = threading.Lock()
        self.failing_since: float | None = None

    def ok(self) -> None:
        """A request reached the server (any HTTP answer counts, errors included)."""
        with self._lock:
            if self.failing_since is None:
                return
            down_s = self._now() - self.failing_since
            self.failing_since = None
        log.info("the API server is reachable again (after %.0f s)", down_s)

    def failed(self, exc: httpx.HTTPError) -> None:
        """A request did not reach the server (connection refused, timeout, TLS, ...)."""
        with self._lock:
            if self.failing_since is not None:
                return
            self.failing_since = self._now()
        log.error(
            "cannot reach the API server %s: %s (retrying; /healthz fails after %.0f s)",
            server_of(exc),
            exc,
            self.threshold_s,
        )

    def healthy(self) -> bool:
        """False once the server has been unreachable for ``threshold_s`` or longer."""
        with self._lock:
            since = self.failing_since
        return since is None or self._now() - since < self.threshold_s


#: Status codes of answers that waiting fixes: too many requests, and the server errors a
#: restarting or overloaded API server gives (client-go's ``IsTooManyRequests``,
#: ``IsServerTimeout``, ``IsServiceUnavailable``, ``IsInternalError`` family).
RETRIABLE_CODES = frozenset({429, 500, 502, 503, 504})


def garbled(exc: BaseException) -> bool:
    """Whether ``exc`` is lightkube failing on an answer that is not the API's JSON: an
    error response without ``Content-Type`` (lightkube's ``transform_exception`` raises
    ``KeyError``) or a body it cannot decode (a watch line cut off by a restart). A
    restarting API server (or a proxy in front of it) answers so; waiting fixes it."""
    return isinstance(exc, GARBLED)


def transient(exc: BaseException) -> bool:
    """Whether the request that raised ``exc`` may succeed if retried: a transport error
    (connection refused or reset, timeout, TLS handshake cut short), a ``RETRIABLE_CODES``
    answer (an ``ApiError`` or a non-JSON status), or a garbled answer (``garbled``)."""
    if isinstance(exc, httpx.HTTPStatusError):  # ApiError is one too
        code = exc.status.code if isinstance(exc, ApiError) else exc.response.status_code
        return code in RETRIABLE_CODES
    return isinstance(exc, httpx.HTTPError) or garbled(exc)


def unavailable(exc: BaseException) -> ApiError:
    """A transient failure (``transient``) that carries no Kubernetes Status, as an
    ``ApiError`` with status 503 ``ServiceUnavailable`` naming the server and the cause,
    so callers that handle refusals by status code handle it the same way."""
    server = server_of(exc) if isinstance(exc, httpx.HTTPError) else "the API server"
    message = f"no answer from {server}: {type(exc).__name__}: {exc}"
    return ApiError(status=Status(code=503, reason="ServiceUnavailable", message=message))


class Answering:
    """A lightkube client whose calls raise ``ApiError`` for every failure a caller should
    retry: a transient failure without a Kubernetes Status (``transient``) becomes a 503
    ``ApiError`` (``unavailable``), and reaches ``reachability``. Callers that already
    retry refused writes on their next pass (the actuator, the Event sink) thereby retry
    connection errors too instead of raising them. Other exceptions pass unchanged."""

    def __init__(self, client: Any, reachability: ApiReachability) -> None:
        self._client = client
        self._reachability = reachability

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = attr(*args, **kwargs)
            except ApiError:
                self._reachability.ok()  # the server answered
                raise
            except Exception as exc:
                if not transient(exc):
                    raise
                if isinstance(exc, httpx.HTTPError):
                    self._reachability.failed(exc)
                raise unavailable(exc) from exc
            self._reachability.ok()
            return result

        return call


def namespace_arg(kind: Kind, namespace: str | None = None) -> dict[str, str]:
    """``{"namespace": namespace}`` for a namespaced kind, ``ALL_NS`` when ``namespace`` is
    None (lists and watches span every namespace; lightkube would default to the
    kubeconfig's), ``{}`` for a cluster-scoped kind."""
    if not issubclass(kind.resource, NamespacedResource):
        return {}
    return {"namespace": ALL_NS if namespace is None else namespace}


def as_document(obj: Any, kind: Kind) -> dict[str, Any]:
    """A listed or watched object as a manifest document (a dict with apiVersion/kind)."""
    doc: dict[str, Any] = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    doc["apiVersion"] = kind.api_version
    doc["kind"] = kind.kind
    return doc


def list_documents(
    client: Any, kinds: Iterable[Kind] = PLAN_KINDS, *, namespace: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every object of ``kinds`` in the cluster, as manifest documents, and warnings for
    kinds that could not be listed (a CRD not installed: 404). ``namespace``: namespaced
    kinds are listed in that namespace only (None: all); cluster-scoped ones in full.

    Raises:
        InputError: the API server refused a list (403: the credentials lack RBAC), naming
            the kind and the server's message, or could not be reached (named).
    """
    docs: list[dict[str, Any]] = []
    warnings: list[str] = []
    for kind in kinds:
        try:
            found = list(client.list(kind.resource, **namespace_arg(kind, namespace)))
        except ApiError as exc:
            if exc.status.code != 404:
                raise InputError(
                    f"listing {kind.api_version} {kind.kind} failed: {exc.status.code} "
                    f"{exc.status.message}"
                ) from exc
            warnings.append(f"{kind.api_version} {kind.kind} is not served by this cluster")
            continue
        except NO_ANSWER as exc:
            if not _crd_not_installed(exc, kind):
                raise no_answer(exc, client, f"listing {kind.api_version} {kind.kind}") from exc
            warnings.append(
                f"{kind.api_version} {kind.kind} is not served by this cluster (its CRD is "
                f"not installed): none read"
            )
            continue
        docs.extend(as_document(o, kind) for o in found)
    return docs, warnings


#: API groups of Karpenter's CRDs: a cluster without Karpenter answers their lists 404.
_KARPENTER_GROUPS = frozenset({"karpenter.sh", "karpenter.k8s.aws", "karpenter.kwok.sh"})


def _crd_not_installed(exc: Exception, kind: Kind) -> bool:
    """Whether ``exc`` is the API server's 404 for a Karpenter kind whose CRD is not
    installed. The API server answers a group it does not serve with a plain-text ``404
    page not found`` (not a JSON Status), so lightkube raises ``httpx.HTTPStatusError``
    rather than ``ApiError``."""
    return (
        isinstance(exc, httpx.HTTPStatusError)
        and exc.response.status_code == 404
        and kind.api_version.split("/")[0] in _KARPENTER_GROUPS
    )


#: The label Joiner puts on every CRD it installs (``apply_crds``): the CRD is Joiner's own,
#: whoever applies it next. The chart's ``crds/`` files are Karpenter's, unlabelled.
PART_OF_LABEL = "app.kubernetes.io/part-of"

#: Field managers that are the API server's own bookkeeping, not an installer.
_SERVER_MANAGERS = frozenset({"kube-apiserver", "kube-controller-manager"})

#: The fields of a CRD's spec that define it (the API server defaults others, such as
#: ``conversion``).
_DEFINING = ("group", "names", "scope", "versions")


def _helm_release(meta: Any) -> str | None:
    """The Helm release that owns an object (the ``meta.helm.sh/release-name`` and
    ``-namespace`` annotations Helm 3 sets), named, or None."""
    annotations = dict(meta.annotations or {})
    release = annotations.get("meta.helm.sh/release-name")
    if not release:
        return None
    where = annotations.get("meta.helm.sh/release-namespace")
    return f"Helm release {release}" + (f" in namespace {where}" if where else "")


def foreign_owner(crd: Any) -> str | None:
    """Who else installed this CustomResourceDefinition, or None when only Joiner did.

    Helm is named by its release (``_helm_release``, or ``app.kubernetes.io/managed-by``);
    any other installer by its field manager (``managedFields`` entries on the object
    itself, not its status, from a manager other than ``joiner``).

    A CRD labelled ``app.kubernetes.io/part-of: joiner`` is Joiner's own, whoever applied it
    since: ``apply_crds`` sets that label.
    """
    meta = crd.metadata
    labels = dict(meta.labels or {})
    if labels.get(PART_OF_LABEL) == FIELD_MANAGER:
        return None
    release = _helm_release(meta)
    if release:
        return release
    managed_by = labels.get("app.kubernetes.io/managed-by")
    if managed_by and managed_by != FIELD_MANAGER:
        return f"{managed_by} (label app.kubernetes.io/managed-by)"
    others = sorted(
        {
            f.manager
            for f in meta.managedFields or []
            if f.manager
            and f.manager != FIELD_MANAGER
            and f.manager not in _SERVER_MANAGERS
            and not f.subresource
        }
    )
    return f"field manager {', '.join(others)}" if others else None


def same_definition(crd: Any, doc: dict[str, Any]) -> bool:
    """Whether the installed ``crd`` (a lightkube CustomResourceDefinition) defines what
    ``doc`` (a CRD document) does: equal group, names, scope and versions (schemas,
    printer columns, subresources)."""
    installed = crd.spec.to_dict() if crd.spec is not None else {}
    return all(installed.get(k) == doc["spec"].get(k) for k in _DEFINING)


def _installed(client: Any, name: str) -> Any | None:
    """The CustomResourceDefinition ``name`` as the API server has it, or None (404).

    Raises:
        InputError: the API server refused the read or could not be reached."""
    try:
        return client.get(CustomResourceDefinition, name)
    except ApiError as exc:
        if exc.status.code == 404:
            return None
        raise InputError(
            f"reading CustomResourceDefinition {name}: {exc.status.code} {exc.status.message}"
        ) from exc
    except NO_ANSWER as exc:
        raise no_answer(exc, client, f"reading CustomResourceDefinition {name}") from exc


def _plan_crds(client: Any, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The documents of ``docs`` to apply: those not installed, or installed by Joiner.

    One another installer put there is left as it is when it defines exactly what Joiner
    ships (Karpenter's CRD at the same version: the chart's ``crds/``, as Helm installs them,
    or Karpenter's own chart), unless a Helm release owns it.

    Raises:
        InputError: a CRD another manager installed differs from Joiner's, or a Helm
            release owns it (each named with its owner).
    """
    todo, refused = [], []
    for doc in docs:
        name = str(doc["metadata"]["name"])
        existing = _installed(client, name)
        owner = None if existing is None else foreign_owner(existing)
        if existing is None or owner is None:
            todo.append(doc)
        elif _helm_release(existing.metadata) or not same_definition(existing, doc):
            refused.append(f"{name} (managed by {owner})")
    if refused:
        raise InputError(
            "not installing CRDs that another manager installed: "
            + "; ".join(refused)
            + ". Joiner never overwrites them; run Joiner beside that installation with "
            "`joiner run --dry-run`, or remove them first"
        )
    return todo


def apply_crds(client: Any) -> list[tuple[str, bool]]:
    """Server-side apply the three CRDs (``crds.crd_documents``: Karpenter's own), labelled
    ``app.kubernetes.io/part-of: joiner`` and forcing ownership of the fields Joiner owns;
    returns each CRD's name and whether it was applied (False: another installer's,
    identical, left as it is).

    A CRD that another manager installed (Helm's ``nodepools.karpenter.sh`` of a Karpenter
    install, see ``foreign_owner``) is never overwritten (``_plan_crds``): when one differs
    from Joiner's, nothing is applied at all.

    Raises:
        InputError: a CRD belongs to another manager (each named with its owner); the API
            server refused one (named, with its message) or could not be reached (named).
    """
    docs = crd_documents()
    todo = _plan_crds(client, docs)
    for doc in todo:
        doc["metadata"].setdefault("labels", {})[PART_OF_LABEL] = FIELD_MANAGER
        crd = CustomResourceDefinition.from_dict(doc)
        try:
            client.apply(crd, field_manager=FIELD_MANAGER, force=True)
        except ApiError as exc:
            raise InputError(
                f"the API server refused CustomResourceDefinition {doc['metadata']['name']}: "
                f"{exc.status.code} {exc.status.message}"
            ) from exc
        except NO_ANSWER as exc:
            name = doc["metadata"]["name"]
            raise no_answer(exc, client, f"applying CustomResourceDefinition {name}") from exc
    return [(str(d["metadata"]["name"]), any(d is t for t in todo)) for d in docs]
