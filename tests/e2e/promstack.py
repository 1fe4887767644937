"""kube-state-metrics and Prometheus beside the end-to-end test stack, as a cluster's monitoring.

``tools/kube-stack/build-ksm.sh`` and ``build-prometheus.sh`` build the pinned
``k8s.io/kube-state-metrics/v2`` and ``github.com/prometheus/prometheus`` (``prometheus`` and
``promtool``) into the stack's cache. :class:`MonitoringStack` runs kube-state-metrics against
the test stack's API server (the admin kubeconfig) with the node labels ``joiner import``
reads allowed through ``--metric-labels-allowlist``, and a Prometheus scraping it every
``scrape_interval_s`` seconds from a generated ``prometheus.yml``, its TSDB in a temporary
directory. Both listen on loopback only, on free ports.

It is test infrastructure, not part of the product: nothing in ``joiner/`` imports it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

BUILD_SCRIPTS = (
    REPO_ROOT / "tools" / "kube-stack" / "build-prometheus.sh",
    REPO_ROOT / "tools" / "kube-stack" / "build-ksm.sh",
)
#: The Kubernetes label keys kube-state-metrics copies into ``kube_node_labels`` (it exports
#: none by default): the well-known instance type and zone, Karpenter's capacity type and
#: NodePool, and EKS managed node groups' capacity type and node group. ``joiner import``
#: reads exactly these; docs/guides/last-week.md gives the same flag.
NODE_LABELS = (
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "karpenter.sh/capacity-type",
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/capacityType",
    "eks.amazonaws.com/nodegroup",
)
METRIC_LABELS_ALLOWLIST = f"nodes=[{','.join(NODE_LABELS)}],pods=[app]"


@dataclass(frozen=True)
class MonitoringPaths:
    """The built binaries."""

    prometheus: Path
    promtool: Path
    ksm: Path

    def missing(self) -> list[str]:
        """Paths of the binaries not built yet."""
        return [
            str(p) for p in (self.prometheus, self.promtool, self.ksm) if not os.access(p, os.X_OK)
        ]


def monitoring_paths() -> MonitoringPaths:
    """Where the build scripts put the binaries (no build).

    Raises:
        KubeStackError: a script's ``--print-bin-dir`` failed.
    """
    bin_dir = print_bin_dir(BUILD_SCRIPTS[0])
    return MonitoringPaths(
        bin_dir / "prometheus", bin_dir / "promtool", bin_dir / "kube-state-metrics"
    )


def build_monitoring(log_dir: Path, timeout_s: float = 3600.0) -> MonitoringPaths:
    """Run build-prometheus.sh and build-ksm.sh (about 0.1 s each when their stamps match; a
    cold build of both takes minutes, see tools/kube-stack/README.md).

    Raises:
        KubeStackError: a build failed or timed out; the message has the log's tail.
    """
    deadline = time.monotonic() + timeout_s
    for script in BUILD_SCRIPTS:
        log = log_dir / f"{script.stem}.log"
        run_build_script(script, log, max(1.0, deadline - time.monotonic()))
    paths = monitoring_paths()
    if missing := paths.missing():
        raise KubeStackError(f"{', '.join(s.name for s in BUILD_SCRIPTS)} left {missing} missing")
    return paths


class PrometheusError(KubeStackError):
    """A Prometheus HTTP API call failed or answered with an error."""


@dataclass
class _Process:
    name: str
    args: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None)


class MonitoringStack:
    """kube-state-metrics watching a :class:`KubeStack` and Prometheus scraping it.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. After start,
    :attr:`url` is Prometheus's base URL (``http://127.0.0.1:<port>``) and :meth:`query`
    runs an instant query.
    """

    def __init__(
        self,
        stack: KubeStack,
        paths: MonitoringPaths,
        *,
        scrape_interval_s: int = 2,
        workdir: Path | None = None,
        keep: bool = False,
    ) -> None:
        """Prepare; nothing starts until :meth:`start`.

        Args:
            stack: the running test stack (its admin kubeconfig is used).
            paths: the built binaries (see :func:`build_monitoring`).
            scrape_interval_s: Prometheus's scrape interval for kube-state-metrics, seconds.
            workdir: for prometheus.yml, the TSDB and the logs; a fresh temporary directory
                by default, removed by :meth:`stop` unless ``keep``.
            keep: leave the work directory in place after stop.

        Raises:
            KubeStackError: binaries are missing.
        """
        if missing := paths.missing():
            raise KubeStackError(f"monitoring binaries missing: {missing}")
        self.stack = stack
        self.paths = paths
        self.scrape_interval_s = scrape_interval_s
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="joiner-prom-"))
        self.keep = keep
        self.ksm_port = 0
        self.prometheus_port = 0
        self.url = ""
        self._processes: list[_Process] = []

    def __enter__(self) -> MonitoringStack:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 90.0) -> None:
        """Start kube-state-metrics, then Prometheus; return once Prometheus has scraped
        kube-state-metrics successfully (``up{job="kube-state-metrics"} == 1``).

        Raises:
            KubeStackError: a process exited or was not ready within ``timeout_s`` (with its
                log's tail). Everything already started is stopped.
        """
        try:
            self._start(timeout_s)
        except BaseException:
            self.stop(remove=False)
            raise

    def _start(self, timeout_s: float) -> None:
        logs = self.workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.ksm_port, telemetry_port = _free_port(), _free_port()
        ksm = self._spawn(
            "kube-state-metrics",
            [
                str(self.paths.ksm),
                f"--kubeconfig={self.stack.kubeconfig}",
                "--host=127.0.0.1",
                f"--port={self.ksm_port}",
                "--telemetry-host=127.0.0.1",
                f"--telemetry-port={telemetry_port}",
                f"--metric-labels-allowlist={METRIC_LABELS_ALLOWLIST}",
            ],
        )
        self._wait(ksm, f"http://127.0.0.1:{telemetry_port}/readyz", timeout_s)

        self.prometheus_port = _free_port()
        self.url = f"http://127.0.0.1:{self.prometheus_port}"
        config = self.workdir / "prometheus.yml"
        config.write_text(self.config_text())
        prometheus = self._spawn(
            "prometheus",
            [
                str(self.paths.prometheus),
                f"--config.file={config}",
                f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.prometheus_port}",
                "--storage.tsdb.retention.time=1d",
            ],
        )
        self._wait(prometheus, f"{self.url}/-/ready", timeout_s)
        deadline = time.monotonic() + timeout_s
        while not self.query('up{job="kube-state-metrics"} == 1'):
            if time.monotonic() > deadline:
                raise KubeStackError(
                    f"Prometheus did not scrape kube-state-metrics within {timeout_s:.0f} s:\n"
                    f"{_tail(prometheus.log)}\n{_tail(ksm.log)}"
                )
            time.sleep(0.5)

    def config_text(self) -> str:
        """The generated prometheus.yml: one static job for kube-state-metrics."""
        interval = f"{self.scrape_interval_s}s"
        return (
            "global:\n"
            f"  scrape_interval: {interval}\n"
            f"  evaluation_interval: {interval}\n"
            "scrape_configs:\n"
            "  - job_name: kube-state-metrics\n"
            "    honor_labels: true\n"
            f"    scrape_interval: {interval}\n"
            f"    scrape_timeout: {interval}\n"
            "    static_configs:\n"
            f"      - targets: ['127.0.0.1:{self.ksm_port}']\n"
        )

    def _spawn(self, name: str, args: list[str]) -> _Process:
        process = _Process(name, args, self.workdir / "logs" / f"{name}.log")
        with process.log.open("wb") as out:
            process.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )
        self._processes.append(process)
        return process

    def _wait(self, process: _Process, url: str, timeout_s: float) -> None:
        assert process.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = process.proc.poll()
            if code is not None:
                raise KubeStackError(f"{process.name} exited with {code}:\n{_tail(process.log)}")
            if _get(url) == 200:
                return
            time.sleep(0.2)
        raise KubeStackError(
            f"{process.name} not ready at {url} after {timeout_s:.0f} s:\n{_tail(process.log)}"
        )

    def api(self, path: str, **params: str) -> Any:
        """GET ``/api/v1/<path>`` with ``params``; the response's ``data``.

        Raises:
            PrometheusError: the request failed or the status is not ``success``.
        """
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise PrometheusError(f"{url}: HTTP {exc.code}: {exc.read()[:500]!r}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusError(f"{url}: {exc}") from exc
        if body.get("status") != "success":
            raise PrometheusError(f"{url}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's vector: ``[{"metric": {...}, "value": [t, "v"]}, ...]``.

        Raises:
            PrometheusError: as :meth:`api`.
        """
        data = self.api("query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(
        self, expr: str, start_s: float, end_s: float, step_s: float
    ) -> list[dict[str, Any]]:
        """A range query's matrix: ``[{"metric": {...}, "values": [[t, "v"], ...]}, ...]``.

        Raises:
            PrometheusError: as :meth:`api`.
        """
        data = self.api(
            "query_range", query=expr, start=f"{start_s}", end=f"{end_s}", step=f"{step_s}"
        )
        result: list[dict[str, Any]] = data["result"]
        return result

    def logs(self) -> str:
        """The tails of both processes' logs (for a failing test's output)."""
        return "\n".join(f"--- {p.name} ---\n{_tail(p.log)}" for p in self._processes)

    def stop(self, timeout_s: float = 15.0, remove: bool = True) -> None:
        """SIGTERM Prometheus, then kube-state-metrics; SIGKILL after ``timeout_s``.

        Args:
            timeout_s: seconds each process gets to exit after SIGTERM.
            remove: delete the work directory (when this object created it and ``keep`` is
                false).
        """
        for process in reversed(self._processes):
            proc = process.proc
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._processes.clear()
        if remove and self._own_workdir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=False)
