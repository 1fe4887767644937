"""Helpers for the controller-mode end-to-end tests: ``joiner run`` as a subprocess, an
isolated NodePool and namespace per test, and polling.

Each test gets a namespace and a NodePool of the same name (``c-<hex>``); its pods select
that NodePool, so tests sharing the session's cluster never use each other's nodes. At the
end, the controller is stopped and the test's Nodes, NodeClaims, NodePool and namespace
are deleted.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.types import PatchType

T = TypeVar("T")
NodePoolRes = create_global_resource("karpenter.sh", "v1", "NodePool", "nodepools")
NodeClaimRes = create_global_resource("karpenter.sh", "v1", "NodeClaim", "nodeclaims")
EC2NodeClassRes = create_global_resource(
    "karpenter.k8s.aws", "v1", "EC2NodeClass", "ec2nodeclasses"
)
NODEPOOL_LABEL = "karpenter.sh/nodepool"
REPO = Path(__file__).resolve().parents[2]

#: Requirements of the tests' NodePools.
ON_DEMAND_4CPU = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c6a"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4"]},
]
SPOT_OR_OD = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["9"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
]

SPOT_4CPU = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c6a"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "In", "values": ["4"]},
]


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 90.0) -> T:
    """Poll ``probe`` every 0.5 s until it returns something other than None or False.

    Raises:
        AssertionError: not within ``timeout_s`` seconds; names ``what`` and the last value.
    """
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ControllerProcess:
    """``joiner run`` in a subprocess, its log in ``workdir/<name>.log``."""

    def __init__(
        self,
        kubeconfig: Path,
        workdir: Path,
        name: str,
        settings: dict[str, Any],
        *,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.name = name
        self.log = workdir / f"{name}.log"
        self.settings_file = workdir / f"{name}.settings.yaml"
        self.settings_file.write_text(yaml.safe_dump(settings))
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.extra = extra
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ControllerProcess:
        """Start it (returns at once)."""
        args = [
            sys.executable,
            "-c",
            "from joiner.cli.main import main; main()",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--settings",
            str(self.settings_file),
            "--metrics-port",
            str(self.metrics_port),
            "--health-port",
            str(self.health_port),
            "--identity",
            self.name,
            # Required: the stack's Nodes are kwok's, so the simulated cloud may run here.
            *(() if "--cloud" in self.extra else ("--cloud", "simulated")),
            *self.extra,
        ]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                cwd=REPO,
            )
        return self

    def http(self, path: str, port: int | None = None) -> tuple[int, str]:
        """(status, body) of GET ``path`` on the metrics (default) or given port."""
        url = f"http://127.0.0.1:{port or self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except OSError:
            return 0, ""

    def ready(self) -> bool:
        """``/readyz`` answers 200 (informers synced, controllers started)."""
        return self.http("/readyz", self.health_port)[0] == 200

    def leading(self) -> bool:
        """``joiner_leader`` is 1: it holds the Lease and its controllers run."""
        status, body = self.http("/metrics")
        return status == 200 and metric(body, "joiner_leader") == 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL (a crash: no lease release)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 20 s; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def tail(self, lines: int = 60) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def nodepool_doc(name: str, *, requirements: list[dict[str, Any]], **disruption: Any) -> dict:
    """A NodePool ``name`` of the shared ``e2e`` EC2NodeClass; pods select it by name."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"e2e": name}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "e2e",
                    },
                    "requirements": requirements,
                },
            },
            "disruption": {"consolidateAfter": "0s", **disruption},
        },
    }


NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "e2e"},
    "spec": {
        "role": "KarpenterNodeRole-e2e",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "e2e"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "e2e"}}],
    },
}


