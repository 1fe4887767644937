"""The named PromQL queries ``joiner import`` runs against kube-state-metrics series.

Every query aggregates (``max by (...)``) to the labels Joiner reads, so Prometheus returns
one series per object rather than one per scrape target or per kube-state-metrics replica.
Metric and label names are kube-state-metrics v2's (``docs/metrics/`` of
kubernetes/kube-state-metrics); node labels arrive as ``label_<sanitised key>`` on
``kube_node_labels`` only when kube-state-metrics runs with
``--metric-labels-allowlist=nodes=[...]`` naming them.

The per-pod queries (``step_s`` set) read values that never change during a pod's life
(its requests, owner, creation and scheduling times), so they are asked at a coarse step
(``query_step``: ``PER_OBJECT_STEP_S``, or the range when shorter) rather than the
import's: ``last_over_time(<metric>[1h])`` gives, at each evaluation time, a series'
latest sample of the hour before it (prometheus/prometheus promql/functions.go,
``funcLastOverTime``), and with a window at least the step, a pod that lived for less than
one step still has a sample in the window of the next evaluation.

DaemonSets are not queried: the simulation derives a DaemonSet's pods per node from the
object, so ``kube_daemonset_status_desired_number_scheduled`` adds nothing it can replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.history.series import QueryRange


@dataclass(frozen=True, slots=True)
class Query:
    """One named query: ``name`` is stable (file names of ``--save-responses``), ``promql``
    is sent as is, ``why`` says what Joiner reads from it; ``metric`` is the
    kube-state-metrics series it reads (named when none answers); ``step_s``, when set,
    is the coarse step it is asked at (``query_step``), else the import's step."""

    name: str
    metric: str
    promql: str
    why: str
    step_s: float | None = None


#: The step of the per-pod queries: their PromQL's ``last_over_time`` window is as long.
PER_OBJECT_STEP_S = 3600.0


