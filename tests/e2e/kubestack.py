"""A real Kubernetes control plane for end-to-end tests, started on loopback.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built from pinned Go
modules by ``tools/kube-stack/build.sh`` into a versioned cache outside the repository, run
as child processes in a temporary directory (on tmpfs when ``/dev/shm`` is writable) with
free loopback ports, a throw-away CA, a static token file and a service-account key.

It is test infrastructure, not part of the product: nothing in ``joiner/`` imports it.

Run it by hand to measure start-up or to poke at a cluster::

    python tests/e2e/kubestack.py [--hold]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "tools" / "kube-stack" / "build.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
#: kwok renews a Lease in kube-node-lease for each of its Nodes (the node-heartbeat-with-lease
#: stage expects it); without Leases the node lifecycle controller marks the Nodes NotReady
#: once ``NODE_MONITOR_GRACE_SECONDS`` pass without a renewal. The kubelet's defaults (and
#: kwokctl's) are a 40 s Lease and a 50 s grace; the stack keeps that 4:5 ratio at 16 s and
#: 20 s, so a test that checks Nodes stay Ready past the grace period waits 30 s, not 60 s.
#: The grace still covers a kube-apiserver restart (about 10 s down) plus one renewal.
KWOK_NODE_LEASE_SECONDS = 16
#: kube-controller-manager ``--node-monitor-grace-period`` (default 50 s; see above).
NODE_MONITOR_GRACE_SECONDS = 20
#: kube-controller-manager ``--node-monitor-period`` (its default): how often the node
#: lifecycle controller checks the heartbeats.
NODE_MONITOR_PERIOD_SECONDS = 5
#: The apiserver's audit policy: every write (Metadata level: who, verb, object, user agent),
#: no reads. Tests read ``KubeStack.audit_log`` to see who wrote what, and when.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
"""


class KubeStackError(RuntimeError):
    """The stack could not be built, started or stopped; the message says which part."""


@dataclass(frozen=True)
class StackPaths:
    """Where build.sh puts the binaries and kwok's stage documents."""

    bin_dir: Path
    kwok_stages: Path

    def missing(self) -> list[str]:
        """Names of the binaries (and the stage file) not present yet."""
        absent = [name for name in BINARIES if not os.access(self.bin_dir / name, os.X_OK)]
        if not self.kwok_stages.is_file():
            absent.append(self.kwok_stages.name)
        return absent


def stack_paths() -> StackPaths:
    """Ask build.sh where its cache is (honours ``JOINER_KUBE_STACK_CACHE``).

    Raises:
        KubeStackError: build.sh is missing or failed.
    """
    if not BUILD_SCRIPT.is_file():
        raise KubeStackError(f"{BUILD_SCRIPT} not found")
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print-bin-dir"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise KubeStackError(f"{BUILD_SCRIPT} --print-bin-dir failed: {proc.stderr.strip()}")
    bin_dir = Path(proc.stdout.strip())
    return StackPaths(bin_dir=bin_dir, kwok_stages=bin_dir.parent / "etc" / "kwok-stages.yaml")


