"""Prometheus metrics under Karpenter v1's names and label sets, and the ``/metrics``,
``/healthz`` and ``/readyz`` endpoints.

Names and labels follow Karpenter v1.14.0 (the version the test stack pins;
karpenter.sh/v1.14/reference/metrics): ``pkg/metrics/metrics.go`` (NodeClaims and Nodes
created/terminated/disrupted), ``pkg/controllers/metrics/nodepool`` (usage and limit per
``resource_type``), ``pkg/controllers/provisioning/scheduling/metrics.go`` (scheduling
duration by ``controller``), ``pkg/controllers/disruption/metrics.go`` (decisions by
``decision``, ``reason``, ``consolidation_type``), ``pkg/controllers/state/metrics.go``
(cluster state), ``pkg/cloudprovider/metrics`` (the CloudProvider decorator), and
karpenter-provider-aws ``pkg/controllers/interruption/metrics.go`` (the SQS queue):

=====================================================  ==========================================
metric                                                 labels
=====================================================  ==========================================
karpenter_nodepools_usage, karpenter_nodepools_limit   resource_type, nodepool
karpenter_nodepools_cost_total                         nodepool
karpenter_cluster_utilization_percent                  resource_type
karpenter_nodepools_allowed_disruptions,               nodepool, reason (``Empty``, ``Drifted``,
karpenter_nodepools_nodes_consuming_budgets            ``Underutilized``: not lower-cased)
karpenter_nodeclaims_created_total                     reason, nodepool, min_values_relaxed
karpenter_nodeclaims_terminated_total                  nodepool, capacity_type, zone
karpenter_nodeclaims_disrupted_total                   reason, nodepool, capacity_type
karpenter_nodeclaims_unhealthy_disrupted_total         condition, nodepool, capacity_type,
                                                       image_id
karpenter_nodes_created_total                          nodepool, zone
karpenter_nodes_terminated_total                       nodepool, zone
karpenter_nodes_drained_total                          nodepool
karpenter_nodes_lifetime_duration_seconds              nodepool
karpenter_pods_startup_duration_seconds                (none; a summary)
karpenter_pods_bound_duration_seconds                  (none)
karpenter_pods_eviction_requests_total                 code
karpenter_pods_drained_total                           reason
karpenter_scheduler_scheduling_duration_seconds        controller
karpenter_scheduler_unschedulable_pods_count           controller
karpenter_voluntary_disruption_decisions_total         decision, reason, consolidation_type
karpenter_voluntary_disruption_decisions_by_nodepool_  nodepool, decision, reason,
total                                                  consolidation_type
karpenter_cluster_state_node_count                     (none)
karpenter_cluster_state_synced                         (none)
karpenter_interruption_received_messages_total         message_type
karpenter_interruption_deleted_messages_total          (none)
karpenter_interruption_message_queue_duration_seconds  (none)
karpenter_cloudprovider_duration_seconds               controller, method, provider
karpenter_cloudprovider_errors_total                   controller, method, provider, error
karpenter_cloudprovider_instance_type_cpu_cores,       instance_type
karpenter_cloudprovider_instance_type_memory_bytes
karpenter_cloudprovider_instance_type_offering_        instance_type, capacity_type, zone
available, ..._offering_price_estimate
=====================================================  ==========================================

Histograms have Karpenter's buckets (``metrics.DurationBuckets()``, or client_golang's
``DefBuckets`` where Karpenter gives none, as for ``karpenter_cloudprovider_duration_seconds``),
and no metric has a ``_created`` series. The Karpenter metrics not here are in
``metrics_exclusions.EXCLUDED`` with the reason.

Label values are Karpenter's too: ``reason`` ``provisioned`` for a NodeClaim the
provisioner creates and the lower-cased disruption reason (``underutilized``, ``empty``,
``drifted``) for a replacement; ``decision`` ``delete``/``replace``; ``consolidation_type``
``empty``, ``single``, ``multi`` or ``""`` (drift); ``resource_type`` lower case with ``_``
for ``-``, cpu in cores; ``message_type`` as karpenter-provider-aws's message kinds
(``spot_interrupted``, ``rebalance_recommendation``, ``scheduled_change``,
``instance_stopped``, ``instance_terminated``); ``method`` ``Create``, ``Delete``, ``Get``,
``List``, ``GetInstanceTypes``, ``IsDrifted``; ``error`` ``InsufficientCapacityError``,
``NodeClaimNotFoundError``, ``NodeClassNotReadyError`` or ``""``. ``controller`` is the
calling controller as set by ``controller(name)``: so far only the provisioner's pass sets
it (``provisioner``); other callers report ``""``.

Joiner's own: ``joiner_leader`` (1 on the active replica), ``joiner_reconcile_errors_total``
(``where``), ``joiner_dry_run_actions_total`` (``action``), ``joiner_fenced_writes_total``
(writes dropped because the lease was no longer held).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    disable_created_metrics,
    generate_latest,
)

from joiner.api.labels import INSTANCE_CPU, INSTANCE_MEMORY
from joiner.cloudprovider import events as cloud_events
from joiner.cloudprovider.types import (
    InstanceType,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)

if TYPE_CHECKING:
    from joiner.controllers.disruption.verdicts import DisruptionMethod
    from joiner.state.cluster import ClusterState

log = logging.getLogger(__name__)

_C = TypeVar("_C", Counter, Gauge, Histogram, Summary)

# Karpenter (client_golang) exposes no ``*_created`` series; prometheus_client would add one
# per counter, histogram and summary. The switch is process-wide in prometheus_client.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Karpenter ``metrics.DurationBuckets()`` (seconds).
DURATION_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10),
    *(15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600),
)

_HOUR_S, _DAY_S = 3600, 86400
#: Karpenter ``pkg/controllers/node/termination/metrics.go`` ``NodeLifetimeDurationSeconds``
#: buckets (seconds): 15 minutes to 30 days.
LIFETIME_BUCKETS = (
    *(900, 1800, 2700),
    *(h * _HOUR_S for h in (1, 2, 4, 6, 8, 10, 12, 16, 20)),
    *(d * _DAY_S for d in (1, 2, 3, 5, 10, 15, 20, 25, 30)),
)

#: client_golang's ``prometheus.DefBuckets`` (seconds): a Karpenter histogram declared without
#: ``Buckets`` uses them.
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: Karpenter's ``reason`` for NodeClaims the provisioner creates (``ProvisionedReason``).
PROVISIONED = "provisioned"

#: Joiner's cloud event kinds -> karpenter-provider-aws's message kinds (``messages.Kind``).
#: The calling controller, for the CloudProvider metrics' ``controller`` label (Karpenter
#: reads it from the reconcile context, ``injection.GetControllerName``).
_controller: contextvars.ContextVar[str] = contextvars.ContextVar("controller", default="")


def message_type(event: cloud_events.CloudEvent) -> str:
    """karpenter-provider-aws's ``message_type`` label for a cloud event: its message kind
    (``cloud_events.message_kind``)."""
    return cloud_events.message_kind(event).value


def resource_type(name: str) -> str:
    """Karpenter's ``resource_type`` label: lower case, ``-`` as ``_``."""
    return name.lower().replace("-", "_")