def query_step(query: Query, window: QueryRange) -> float:
    """The step ``query`` is asked at over ``window``: the window's for a query without
    its own; else the largest step up to the query's (``PER_OBJECT_STEP_S``, the
    ``last_over_time`` window, or the range when shorter) that divides the range into whole
    steps in milliseconds rounded down, so the last evaluation falls on the range's end
    (within a millisecond per step) and no stretch goes unread."""
    span_ms = round((window.end_s - window.start_s) * 1000)
    if query.step_s is None or span_ms <= 0:
        return window.step_s
    own_ms = round(query.step_s * 1000)
    steps = -(-span_ms // own_ms)
    return (span_ms // steps) / 1000


#: The node labels Joiner reads (Kubernetes well-known, Karpenter's, EKS managed node
#: groups'), as ``kube_node_labels`` names them: ``label_`` + the key with every character
#: outside ``[a-zA-Z0-9_]`` replaced by ``_`` and camelCase turned to snake_case
#: (kubernetes/kube-state-metrics internal/store/utils.go, ``labelName``).
NODE_LABELS: dict[str, str] = {
    "node.kubernetes.io/instance-type": "label_node_kubernetes_io_instance_type",
    "beta.kubernetes.io/instance-type": "label_beta_kubernetes_io_instance_type",
    "topology.kubernetes.io/zone": "label_topology_kubernetes_io_zone",
    "failure-domain.beta.kubernetes.io/zone": "label_failure_domain_beta_kubernetes_io_zone",
    "karpenter.sh/capacity-type": "label_karpenter_sh_capacity_type",
    "karpenter.sh/nodepool": "label_karpenter_sh_nodepool",
    "eks.amazonaws.com/capacityType": "label_eks_amazonaws_com_capacity_type",
    "eks.amazonaws.com/nodegroup": "label_eks_amazonaws_com_nodegroup",
}

_NODE_LABEL_BY = ", ".join(["node", *NODE_LABELS.values()])

#: Every query, in the order ``joiner import`` runs them (``--print-queries`` prints them).
QUERIES: tuple[Query, ...] = (
    Query(
        "deployment_replicas",
        "kube_deployment_spec_replicas",
        "max by (namespace, deployment) (kube_deployment_spec_replicas)",
        "a Deployment's desired replicas",
    ),
    Query(
        "statefulset_replicas",
        "kube_statefulset_replicas",
        "max by (namespace, statefulset) (kube_statefulset_replicas)",
        "a StatefulSet's desired replicas",
    ),
    Query(
        "replicaset_replicas",
        "kube_replicaset_spec_replicas",
        "max by (namespace, replicaset) (kube_replicaset_spec_replicas)",
        "a ReplicaSet's desired replicas (used for ReplicaSets without an owner)",
    ),
    Query(
        "replicaset_owner",
        "kube_replicaset_owner",
        "max by (namespace, replicaset, owner_kind, owner_name) (kube_replicaset_owner)",
        "which ReplicaSets a Deployment owns",
    ),
    Query(
        "hpa_desired_replicas",
        "kube_horizontalpodautoscaler_status_desired_replicas",
        "max by (namespace, horizontalpodautoscaler) "
        "(kube_horizontalpodautoscaler_status_desired_replicas)",
        "an HPA's desired replicas, replayed as its target's replicas",
    ),
    Query(
        "hpa_info",
        "kube_horizontalpodautoscaler_info",
        "max by (namespace, horizontalpodautoscaler, scaletargetref_kind, "
        "scaletargetref_name) (kube_horizontalpodautoscaler_info)",
        "an HPA's scale target",
    ),
    Query(
        "job_start_time",
        "kube_job_status_start_time",
        "max by (namespace, job_name) (kube_job_status_start_time)",
        "when a Job started (value: unix seconds)",
    ),
    Query(
        "job_completion_time",
        "kube_job_status_completion_time",
        "max by (namespace, job_name) (kube_job_status_completion_time)",
        "when a Job completed (value: unix seconds)",
    ),
    Query(
        "job_parallelism",
        "kube_job_spec_parallelism",
        "max by (namespace, job_name) (kube_job_spec_parallelism)",
        "how many pods a Job runs at once",
    ),
    Query(
        "job_owner",
        "kube_job_owner",
        "max by (namespace, job_name, owner_kind, owner_name) (kube_job_owner)",
        "the CronJob that created a Job",
    ),
    Query(
        "pod_container_requests",
        "kube_pod_container_resource_requests",
        "max by (namespace, pod, container, resource) (last_over_time("
        'kube_pod_container_resource_requests{resource=~"cpu|memory"}[1h]))',
        "each app container's requests (cores, bytes)",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_init_container_requests",
        "kube_pod_init_container_resource_requests",
        "max by (namespace, pod, container, resource) (last_over_time("
        'kube_pod_init_container_resource_requests{resource=~"cpu|memory"}[1h]))',
        "each init container's requests (cores, bytes)",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_init_container_info",
        "kube_pod_init_container_info",
        "max by (namespace, pod, container, restart_policy) "
        "(last_over_time(kube_pod_init_container_info[1h]))",
        "which init containers are sidecars (restart_policy Always)",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_owner",
        "kube_pod_owner",
        "max by (namespace, pod, owner_kind, owner_name) (last_over_time(kube_pod_owner[1h]))",
        "the ReplicaSet, StatefulSet or Job that owns a pod",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_created",
        "kube_pod_created",
        "max by (namespace, pod) (last_over_time(kube_pod_created[1h]))",
        "when a pod was created (value: unix seconds)",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_scheduled_time",
        "kube_pod_status_scheduled_time",
        "max by (namespace, pod) (last_over_time(kube_pod_status_scheduled_time[1h]))",
        "when a pod was bound to a node (value: unix seconds)",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "pod_node",
        "kube_pod_info",
        "max by (namespace, pod, node) (last_over_time(kube_pod_info[1h]))",
        "the node a pod ran on (empty while pending): the pods running at the start",
        PER_OBJECT_STEP_S,
    ),
    Query(
        "node_info",
        "kube_node_info",
        "max by (node, provider_id) (kube_node_info)",
        "the nodes that ran (present while sampled) and their provider IDs",
    ),
    Query(
        "node_labels",
        "kube_node_labels",
        f"max by ({_NODE_LABEL_BY}) (kube_node_labels)",
        "a node's instance type, zone, capacity type and NodePool or node group",
    ),
    Query(
        "node_created",
        "kube_node_created",
        "max by (node) (kube_node_created)",
        "when a node was created (value: unix seconds)",
    ),
)

#: The queries by name.
BY_NAME: dict[str, Query] = {q.name: q for q in QUERIES}


def render_queries() -> str:
    """The catalog as ``--print-queries`` prints it: per query a ``# name: why`` comment
    line and the PromQL on the next, blank lines between."""
    return "\n\n".join(f"# {q.name}: {q.why}\n{q.promql}" for q in QUERIES) + "\n"