def deployment_doc(
    name: str, namespace: str, pool: str, replicas: int, cpu: str = "1"
) -> dict[str, Any]:
    """A Deployment whose pods request ``cpu`` and 256Mi and select NodePool ``pool``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {NODEPOOL_LABEL: pool},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.invalid/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                        }
                    ],
                },
            },
        },
    }


class Cluster:
    """A test's view of the cluster: its namespace and NodePool (same name)."""

    def __init__(self, client: Client, name: str) -> None:
        self.client = client
        self.name = name

    def apply(self, doc: dict[str, Any]) -> None:
        from lightkube.codecs import from_dict

        obj = from_dict(doc) if doc["kind"] not in ("NodePool", "EC2NodeClass") else None
        if obj is None:
            res = NodePoolRes if doc["kind"] == "NodePool" else EC2NodeClassRes
            obj = res.from_dict(doc)
        self.client.apply(obj, force=True)

    def nodeclaims(self) -> list[Any]:
        return [
            c
            for c in self.client.list(NodeClaimRes)
            if (c.metadata.labels or {}).get(NODEPOOL_LABEL) == self.name
        ]

    def nodes(self) -> list[Node]:
        return list(self.client.list(Node, labels={NODEPOOL_LABEL: self.name}))

    def pods(self, app: str | None = None) -> list[Pod]:
        return [
            p
            for p in self.client.list(Pod, namespace=self.name)
            if app is None or (p.metadata.labels or {}).get("app") == app
        ]

    def running(self, app: str, count: int) -> list[Pod] | None:
        """The ``count`` pods of ``app``, when exactly that many exist and all run bound."""
        pods = [p for p in self.pods(app) if p.metadata.deletionTimestamp is None]
        if len(pods) != count:
            return None
        ok = all(p.spec.nodeName and p.status.phase == "Running" for p in pods)
        return pods if ok else None

    def scale(self, app: str, replicas: int) -> None:
        self.client.patch(
            Deployment,
            app,
            {"spec": {"replicas": replicas}},
            namespace=self.name,
            patch_type=PatchType.MERGE,
        )

    def consistent(self) -> tuple[set[str], set[str]] | None:
        """(NodeClaim names, Node names) when every NodeClaim of the pool has its Node (by
        providerID and status.nodeName) and every Node of the pool its NodeClaim."""
        claims = self.nodeclaims()
        nodes = {n.metadata.name: n for n in self.nodes()}
        by_provider = {n.spec.providerID: name for name, n in nodes.items()}
        matched = set()
        for c in claims:
            pid = (c.get("status") or {}).get("providerID")
            if pid not in by_provider:
                return None
            matched.add(by_provider[pid])
        if matched != set(nodes):
            return None
        return {c.metadata.name for c in claims}, set(nodes)

    def cleanup(self) -> None:
        """Delete the test's Nodes, NodeClaims, NodePool and namespace (their
        ``karpenter.sh/termination`` finalizers removed: no controller runs any more)."""
        release = {"metadata": {"finalizers": None}}
        for c in self.nodeclaims():
            name = c.metadata.name
            _ignore_404(lambda name=name: self.client.delete(NodeClaimRes, name))
            _ignore_404(
                lambda name=name: self.client.patch(
                    NodeClaimRes, name, release, patch_type=PatchType.MERGE
                )
            )
        for n in self.nodes():
            name = n.metadata.name
            _ignore_404(lambda name=name: self.client.delete(Node, name))
            _ignore_404(
                lambda name=name: self.client.patch(Node, name, release, patch_type=PatchType.MERGE)
            )
        _ignore_404(lambda: self.client.delete(NodePoolRes, self.name))
        _ignore_404(lambda: self.client.delete(Namespace, self.name))


def _ignore_404(fn: Callable[[], object]) -> None:
    try:
        fn()
    except ApiError as exc:
        if exc.status.code != 404:
            raise


def new_name() -> str:
    return f"c-{secrets.token_hex(3)}"


def events(client: Client, namespace: str) -> list[Any]:
    from lightkube.resources.core_v1 import Event

    return list(client.list(Event, namespace=namespace))


