"""Prometheus metrics, with Karpenter's names where Karpenter has the metric
(karpenter.sh/docs/reference/metrics), and the ``/metrics``, ``/healthz`` and ``/readyz``
endpoints.

Karpenter's names used: ``karpenter_nodeclaims_created_total`` (labels ``nodepool``,
``reason``), ``karpenter_nodeclaims_terminated_total`` (``nodepool``),
``karpenter_nodes_created_total`` and ``karpenter_nodes_terminated_total`` (``nodepool``),
``karpenter_pods_startup_duration_seconds`` (pod creation to Running, seconds),
``karpenter_provisioner_scheduling_duration_seconds`` (one provisioning pass, seconds),
``karpenter_interruption_received_messages_total`` (``message_type``),
``karpenter_voluntary_disruption_decisions_total`` (``decision``, ``reason``). Joiner's own:
``joiner_leader`` (1 on the active replica), ``joiner_reconcile_errors_total``,
``joiner_dry_run_actions_total`` (``action``), ``joiner_fenced_writes_total`` (writes
dropped because the lease was no longer held).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    generate_latest,
)

log = logging.getLogger(__name__)


class Metrics:
    """The controller's metrics, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.nodeclaims_created = Counter(
            "karpenter_nodeclaims_created",
            "NodeClaims created, by NodePool and reason.",
            ["nodepool", "reason"],
            registry=r,
        )
        self.nodeclaims_terminated = Counter(
            "karpenter_nodeclaims_terminated",
            "NodeClaims deleted, by NodePool.",
            ["nodepool"],
            registry=r,
        )
        self.nodes_created = Counter(
            "karpenter_nodes_created", "Nodes created, by NodePool.", ["nodepool"], registry=r
        )
        self.nodes_terminated = Counter(
            "karpenter_nodes_terminated",
            "Nodes deleted, by NodePool.",
            ["nodepool"],
            registry=r,
        )
        self.pod_startup = Summary(
            "karpenter_pods_startup_duration_seconds",
            "Time from a pod's creation until it runs, in seconds.",
            registry=r,
        )
        self.scheduling_duration = Histogram(
            "karpenter_provisioner_scheduling_duration_seconds",
            "Duration of one provisioning pass (scheduling simulation and launches), seconds.",
            registry=r,
        )
        self.interruption_messages = Counter(
            "karpenter_interruption_received_messages",
            "Interruption messages received, by message type.",
            ["message_type"],
            registry=r,
        )
        self.disruption_decisions = Counter(
            "karpenter_voluntary_disruption_decisions",
            "Disruption commands executed, by decision and reason.",
            ["decision", "reason"],
            registry=r,
        )
        self.leader = Gauge("joiner_leader", "1 while this replica is the leader.", registry=r)
        self.reconcile_errors = Counter(
            "joiner_reconcile_errors",
            "Controller callbacks and API writes that raised, by where.",
            ["where"],
            registry=r,
        )
        self.dry_run_actions = Counter(
            "joiner_dry_run_actions",
            "Writes a --dry-run controller did not make, by action.",
            ["action"],
            registry=r,
        )

        self.fenced_writes = Counter(
            "joiner_fenced_writes",
            "Writes dropped because this replica no longer held the lease.",
            registry=r,
        )

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)


class _Handler(BaseHTTPRequestHandler):
    metrics: Metrics | None = None
    ready: Callable[[], bool] = staticmethod(lambda: True)
    healthy: Callable[[], bool] = staticmethod(lambda: True)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics" and self.metrics is not None:
            body, ctype, code = self.metrics.exposition(), CONTENT_TYPE_LATEST, 200
        elif path == "/healthz":
            ok = self.healthy()
            body, ctype, code = (
                (b"ok\n", "text/plain", 200) if ok else (b"API server unreachable\n", "", 503)
            )
        elif path == "/readyz":
            ok = self.ready()
            body, ctype, code = (b"ok\n", "text/plain", 200) if ok else (b"not ready\n", "", 503)
        else:
            body, ctype, code = b"not found\n", "text/plain", 404
        self.send_response(code)
        self.send_header("Content-Type", ctype or "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http " + format, *args)


def serve(
    port: int,
    *,
    metrics: Metrics | None,
    ready: Callable[[], bool],
    healthy: Callable[[], bool] = lambda: True,
    host: str = "0.0.0.0",
) -> ThreadingHTTPServer:
    """Serve ``/metrics`` (when ``metrics``), ``/healthz`` (503 while not ``healthy()``)
    and ``/readyz`` (503 until ``ready()``) on ``host:port`` in a daemon thread; port 0
    picks a free one (``server.server_address``).

    Raises:
        OSError: the port cannot be bound.
    """
    handler = type(
        "Handler",
        (_Handler,),
        {"metrics": metrics, "ready": staticmethod(ready), "healthy": staticmethod(healthy)},
    )
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, name=f"http-{port}", daemon=True).start()
    return server
