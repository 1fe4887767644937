"""The real Karpenter (its kwok cloud provider) running against the end-to-end test stack.

``tools/kube-stack/build-karpenter.sh`` builds ``sigs.k8s.io/karpenter/kwok`` (pinned in
``tools/kube-stack/karpenter/go.mod``) into the stack's cache and copies the CRDs of the same
module version next to it. :class:`Karpenter` installs those CRDs and runs the binary as a
child process with the admin kubeconfig, leader election off and a given instance-types file.

Karpenter's metrics and health servers bind ``:<port>``, every interface, and have no flag
for the address. The project's servers listen on loopback only, so Karpenter runs only in a
private network namespace whose one interface is loopback (``unshare -n``; the whole test
stack then runs in it too): :func:`in_private_netns` is checked before it starts.

It is test infrastructure, not part of the product: nothing in ``joiner/`` imports it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubestack import (
    REPO_ROOT,
    KubeStack,
    KubeStackError,
    _free_port,
    _get,
    _tail,
    print_bin_dir,
    run_build_script,
)

BUILD_SCRIPT = REPO_ROOT / "tools" / "kube-stack" / "build-karpenter.sh"
KARPENTER_GOMOD = REPO_ROOT / "tools" / "kube-stack" / "karpenter" / "go.mod"


def karpenter_version() -> str:
    """The pinned ``sigs.k8s.io/karpenter`` version (from the wrapper module's go.mod)."""
    for line in KARPENTER_GOMOD.read_text().splitlines():
        if line.startswith("require sigs.k8s.io/karpenter "):
            return line.split()[-1]
    raise KubeStackError(f"{KARPENTER_GOMOD} does not require sigs.k8s.io/karpenter")


@dataclass(frozen=True)
class KarpenterPaths:
    """The built binary and the CRD directory."""

    binary: Path
    crds: Path

    def missing(self) -> list[str]:
        """What is not built yet."""
        out = [] if os.access(self.binary, os.X_OK) else [str(self.binary)]
        if not sorted(self.crds.glob("*.yaml")):
            out.append(str(self.crds))
        return out


def karpenter_paths() -> KarpenterPaths:
    """Where build-karpenter.sh puts the binary and the CRDs (no build).

    Raises:
        KubeStackError: the script failed.
    """
    bin_dir = print_bin_dir(BUILD_SCRIPT)
    return KarpenterPaths(bin_dir / "karpenter", bin_dir.parent / "etc" / "karpenter-crds")


def build_karpenter(log_file: Path, timeout_s: float = 3600.0) -> KarpenterPaths:
    """Run build-karpenter.sh (about 0.1 s when the stamp matches; ~4-6 min cold on 2 cores).

    Raises:
        KubeStackError: the build failed or timed out; the message has the log's tail.
    """
    run_build_script(BUILD_SCRIPT, log_file, timeout_s)
    paths = karpenter_paths()
    if missing := paths.missing():
        raise KubeStackError(f"{BUILD_SCRIPT} succeeded but {missing} are missing")
    return paths


def in_private_netns() -> bool:
    """True when loopback is this network namespace's only interface."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    names = {line.split(":", 1)[0].strip() for line in lines}
    return names == {"lo"}


def apply_yaml(stack: KubeStack, documents: list[dict[str, object]]) -> None:
    """Create or replace objects with the admin identity (server-side apply, field manager
    ``joiner-e2e``)."""
    from lightkube import Client, KubeConfig
    from lightkube.codecs import from_dict

    client = Client(KubeConfig.from_file(stack.kubeconfig), field_manager="joiner-e2e")
    for doc in documents:
        client.apply(from_dict(doc), force=True)


def install_crds(stack: KubeStack, paths: KarpenterPaths, timeout_s: float = 60.0) -> list[str]:
    """Install Karpenter's CRDs (of the pinned version) and wait until each is Established.

    Returns the CRD names.

    Raises:
        KubeStackError: a CRD did not become Established in time.
    """
    from lightkube import Client, KubeConfig
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    docs = [
        doc
        for path in sorted(paths.crds.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    apply_yaml(stack, docs)
    client = Client(KubeConfig.from_file(stack.kubeconfig))
    names = [str(d["metadata"]["name"]) for d in docs]  # type: ignore[index]
    deadline = time.monotonic() + timeout_s
    for name in names:
        while True:
            crd = client.get(CustomResourceDefinition, name)
            conditions = crd.status.conditions if crd.status and crd.status.conditions else []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise KubeStackError(f"CRD {name} not Established after {timeout_s:.0f} s")
            time.sleep(0.2)
    return names


class Karpenter:
    """A running Karpenter-kwok controller; use as a context manager or start()/stop()."""

    def __init__(
        self,
        stack: KubeStack,
        paths: KarpenterPaths,
        instance_types_file: Path,
        *,
        log: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.stack = stack
        self.paths = paths
        self.instance_types_file = instance_types_file.resolve()
        self.log = log or stack.workdir / "logs" / "karpenter.log"
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = 0
        self.metrics_port = 0

    def __enter__(self) -> Karpenter:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 90.0) -> None:
        """Start Karpenter and wait until its ``/readyz`` answers 200.

        Raises:
            KubeStackError: not in a private network namespace, the process exited, or it was
                not ready in time (with the log's tail).
        """
        if not in_private_netns():
            raise KubeStackError(
                "Karpenter's metrics and health servers bind every interface; run it in a "
                "private network namespace (unshare -n) so they stay on loopback"
            )
        self.health_port = _free_port()
        self.metrics_port = _free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.stack.kubeconfig),
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "INSTANCE_TYPES_FILE_PATH": str(self.instance_types_file),
            "SYSTEM_NAMESPACE": "kube-system",
            "LOG_LEVEL": "debug",
            **self.extra_env,
        }
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(self.paths.binary)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.stack.workdir,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.health_port}/readyz"
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise KubeStackError(f"karpenter exited with {code}:\n{_tail(self.log)}")
            if _get(url) == 200:
                if b"failed constructing instance types" in self.log.read_bytes():
                    self.stop()
                    raise KubeStackError(
                        f"karpenter could not read {self.instance_types_file}:\n{_tail(self.log)}"
                    )
                return
            time.sleep(0.2)
        self.stop()
        raise KubeStackError(f"karpenter not ready after {timeout_s:.0f} s:\n{_tail(self.log)}")

    def metrics(self) -> str:
        """Karpenter's ``/metrics`` text (Prometheus exposition format).

        Raises:
            KubeStackError: the endpoint did not answer.
        """
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return str(response.read().decode())
        except OSError as exc:
            raise KubeStackError(f"karpenter {url}: {exc}") from exc

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
