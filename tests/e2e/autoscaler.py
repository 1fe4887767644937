"""The real Cluster Autoscaler (its kwok cloud provider) running against the end-to-end test
stack.

``tools/kube-stack/build-autoscaler.sh`` builds it (``go build -tags kwok``) from the upstream
source archive beside the repository into the stack's cache. :class:`ClusterAutoscaler`
runs the binary as a child process with the admin kubeconfig, leader election off, the kwok
provider in local mode (``KWOK_PROVIDER_MODE=local``: the kubeconfig, not an in-cluster
service account) reading its configuration and template Nodes from ConfigMaps in its own
namespace (``--namespace`` and ``POD_NAMESPACE``: the priority expander's ConfigMap and the
status ConfigMap are there too, so several can run side by side), and its metrics and
health server on a loopback port.

It is test infrastructure, not part of the product: nothing in ``joiner/`` imports it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

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

BUILD_SCRIPT = REPO_ROOT / "tools" / "kube-stack" / "build-autoscaler.sh"
#: The upstream tag the archive holds (tools/kube-stack/build-autoscaler.sh checks its hash).
VERSION = "1.36.1"
#: Cluster Autoscaler flags by the names Joiner's Scenario gives them (camelCase).
FLAG_NAMES = {
    "scanInterval": "scan-interval",
    "newPodScaleUpDelay": "new-pod-scale-up-delay",
    "expander": "expander",
    "balanceSimilarNodeGroups": "balance-similar-node-groups",
    "scaleDownUtilizationThreshold": "scale-down-utilization-threshold",
    "scaleDownUnneededTime": "scale-down-unneeded-time",
    "scaleDownDelayAfterAdd": "scale-down-delay-after-add",
    "scaleDownDelayAfterDelete": "scale-down-delay-after-delete",
    "scaleDownDelayAfterFailure": "scale-down-delay-after-failure",
    "maxNodeProvisionTime": "max-node-provision-time",
    "skipNodesWithSystemPods": "skip-nodes-with-system-pods",
    "skipNodesWithLocalStorage": "skip-nodes-with-local-storage",
    "maxScaleDownParallelism": "max-scale-down-parallelism",
    "maxDrainParallelism": "max-drain-parallelism",
    "blockingSystemPodDisruptionTimeout": "blocking-system-pod-distruption-timeout",
    "maxNodesTotal": "max-nodes-total",
    "coresTotal": "cores-total",
    "memoryTotal": "memory-total",
}


def autoscaler_binary() -> Path:
    """Where build-autoscaler.sh puts the binary (no build).

    Raises:
        KubeStackError: the script failed.
    """
    return print_bin_dir(BUILD_SCRIPT) / "cluster-autoscaler"


def build_autoscaler(log_file: Path, timeout_s: float = 3600.0) -> Path:
    """Run build-autoscaler.sh (about 0.1 s when the stamp matches; ~10 min cold).

    Raises:
        KubeStackError: the build failed or timed out; the message has the log's tail.
    """
    run_build_script(BUILD_SCRIPT, log_file, timeout_s)
    binary = autoscaler_binary()
    if not os.access(binary, os.X_OK):
        raise KubeStackError(f"{BUILD_SCRIPT} succeeded but {binary} is missing")
    return binary


def flag_args(flags: Mapping[str, object]) -> list[str]:
    """Command-line flags from Scenario-style names (booleans as ``true``/``false``).

    Raises:
        KeyError: a name with no Cluster Autoscaler flag here.
    """
    out = []
    for name, value in sorted(flags.items()):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"--{FLAG_NAMES[name]}={text}")
    return out


class ClusterAutoscaler:
    """A running Cluster Autoscaler (kwok provider); use as a context manager."""

    def __init__(
        self,
        stack: KubeStack,
        binary: Path,
        flags: Mapping[str, object],
        *,
        log: Path,
        namespace: str = "kube-system",
    ) -> None:
        self.stack = stack
        self.namespace = namespace
        self.binary = binary
        self.flags = dict(flags)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def __enter__(self) -> ClusterAutoscaler:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 90.0) -> None:
        """Start it and wait until ``/health-check`` answers 200.

        Raises:
            KubeStackError: the process exited or was not healthy in time (with the log's
                tail).
        """
        self.port = _free_port()
        env = {
            **os.environ,
            "KUBECONFIG": str(self.stack.kubeconfig),
            "KWOK_PROVIDER_MODE": "local",
            "POD_NAMESPACE": self.namespace,
        }
        args = [
            str(self.binary),
            "--cloud-provider=kwok",
            f"--kubeconfig={self.stack.kubeconfig}",
            f"--namespace={self.namespace}",
            "--leader-elect=false",
            f"--address=127.0.0.1:{self.port}",
            "--logtostderr=true",
            "--v=4",
            *flag_args(self.flags),
        ]
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"\n--- {' '.join(args[1:])}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                args,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.stack.workdir,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/health-check"
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise KubeStackError(f"cluster-autoscaler exited with {code}:\n{_tail(self.log)}")
            if _get(url) == 200:
                return
            time.sleep(0.2)
        self.stop()
        raise KubeStackError(
            f"cluster-autoscaler not healthy after {timeout_s:.0f} s:\n{_tail(self.log)}"
        )

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): its loop sees nothing until ``resume``."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused process run again (SIGCONT); it picks up where it was."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s`` (a paused process is resumed first)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
