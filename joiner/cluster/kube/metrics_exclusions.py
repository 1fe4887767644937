"""The Karpenter v1.14 metrics (core and karpenter-provider-aws) Joiner's controller does not
expose, each with the reason.

Every other metric Karpenter registers is in ``joiner.cluster.kube.metrics.Metrics`` under
Karpenter's name, type, label names and buckets; ``tests/cluster/test_karpenter_metric_names.py``
checks both against the list ``tools/karpenter_metrics.py`` extracts from Karpenter's source.
Names are as exposed (a counter's with ``_total``).
"""

from __future__ import annotations

#: Joiner has not measured it yet: the work is done, the measurement is not wired.
NOT_YET_MEASURED = "not yet measured"

_NODE_LABELS = (
    "per-node gauge whose labels include the cloud provider's well-known node labels, "
    "known only at run time (Karpenter pkg/controllers/metrics/node/controller.go "
    "nodeLabelNames); not yet measured"
)
_POD_STATE = (
    "per-pod gauge of Karpenter's pod metrics controller (pkg/controllers/metrics/pod); "
    "not yet measured"
)

#: Exposed name -> why Joiner does not expose it.
EXCLUDED: dict[str, str] = {
    "karpenter_build_info": "describes a Go build of Karpenter (version, goversion, goarch, "
    "commit); Joiner is not one",
    "karpenter_cloudprovider_batcher_batch_size": "Joiner sends EC2 calls one by one: it has "
    "no request batcher (karpenter-provider-aws pkg/batcher)",
    "karpenter_cloudprovider_batcher_batch_time_seconds": "Joiner sends EC2 calls one by one: "
    "it has no request batcher (karpenter-provider-aws pkg/batcher)",
    "karpenter_cloudprovider_instance_launch_failures_total": NOT_YET_MEASURED,
    "karpenter_cloudprovider_instance_termination_failures_total": NOT_YET_MEASURED,
    "karpenter_cluster_state_unsynced_time_seconds": NOT_YET_MEASURED,
    "karpenter_consolidation_moves_total": NOT_YET_MEASURED,
    "karpenter_consolidation_score": NOT_YET_MEASURED,
    "karpenter_interruption_instance_status_unhealthy_total": "Joiner does not poll EC2 "
    "instance status checks (karpenter-provider-aws "
    "pkg/controllers/interruption/instancestatus_controller.go)",
    "karpenter_nodeclaims_instance_termination_duration_seconds": NOT_YET_MEASURED,
    "karpenter_nodeclaims_termination_duration_seconds": NOT_YET_MEASURED,
    "karpenter_nodepools_cost_tracker_errors_total": "Joiner keeps no separate cost tracker "
    "that can fail (Karpenter pkg/state/cost)",
    "karpenter_nodes_allocatable": _NODE_LABELS,
    "karpenter_nodes_current_lifetime_seconds": _NODE_LABELS,
    "karpenter_nodes_system_overhead": _NODE_LABELS,
    "karpenter_nodes_termination_duration_seconds": NOT_YET_MEASURED,
    "karpenter_nodes_total_daemon_limits": _NODE_LABELS,
    "karpenter_nodes_total_daemon_requests": _NODE_LABELS,
    "karpenter_nodes_total_pod_limits": _NODE_LABELS,
    "karpenter_nodes_total_pod_requests": _NODE_LABELS,
    "karpenter_pods_provisioning_bound_duration_seconds": NOT_YET_MEASURED,
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds": _POD_STATE,
    "karpenter_pods_provisioning_startup_duration_seconds": NOT_YET_MEASURED,
    "karpenter_pods_provisioning_unbound_time_seconds": _POD_STATE,
    "karpenter_pods_provisioning_unstarted_time_seconds": _POD_STATE,
    "karpenter_pods_scheduling_decision_duration_seconds": NOT_YET_MEASURED,
    "karpenter_pods_state": _POD_STATE,
    "karpenter_pods_unbound_time_seconds": _POD_STATE,
    "karpenter_pods_unstarted_time_seconds": _POD_STATE,
    "karpenter_scheduler_ignored_pods_count": NOT_YET_MEASURED,
    "karpenter_scheduler_pending_pods_by_effective_zone_count": NOT_YET_MEASURED,
    "karpenter_scheduler_queue_depth": NOT_YET_MEASURED,
    "karpenter_scheduler_unfinished_work_seconds": NOT_YET_MEASURED,
    "karpenter_voluntary_disruption_consolidation_timeouts_total": "Joiner's consolidation "
    "search has no wall-clock timeout: it is deterministic "
    "(joiner/controllers/disruption/room.py)",
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds": NOT_YET_MEASURED,
    "karpenter_voluntary_disruption_eligible_nodes": NOT_YET_MEASURED,
    "karpenter_voluntary_disruption_failed_validations_total": NOT_YET_MEASURED,
    "karpenter_voluntary_disruption_queue_failures_total": NOT_YET_MEASURED,
}