def gauge_value(name: str, amount: int) -> float:
    """A Joiner quantity (cpu in millicores) as Karpenter reports it (cpu in cores)."""
    return amount / 1000 if name == "cpu" else float(amount)


def snake_case(reason: str) -> str:
    """``Underutilized`` -> ``underutilized``, ``GarbageCollected`` -> ``garbage_collected``
    (Karpenter ``pretty.ToSnakeCase``)."""
    out = []
    for i, ch in enumerate(reason):
        if ch.isupper() and i > 0 and not reason[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


@contextlib.contextmanager
def controller(name: str) -> Iterator[None]:
    """Run the block as controller ``name`` for the CloudProvider metrics."""
    token = _controller.set(name)
    try:
        yield
    finally:
        _controller.reset(token)


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is as Prometheus sees it: ``name`` as exposed (a counter's with
    ``_total``), ``kind`` (``counter``, ``gauge``, ``histogram``, ``summary``), ``labels`` in
    order and a histogram's upper bounds ``buckets`` (no ``+Inf``; empty otherwise)."""

    name: str
    kind: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()


class Metrics:
    """The controller's metrics, on a registry of their own (module docstring).

    ``specs`` describes each by its exposed name (compared with Karpenter's in
    ``tests/cluster/test_karpenter_metric_names.py``); ``collectors`` holds each under the
    same name.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.specs: dict[str, MetricSpec] = {}
        self.collectors: dict[str, Counter | Gauge | Histogram | Summary] = {}
        usage_labels = ("resource_type", "nodepool")
        self.nodepools_usage = self._gauge(
            "karpenter_nodepools_usage",
            "Resources provisioned by a NodePool, by resource type (cpu in cores).",
            usage_labels,
        )
        self.nodepools_limit = self._gauge(
            "karpenter_nodepools_limit",
            "A NodePool's spec.limits, by resource type (cpu in cores).",
            usage_labels,
        )
        # Karpenter pkg/controllers/metrics/nodepool/controller.go ClusterCost.
        self.nodepools_cost = self._gauge(
            "karpenter_nodepools_cost_total",
            "Summed hourly price of a NodePool's launched NodeClaims, USD per hour.",
            ("nodepool",),
        )
        # Karpenter pkg/controllers/metrics/node/controller.go ClusterUtilization.
        self.cluster_utilization = self._gauge(
            "karpenter_cluster_utilization_percent",
            "Pod requests as a percentage of the nodes' allocatable, by resource type.",
            ("resource_type",),
        )
        self._nodeclaim_metrics()
        self._node_metrics()
        self.pod_startup = self._summary(
            "karpenter_pods_startup_duration_seconds",
            "Time from a pod's creation until it runs, in seconds.",
        )
        # Karpenter pkg/controllers/metrics/pod/controller.go PodBoundDurationSeconds.
        self.pod_bound_duration = self._histogram(
            "karpenter_pods_bound_duration_seconds",
            "Time from a pod's creation (as first seen) until it is bound to a node, seconds.",
            (),
            DURATION_BUCKETS,
        )
        self.scheduling_duration = self._histogram(
            "karpenter_scheduler_scheduling_duration_seconds",
            "Duration of one scheduling pass, seconds, by controller.",
            ("controller",),
            DURATION_BUCKETS,
        )
        # Karpenter pkg/controllers/provisioning/scheduling/metrics.go UnschedulablePodsCount.
        self.unschedulable_pods = self._gauge(
            "karpenter_scheduler_unschedulable_pods_count",
            "Pending pods the last scheduling pass could not schedule, by controller.",
            ("controller",),
        )
        self._disruption_metrics()
        self.cluster_state_node_count = self._gauge(
            "karpenter_cluster_state_node_count",
            "Nodes (and NodeClaims not registered yet) in the controller's cluster state.",
        )
        self.cluster_state_synced = self._gauge(
            "karpenter_cluster_state_synced",
            "1 once the cluster state matches the API server's Nodes and NodeClaims.",
        )
        self._interruption_metrics()
        self._cloudprovider_metrics()
        self._instance_type_metrics()
        self._joiner_metrics()

    def _nodeclaim_metrics(self) -> None:
        self.nodeclaims_created = self._counter(
            "karpenter_nodeclaims_created",
            "NodeClaims created, by reason, NodePool and whether minValues was relaxed.",
            ("reason", "nodepool", "min_values_relaxed"),
        )
        self.nodeclaims_terminated = self._counter(
            "karpenter_nodeclaims_terminated",
            "NodeClaims terminated, by NodePool, capacity type and zone.",
            ("nodepool", "capacity_type", "zone"),
        )
        self.nodeclaims_disrupted = self._counter(
            "karpenter_nodeclaims_disrupted",
            "NodeClaims disrupted, by reason, NodePool and capacity type.",
            ("reason", "nodepool", "capacity_type"),
        )
        self.nodeclaims_unhealthy_disrupted = self._counter(
            "karpenter_nodeclaims_unhealthy_disrupted",
            "NodeClaims node repair disrupted, by condition, NodePool, capacity type and image.",
            ("condition", "nodepool", "capacity_type", "image_id"),
        )

    def _node_metrics(self) -> None:
        self.nodes_created = self._counter(
            "karpenter_nodes_created", "Nodes created, by NodePool and zone.", ("nodepool", "zone")
        )
        self.nodes_terminated = self._counter(
            "karpenter_nodes_terminated",
            "Nodes terminated, by NodePool and zone.",
            ("nodepool", "zone"),
        )
        # Karpenter pkg/controllers/node/termination/metrics.go NodesDrainedTotal.
        self.nodes_drained = self._counter(
            "karpenter_nodes_drained", "Nodes drained, by NodePool.", ("nodepool",)
        )
        # Karpenter pkg/controllers/node/termination/terminator/metrics.go
        # PodsEvictionRequestsTotal and PodsDrainedTotal.
        self.eviction_requests = self._counter(
            "karpenter_pods_eviction_requests",
            "Eviction API requests, by the HTTP status code of the answer.",
            ("code",),
        )
        self.pods_drained = self._counter(
            "karpenter_pods_drained",
            "Pods evicted while draining nodes, by the node's disruption reason.",
            ("reason",),
        )
        # Karpenter pkg/controllers/node/termination/metrics.go NodeLifetimeDurationSeconds.
        self.nodes_lifetime = self._histogram(
            "karpenter_nodes_lifetime_duration_seconds",
            "A node's lifetime from its creation to its termination, seconds, by NodePool.",
            ("nodepool",),
            LIFETIME_BUCKETS,
        )

    def _disruption_metrics(self) -> None:
        decision_labels = ("decision", "reason", "consolidation_type")
        self.disruption_decisions = self._counter(
            "karpenter_voluntary_disruption_decisions",
            "Disruption decisions, by decision, reason and consolidation type.",
            decision_labels,
        )
        budget_labels = ("nodepool", "reason")
        # Karpenter pkg/controllers/disruption/metrics.go NodePoolAllowedDisruptions and
        # NodePoolNodesConsumingBudgets.
        self.nodepools_allowed_disruptions = self._gauge(
            "karpenter_nodepools_allowed_disruptions",
            "Nodes a NodePool's active budgets allow disrupting, by disruption reason.",
            budget_labels,
        )
        self.nodepools_nodes_consuming_budgets = self._gauge(
            "karpenter_nodepools_nodes_consuming_budgets",
            "A NodePool's nodes counted as disrupting (not ready or marked for deletion).",
            budget_labels,
        )
        # Karpenter pkg/controllers/disruption/metrics.go NodepoolDecisionsPerformed.
        self.disruption_decisions_by_nodepool = self._counter(
            "karpenter_voluntary_disruption_decisions_by_nodepool",
            "Disruption decisions, by the candidates' NodePool, decision, reason and "
            "consolidation type.",
            ("nodepool", *decision_labels),
        )

    def _interruption_metrics(self) -> None:
        self.interruption_messages = self._counter(
            "karpenter_interruption_received_messages",
            "Interruption messages received from the SQS queue, by message type.",
            ("message_type",),
        )
        self.interruption_deleted = self._counter(
            "karpenter_interruption_deleted_messages",
            "Interruption messages deleted from the SQS queue.",
        )
        self.interruption_queue_duration = self._histogram(
            "karpenter_interruption_message_queue_duration_seconds",
            "Time an interruption message was on the queue before it was handled, seconds.",
            (),
            DURATION_BUCKETS,
        )

    def _cloudprovider_metrics(self) -> None:
        labels = ("controller", "method", "provider")
        # No Buckets in Karpenter pkg/cloudprovider/metrics/cloudprovider.go MethodDuration:
        # client_golang's DefBuckets.
        self.cloudprovider_duration = self._histogram(
            "karpenter_cloudprovider_duration_seconds",
            "Duration of CloudProvider calls, seconds, by controller, method and provider.",
            labels,
            DEFAULT_BUCKETS,
        )
        self.cloudprovider_errors = self._counter(
            "karpenter_cloudprovider_errors",
            "Errors CloudProvider calls returned, by controller, method, provider and error.",
            (*labels, "error"),
        )

    def _instance_type_metrics(self) -> None:
        # karpenter-provider-aws pkg/providers/instancetype/metrics.go and
        # pkg/controllers/metrics/metrics.go.
        self.instance_type_cpu = self._gauge(
            "karpenter_cloudprovider_instance_type_cpu_cores",
            "vCPUs of an instance type.",
            ("instance_type",),
        )
        self.instance_type_memory = self._gauge(
            "karpenter_cloudprovider_instance_type_memory_bytes",
            "Memory of an instance type, bytes.",
            ("instance_type",),
        )
        offering = ("instance_type", "capacity_type", "zone")
        self.offering_available = self._gauge(
            "karpenter_cloudprovider_instance_type_offering_available",
            "1 when an offering (instance type, capacity type, zone) is available, else 0.",
            offering,
        )
        self.offering_price = self._gauge(
            "karpenter_cloudprovider_instance_type_offering_price_estimate",
            "An offering's estimated price, USD per hour.",
            offering,
        )

    def _joiner_metrics(self) -> None:
        self.leader = self._gauge("joiner_leader", "1 while this replica is the leader.")
        self.reconcile_errors = self._counter(
            "joiner_reconcile_errors",
            "Controller callbacks and API writes that raised, by where.",
            ("where",),
        )
        self.dry_run_actions = self._counter(
            "joiner_dry_run_actions",
            "Writes a --dry-run controller did not make, by action.",
            ("action",),
        )
        self.fenced_writes = self._counter(
            "joiner_fenced_writes",
            "Writes dropped because this replica no longer held the lease.",
        )

    def _add(self, spec: MetricSpec, collector: _C) -> _C:
        self.specs[spec.name] = spec
        self.collectors[spec.name] = collector
        return collector

    def _counter(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
        counter = Counter(name, doc, labels, registry=self.registry)
        return self._add(MetricSpec(f"{name}_total", "counter", labels), counter)

    def _gauge(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
        gauge = Gauge(name, doc, labels, registry=self.registry)
        return self._add(MetricSpec(name, "gauge", labels), gauge)

    def _histogram(
        self, name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
    ) -> Histogram:
        histogram = Histogram(name, doc, labels, buckets=buckets, registry=self.registry)
        spec = MetricSpec(name, "histogram", labels, tuple(float(b) for b in buckets))
        return self._add(spec, histogram)

    def _summary(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Summary:
        summary = Summary(name, doc, labels, registry=self.registry)
        return self._add(MetricSpec(name, "summary", labels), summary)

    def exposition(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)

    def update_cluster_state(self, state: ClusterState, *, synced: bool) -> None:
        """Set the NodePool usage/limit gauges and the cluster-state gauges from ``state``
        (Karpenter's nodepool metrics controller and ``Cluster.Synced``). Call on the
        controller's loop thread: it reads the state."""
        self.cluster_state_synced.set(1 if synced else 0)
        count = sum(1 for n in state.nodes.values() if n.deleted_at_s is None)
        count += sum(1 for c in state.live_nodeclaims() if c.node_name is None)
        self.cluster_state_node_count.set(count)
        self.nodepools_usage.clear()
        self.nodepools_limit.clear()
        for name, pool in sorted(state.nodepools.items()):
            for res, amount in sorted(state.nodepool_usage(name).items()):
                self.nodepools_usage.labels(resource_type(res), name).set(gauge_value(res, amount))
            for res, amount in pool.limits:
                self.nodepools_limit.labels(resource_type(res), name).set(gauge_value(res, amount))
        self._update_cost(state)
        self._update_utilization(state)

    def _update_cost(self, state: ClusterState) -> None:
        """Each NodePool's summed offering price of its launched, undeleted NodeClaims (Karpenter
        ``pkg/state/cost/cost.go`` ``ClusterCost``, read by the nodepool metrics controller's
        ``buildMetrics``); 0 for a NodePool with none."""
        cost = dict.fromkeys(state.nodepools, 0.0)
        for claim in state.live_nodeclaims():
            if claim.instance is not None and claim.nodepool in cost:
                cost[claim.nodepool] += claim.instance.offering.price_per_hour
        self.nodepools_cost.clear()
        for name, price_per_hour in sorted(cost.items()):
            self.nodepools_cost.labels(nodepool=name).set(price_per_hour)

    def _update_utilization(self, state: ClusterState) -> None:
        """The undeleted nodes' summed pod requests over their summed allocatable, percent,
        per resource with a non-zero allocatable (Karpenter
        ``pkg/controllers/metrics/node/controller.go`` ``buildClusterUtilizationMetric``)."""
        allocatable: dict[str, int] = {}
        used: dict[str, int] = {}
        for node in state.nodes.values():
            if node.deleted_at_s is not None:
                continue
            for res, amount in node.allocatable.items():
                allocatable[res] = allocatable.get(res, 0) + amount
            for res, amount in state.requested_on(node.name).items():
                used[res] = used.get(res, 0) + amount
        self.cluster_utilization.clear()
        for res, total in sorted(allocatable.items()):
            if total:
                percent = 100 * used.get(res, 0) / total
                self.cluster_utilization.labels(resource_type=resource_type(res)).set(percent)

    def instance_types(self, types: Iterable[InstanceType]) -> None:
        """Set the instance type and offering gauges from a ``get_instance_types`` answer
        (karpenter-provider-aws ``pkg/providers/instancetype/instancetype.go`` sets vCPUs and
        memory from the EC2 description, here its ``instance-cpu``/``instance-memory`` labels,
        MiB; a type without them is left out; ``pkg/controllers/metrics/controller.go``
        sets availability, any available offering of the same dimensions counting, and price)."""
        available: dict[tuple[str, str, str], bool] = {}
        for it in types:
            cpu, memory_mib = it.label(INSTANCE_CPU), it.label(INSTANCE_MEMORY)
            if cpu is not None and memory_mib is not None:
                self.instance_type_cpu.labels(instance_type=it.name).set(float(cpu))
                self.instance_type_memory.labels(instance_type=it.name).set(
                    float(memory_mib) * 1024 * 1024
                )
            for o in it.offerings:
                key = (it.name, o.capacity_type, o.zone)
                available[key] = available.get(key, False) or o.available
                self.offering_price.labels(*key).set(o.price_per_hour)
        for key, ok in available.items():
            self.offering_available.labels(*key).set(1 if ok else 0)

    def disruption_decision(
        self, method: DisruptionMethod, action: str, *, nodepool: str | None = None
    ) -> None:
        """Count one disruption command of ``method``, ``action`` ``Delete`` or ``Replace``
        (Karpenter ``DecisionsPerformedTotal``: the reason and consolidation type are the
        method's own, ``Method.Reason``/``ConsolidationType``); with ``nodepool``, the
        per-NodePool count instead (``NodepoolDecisionsPerformed``)."""
        labels = {
            "decision": action.lower(),
            "reason": method.reason.value.lower(),
            "consolidation_type": method.consolidation_type.value,
        }
        if nodepool is None:
            self.disruption_decisions.labels(**labels).inc()
        else:
            self.disruption_decisions_by_nodepool.labels(nodepool=nodepool, **labels).inc()


def _error_label(exc: BaseException) -> str:
    """Karpenter ``GetErrorTypeLabelValue``."""
    if isinstance(exc, InsufficientCapacityError):
        return "InsufficientCapacityError"
    if isinstance(exc, NodeClaimNotFoundError):
        return "NodeClaimNotFoundError"
    if isinstance(exc, NodeClassNotReadyError):
        return "NodeClassNotReadyError"
    return ""


class MeteredCloudProvider:
    """A CloudProvider that times each call and counts its errors (Karpenter
    ``cloudprovider/metrics.Decorate``), and sets the instance type gauges from each new
    ``get_instance_types`` answer; every other attribute is the wrapped provider's.

    ``provider`` is the ``provider`` label (``aws`` or ``simulated``).
    """

    _METHODS: ClassVar[dict[str, str]] = {
        "create": "Create",
        "delete": "Delete",
        "get": "Get",
        "list": "List",
        "get_instance_types": "GetInstanceTypes",
        "is_drifted": "IsDrifted",
    }

    def __init__(self, cloud: Any, metrics: Metrics, provider: str) -> None:
        self._cloud = cloud
        self._metrics = metrics
        self._provider = provider
        #: The last ``get_instance_types`` answer per arguments (``metrics.instance_types``).
        self._types_seen: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._cloud, name)
        method = self._METHODS.get(name)
        if method is None:
            return target
        metrics, provider, seen = self._metrics, self._provider, self._types_seen

        def metered(*args: Any, **kwargs: Any) -> Any:
            ctl = _controller.get()
            started = time.monotonic()
            try:
                result = target(*args, **kwargs)
            except Exception as exc:
                metrics.cloudprovider_errors.labels(ctl, method, provider, _error_label(exc)).inc()
                raise
            finally:
                metrics.cloudprovider_duration.labels(ctl, method, provider).observe(
                    time.monotonic() - started
                )
            if method == "GetInstanceTypes":
                key = (args, tuple(sorted(kwargs.items())))
                # The provider returns the same list while nothing changed: set the
                # gauges (a series per offering) only for a new answer.
                if seen.get(key) is not result:
                    seen[key] = result
                    metrics.instance_types(result)
            return result

        return metered


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