def run_build_script(script: Path, log_file: Path, timeout_s: float) -> None:
    """Run one of tools/kube-stack's build scripts with its output in ``log_file``.

    Raises:
        KubeStackError: it failed or did not finish in ``timeout_s``; the message has the
            log's tail.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("wb") as out:
        try:
            proc = subprocess.run(
                ["bash", str(script)],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise KubeStackError(
                f"{script} did not finish in {timeout_s:.0f} s:\n{_tail(log_file)}"
            ) from exc
    if proc.returncode != 0:
        raise KubeStackError(
            f"{script} failed (exit {proc.returncode}); log {log_file}:\n{_tail(log_file)}"
        )


def print_bin_dir(script: Path) -> Path:
    """The bin directory a build script writes to (its ``--print-bin-dir``; no build).

    Raises:
        KubeStackError: the script failed.
    """
    proc = subprocess.run(
        ["bash", str(script), "--print-bin-dir"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise KubeStackError(f"{script} --print-bin-dir failed: {proc.stderr.strip()}")
    return Path(proc.stdout.strip())


def build_stack(log_file: Path, timeout_s: float = 3600.0) -> StackPaths:
    """Run build.sh (a no-op taking about a second when the cache is warm).

    A cold build on 2 cores takes tens of minutes; see tools/kube-stack/README.md.

    Args:
        log_file: where the build's output goes.
        timeout_s: give up after this many seconds.

    Raises:
        KubeStackError: the build failed or timed out; the message has the log's tail.
    """
    run_build_script(BUILD_SCRIPT, log_file, timeout_s)
    paths = stack_paths()
    if missing := paths.missing():
        raise KubeStackError(f"{BUILD_SCRIPT} succeeded but {missing} are missing")
    return paths


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise KubeStackError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def make_pki(directory: Path) -> None:
    """Write a CA, an apiserver serving certificate and a service-account key (P-256).

    Files: ``ca.crt``/``ca.key``, ``apiserver.crt``/``apiserver.key`` (SANs 127.0.0.1,
    localhost, the kubernetes Service names and 10.0.0.1), ``sa.key``. Valid for one day.

    Raises:
        KubeStackError: openssl is missing or failed.
    """
    if shutil.which("openssl") is None:
        raise KubeStackError("the openssl command is needed to make the test stack's certificates")
    directory.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
        "-subj", "/CN=joiner-e2e-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "req", *ec, "-keyout", "apiserver.key", "-out", "apiserver.csr",
        "-subj", "/CN=kube-apiserver", cwd=directory,
    )  # fmt: skip
    (directory / "apiserver.ext").write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local\n"
    )
    _openssl(
        "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "apiserver.crt", "-days", "1", "-extfile", "apiserver.ext",
        cwd=directory,
    )  # fmt: skip
    # SEC1 ("EC PRIVATE KEY"): --service-account-key-file reads public keys from it, and
    # that parser does not accept PKCS#8.
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=directory)


@dataclass
class _Component:
    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None


@dataclass
class Identity:
    """A static-token user of the test apiserver."""

    user: str
    groups: tuple[str, ...]
    token: str = field(default_factory=lambda: secrets.token_hex(16))


class KubeStack:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok on loopback.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. After start,
    :attr:`kubeconfig` is an admin (``system:masters``) kubeconfig. kwok manages only Nodes
    annotated ``kwok.x-k8s.io/node: fake`` and uses kwok's default stages (Nodes become
    Ready with the capacity they were created with; bound pods become Running).
    """

    def __init__(self, paths: StackPaths, workdir: Path | None = None, keep: bool = False):
        """Prepare a stack; nothing starts until :meth:`start`.

        Args:
            paths: the built binaries (see :func:`build_stack`).
            workdir: directory for certificates, data and logs; a fresh temporary one by
                default (under /dev/shm when writable), removed by :meth:`stop` unless
                ``keep``.
            keep: leave the work directory (logs) in place after stop.

        Raises:
            KubeStackError: binaries are missing.
        """
        if missing := paths.missing():
            raise KubeStackError(f"kube-stack binaries missing in {paths.bin_dir}: {missing}")
        self.paths = paths
        self._own_workdir = workdir is None
        if workdir is None:
            shm = Path("/dev/shm")
            base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
            workdir = Path(tempfile.mkdtemp(prefix="joiner-kube-", dir=base))
        self.workdir = workdir
        self.keep = keep
        self.admin = Identity("joiner-e2e-admin", ("system:masters",))
        self.identities = {
            "admin": self.admin,
            # The scheduler runs with its own identity under the bootstrap RBAC policy.
            "kube-scheduler": Identity("system:kube-scheduler", ()),
            # Without --use-service-account-credentials every controller acts as the
            # controller manager, whose bootstrap role is meant for the per-controller
            # accounts; masters keeps the stack simple.
            "kube-controller-manager": Identity(
                "system:kube-controller-manager", ("system:masters",)
            ),
            "kwok": Identity("kwok-controller", ("system:masters",)),
        }
        self.api_port = 0
        self.server = ""
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        #: JSON lines, one audit event per write (``AUDIT_POLICY``).
        self.audit_log = self.workdir / "logs" / "audit.log"
        self._apiserver: _Component | None = None
        self._apiserver_ready: tuple[str, ssl.SSLContext, dict[str, str]] | None = None
        self.timings: dict[str, float] = {}
        self._components: list[_Component] = []

    def __enter__(self) -> KubeStack:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- start ---------------------------------------------------------------------------

    def start(self, timeout_s: float = 90.0) -> None:
        """Start every component and wait until each reports healthy.

        ``timings`` then holds seconds from the call to each component's readiness
        (``total`` for the whole stack).

        Args:
            timeout_s: per component, seconds to wait for its health endpoint.

        Raises:
            KubeStackError: a component exited or did not become healthy in time; the
                message has its log's tail. Everything already started is stopped.
        """
        t0 = time.monotonic()
        try:
            self._start(t0, timeout_s)
        except BaseException:
            self.stop(remove=False)
            raise
        self.timings["total"] = time.monotonic() - t0

    def _start(self, t0: float, timeout_s: float) -> None:
        pki = self.workdir / "pki"
        make_pki(pki)
        self.timings["pki"] = time.monotonic() - t0
        ca_data = (pki / "ca.crt").read_bytes()

        etcd_port, peer_port = _free_port(), _free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd = self._spawn(
            "etcd",
            [
                "--name=e2e",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait(etcd, timeout_s, f"{etcd_url}/health")
        self.timings["etcd"] = time.monotonic() - t0

        tokens = self.workdir / "tokens.csv"
        tokens.write_text(
            "".join(
                f'{i.token},{i.user},{i.user},"{",".join(i.groups)}"\n'
                for i in self.identities.values()
            )
        )
        tokens.chmod(0o600)
        self.api_port = _free_port()
        self.server = f"https://127.0.0.1:{self.api_port}"
        audit_policy = self.workdir / "audit-policy.yaml"
        audit_policy.write_text(AUDIT_POLICY)
        apiserver = self._apiserver = self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={tokens}",
                f"--service-account-key-file={pki / 'sa.key'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                # No token controller mounts ServiceAccount tokens into kwok pods.
                "--disable-admission-plugins=ServiceAccount",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                f"--audit-policy-file={audit_policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
            ],
        )
        ctx = ssl.create_default_context(cadata=ca_data.decode())
        auth = {"Authorization": f"Bearer {self.admin.token}"}
        self._apiserver_ready = (f"{self.server}/readyz", ctx, auth)
        self._wait(apiserver, timeout_s, f"{self.server}/readyz", ctx=ctx, headers=auth)
        self.timings["kube-apiserver"] = time.monotonic() - t0

        kubeconfigs = {
            name: self._write_kubeconfig(name, identity, ca_data)
            for name, identity in self.identities.items()
        }
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # the components' self-signed serving certs

        kcm_port = _free_port()
        kcm = self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={kubeconfigs['kube-controller-manager']}",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                "--leader-elect=false",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                "--controllers=*",
                f"--node-monitor-grace-period={NODE_MONITOR_GRACE_SECONDS}s",
                f"--node-monitor-period={NODE_MONITOR_PERIOD_SECONDS}s",
                "--concurrent-deployment-syncs=5",
            ],
        )
        sched_port = _free_port()
        scheduler = self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={kubeconfigs['kube-scheduler']}",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
                "--leader-elect=false",
            ],
        )
        kwok_port = _free_port()
        kwok = self._spawn(
            "kwok",
            [
                f"--kubeconfig={kubeconfigs['kwok']}",
                f"--config={self.paths.kwok_stages}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                f"--node-lease-duration-seconds={KWOK_NODE_LEASE_SECONDS}",
                f"--server-address=127.0.0.1:{kwok_port}",
            ],
        )
        for component, url in (
            (kcm, f"https://127.0.0.1:{kcm_port}/healthz"),
            (scheduler, f"https://127.0.0.1:{sched_port}/healthz"),
            (kwok, f"http://127.0.0.1:{kwok_port}/healthz"),
        ):
            self._wait(component, timeout_s, url, ctx=insecure)
            self.timings[component.name] = time.monotonic() - t0

    def _spawn(self, name: str, args: list[str]) -> _Component:
        log = self.workdir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        component = _Component(name, [str(self.paths.bin_dir / name), *args], log)
        self._popen(component)
        self._components.append(component)
        return component

    def _popen(self, component: _Component) -> None:
        with component.log.open("ab") as out:
            component.proc = subprocess.Popen(
                component.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,  # a Ctrl-C in the test run does not hit it first
            )

    def restart_apiserver(self, down_s: float, timeout_s: float = 90.0) -> float:
        """Kill kube-apiserver (SIGKILL: a graceful SIGTERM keeps serving open watches for
        up to 60 s), keep it down for ``down_s`` seconds, start it again on the same port
        and wait until it is ready (about 5 s more on a 2-core machine).

        Returns the seconds it was unavailable (from the kill until ``/readyz`` is 200).

        Raises:
            KubeStackError: the stack is not running, or the server did not come back.
        """
        component = self._apiserver
        if component is None or component.proc is None or self._apiserver_ready is None:
            raise KubeStackError("kube-apiserver is not running")
        stopped_at = time.monotonic()
        component.proc.kill()
        component.proc.wait(timeout=30)
        time.sleep(max(0.0, down_s - (time.monotonic() - stopped_at)))
        self._popen(component)
        url, ctx, headers = self._apiserver_ready
        self._wait(component, timeout_s, url, ctx=ctx, headers=headers)
        return time.monotonic() - stopped_at

    @contextlib.contextmanager
    def frozen(self, name: str) -> Iterator[None]:
        """Stop the component ``name`` (SIGSTOP: its sockets stay open, nothing answers)
        for the ``with`` block, then resume it (SIGCONT), also when the block raises.

        Raises:
            KubeStackError: no such component is running.
        """
        procs = [c.proc for c in self._components if c.name == name and c.proc is not None]
        if not procs or procs[0].poll() is not None:
            raise KubeStackError(f"{name} is not running")
        proc = procs[0]
        proc.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            proc.send_signal(signal.SIGCONT)

    def _wait(
        self,
        component: _Component,
        timeout_s: float,
        url: str,
        ctx: ssl.SSLContext | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Poll ``url`` every 0.1 s until it answers 200, failing fast if the process exits."""
        assert component.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = component.proc.poll()
            if code is not None:
                raise KubeStackError(
                    f"{component.name} exited with {code}; {component.log}:\n{_tail(component.log)}"
                )
            if _get(url, ctx=ctx, headers=headers) == 200:
                return
            time.sleep(0.1)
        raise KubeStackError(
            f"{component.name} not healthy after {timeout_s:.0f} s; "
            f"{component.log}:\n{_tail(component.log)}"
        )

    def _write_kubeconfig(self, name: str, identity: Identity, ca_data: bytes) -> Path:
        path = self.kubeconfig if name == "admin" else self.workdir / f"{name}.kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "joiner-e2e",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(ca_data).decode(),
                    },
                }
            ],
            "users": [{"name": identity.user, "user": {"token": identity.token}}],
            "contexts": [
                {
                    "name": "joiner-e2e",
                    "context": {
                        "cluster": "joiner-e2e",
                        "user": identity.user,
                        "namespace": "default",
                    },
                }
            ],
            "current-context": "joiner-e2e",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    def pids(self) -> dict[str, int]:
        """Process id of each running component, by name."""
        return {c.name: c.proc.pid for c in self._components if c.proc is not None}

    def alive(self) -> dict[str, bool]:
        """Whether each component started still runs (``pid_alive``), by name."""
        return {name: pid_alive(pid) for name, pid in self.pids().items()}

    # -- stop ----------------------------------------------------------------------------

    def stop(self, timeout_s: float = 15.0, remove: bool = True) -> None:
        """Stop the components in reverse start order: SIGTERM, then SIGKILL.

        Args:
            timeout_s: seconds each component gets to exit after SIGTERM.
            remove: delete the work directory (when this stack created it and ``keep`` is
                false).

        Raises:
            KubeStackError: a component survived SIGKILL (should not happen).
        """
        stuck: list[str] = []
        for component in reversed(self._components):
            proc = component.proc
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    stuck.append(f"{component.name} (pid {proc.pid})")
        self._components.clear()
        if remove and self._own_workdir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=False)
        if stuck:
            raise KubeStackError(f"could not stop {', '.join(stuck)}")


def _get(
    url: str, ctx: ssl.SSLContext | None = None, headers: dict[str, str] | None = None
) -> int | None:
    """Status code of a GET, or None when nothing answers yet (connection refused, reset)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=ctx) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM handler: behave as Ctrl-C does (the stack is stopped on the way out)."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """Build if needed, start the stack, print its timings and kubeconfig, then stop.

    With ``--hold`` it keeps running until interrupted (Ctrl-C or SIGTERM); either stops
    every component and removes the work directory (``--keep`` leaves it, for the logs).
    """
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--hold", action="store_true", help="keep running until Ctrl-C/SIGTERM")
    parser.add_argument("--keep", action="store_true", help="leave the work directory (logs)")
    args = parser.parse_args(argv)
    # The components run in sessions of their own (a Ctrl-C in a test run does not reach
    # them first), so a SIGTERM to this process must stop them: handle it as Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    paths = stack_paths()
    if paths.missing():
        paths = build_stack(paths.bin_dir.parent / "build.log")
    stack = KubeStack(paths, keep=args.keep)
    try:
        stack.start()
        for name, seconds in stack.timings.items():
            print(f"{name:>24}: {seconds:6.2f} s")
        print(f"kubeconfig: {stack.kubeconfig}")
        print(f"workdir: {stack.workdir}")
        print("pids: " + " ".join(f"{n}={p}" for n, p in stack.pids().items()), flush=True)
        if args.hold:
            print("running; Ctrl-C or SIGTERM stops it", flush=True)
            signal.pause()
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM, at any point (even before the pause): stop as below.
        print("interrupted; stopping", flush=True)
    finally:
        # A second signal must not cut the shutdown short and orphan components.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists (a zombie counts as gone: it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