def service_account_token(client: Client, name: str, namespace: str) -> str:
    """A one-hour token for ServiceAccount ``namespace/name`` (TokenRequest API), what the
    kubelet would mount into its pod."""
    from lightkube.models.authentication_v1 import TokenRequestSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ServiceAccount

    request = ServiceAccount.Token(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=TokenRequestSpec(audiences=[], expirationSeconds=3600),
    )
    return str(client.create(request, name=name, namespace=namespace).status.token)


def token_kubeconfig(admin_kubeconfig: Path, token: str, path: Path) -> Path:
    """A copy of the admin kubeconfig that authenticates with ``token`` instead."""
    config = yaml.safe_load(admin_kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def metric(body: str, name: str) -> float:
    """Sum of the samples of metric ``name`` in a Prometheus exposition."""
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            head, _, value = line.rpartition(" ")
            if head.split("{", 1)[0] == name:
                total += float(value)
    return total


def joiner(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the ``joiner`` CLI in a subprocess."""
    return subprocess.run(
        [sys.executable, "-c", "from joiner.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        check=check,
        cwd=REPO,
        timeout=300,
    )


def lease(cluster: Cluster, duration_s: int, deadline_s: int, retry_s: int) -> dict[str, object]:
    """``leaderElection`` settings: the Lease ``joiner`` in the test's namespace with these
    lease duration, renew deadline and retry period (seconds)."""
    return {
        "namespace": cluster.name,
        "name": "joiner",
        "leaseDurationSeconds": duration_s,
        "renewDeadlineSeconds": deadline_s,
        "retryPeriodSeconds": retry_s,
    }


def settings(cluster: Cluster, **extra: object) -> dict[str, object]:
    """Settings with a fast Lease in the test's namespace."""
    return {
        "leaderElection": {
            "namespace": cluster.name,
            "name": "joiner",
            "leaseDurationSeconds": 6,
            "renewDeadlineSeconds": 4,
            "retryPeriodSeconds": 1,
        },
        **extra,
    }


def launch(
    controllers: list[ControllerProcess],
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    name: str = "joiner-a",
    **kw: object,
) -> ControllerProcess:
    """Start ``joiner run`` as ``name`` with ``settings(cluster, **kw)`` (``extra``: more
    arguments, ``env``: more environment) and return at once; ``started`` waits for it."""
    extra = kw.pop("extra", ())
    env = kw.pop("env", None)
    proc = ControllerProcess(
        kubeconfig,
        tmp_path,
        name,
        settings(cluster, **kw),
        extra=tuple(extra),  # type: ignore[arg-type]
        env=env,  # type: ignore[arg-type]
    )
    controllers.append(proc.start())
    return proc


def started(proc: ControllerProcess, *, leader: bool = True) -> ControllerProcess:
    """Wait until ``proc`` is ready and, with ``leader``, leading (failing with its log's
    tail if it exits first)."""
    name = proc.name
    wait_for(f"{name} ready", lambda: proc.ready() or (not proc.alive() and proc.tail()), 60)
    assert proc.alive(), proc.tail()
    if leader:
        wait_for(f"{name} leading", lambda: proc.leading() or (not proc.alive() and proc.tail()))
        assert proc.alive(), proc.tail()
    return proc


def start(
    controllers: list[ControllerProcess],
    kubeconfig: Path,
    tmp_path: Path,
    cluster: Cluster,
    name: str = "joiner-a",
    *,
    leader: bool = True,
    **kw: object,
) -> ControllerProcess:
    """``launch`` then ``started``: returns once it is ready and, with ``leader``, leading."""
    return started(launch(controllers, kubeconfig, tmp_path, cluster, name, **kw), leader=leader)


def audit_events(audit_log: Path, identity: str, since: datetime) -> list[dict[str, Any]]:
    """The apiserver's audit events (``KubeStack.audit_log``, one write each) from the
    replica ``identity`` (user agent ``joiner/<version> (<identity>)``) received at or
    after ``since``."""
    out = []
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if not str(event.get("userAgent", "")).endswith(f"({identity})"):
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if received >= since:
            out.append(event)
    return out
