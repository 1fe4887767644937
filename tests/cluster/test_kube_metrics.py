"""Karpenter v1's metric names and label sets on ``/metrics``, scraped over HTTP
after driving the real code paths that count them."""

from __future__ import annotations

import copy
import dataclasses
import json
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from joiner.api import timeline as tl
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider import events as ce
from joiner.cloudprovider.aws.queue import InterruptionQueue
from joiner.cloudprovider.types import InsufficientCapacityError
from joiner.cluster.kube import client as kube
from joiner.cluster.kube.metrics import (
    MeteredCloudProvider,
    Metrics,
    controller,
    message_type,
    serve,
    snake_case,
)
from joiner.controllers.disruption.verdicts import DisruptionMethod
from joiner.operator.kube_metrics import MetricsWiring, disrupted_reason
from joiner.state.cluster import Node, NodeClaim
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness

#: Karpenter v1.14.0's label names per metric (family name as the parser reports it:
#: counters without ``_total``).
KARPENTER = {
    "karpenter_nodepools_usage": {"resource_type", "nodepool"},
    "karpenter_nodepools_limit": {"resource_type", "nodepool"},
    "karpenter_nodeclaims_created": {"reason", "nodepool", "min_values_relaxed"},
    "karpenter_nodeclaims_terminated": {"nodepool", "capacity_type", "zone"},
    "karpenter_nodeclaims_disrupted": {"reason", "nodepool", "capacity_type"},
    "karpenter_nodes_created": {"nodepool", "zone"},
    "karpenter_nodes_terminated": {"nodepool", "zone"},
    "karpenter_scheduler_scheduling_duration_seconds": {"controller"},
    "karpenter_voluntary_disruption_decisions": {"decision", "reason", "consolidation_type"},
    "karpenter_voluntary_disruption_decisions_by_nodepool": {
        "nodepool",
        "decision",
        "reason",
        "consolidation_type",
    },
    "karpenter_cluster_state_node_count": set(),
    "karpenter_cluster_state_synced": set(),
    "karpenter_interruption_received_messages": {"message_type"},
    "karpenter_interruption_deleted_messages": set(),
    "karpenter_interruption_message_queue_duration_seconds": set(),
    "karpenter_cloudprovider_errors": {"controller", "method", "provider", "error"},
    "karpenter_cloudprovider_duration_seconds": {"controller", "method", "provider"},
}

_EXTRA = {"le", "quantile"}  # histogram/summary sample labels, not metric labels


def label_sets(body: str) -> dict[str, set[frozenset[str]]]:
    """Metric family name -> the label-name sets of its samples (``le`` left out)."""
    out: dict[str, set[frozenset[str]]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            out.setdefault(family.name, set()).add(frozenset(set(sample.labels) - _EXTRA))
    return out


class _FakeSQS:
    def __init__(self, body: str, sent_ms: int) -> None:
        self.messages = [
            {
                "MessageId": "m1",
                "ReceiptHandle": "r1",
                "Body": body,
                "Attributes": {"SentTimestamp": str(sent_ms)},
            }
        ]
        self.deleted: list[str] = []

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        assert kwargs["AttributeNames"] == ["SentTimestamp"]
        out, self.messages = self.messages, []
        return {"Messages": out}

    def delete_message(self, **kwargs: Any) -> dict[str, Any]:
        self.deleted.append(kwargs["ReceiptHandle"])
        return {}


def _launched_claim(h: Harness, metrics: Metrics) -> NodeClaim:
    """Sync a NodePool with limits and its NodeClass, start the feed and launch one
    NodeClaim through the metered cloud provider."""
    pool_doc = copy.deepcopy(NODEPOOL)
    pool_doc["spec"]["limits"] = {"cpu": "100", "memory": "400Gi"}
    h.sync(kube.NODEPOOL, pool_doc)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.POD, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.feed.start()
    metered: Any = MeteredCloudProvider(h.cloud, metrics, "simulated")
    it = metered.get_instance_types("nc")[0]
    claim = NodeClaim(
        name="pool-abcde",
        nodepool="pool",
        node_class="nc",
        requirements=Requirements([Requirement.in_("node.kubernetes.io/instance-type", it.name)]),
        requests={},
        instance_type_options=(it,),
        created_at_s=0.0,
    )
    h.state.nodeclaims[claim.name] = claim
    with controller("provisioner"):
        h.lifecycle.launch(claim)
    assert claim.instance is not None
    return claim


def _count_cloud_error(metrics: Metrics) -> None:
    """A cloud error counts with Karpenter's error label."""

    class _Full:
        def create(self, _request: object) -> None:
            raise InsufficientCapacityError("no capacity")

    with controller("provisioner"), pytest.raises(InsufficientCapacityError):
        MeteredCloudProvider(_Full(), metrics, "simulated").create(None)


def _count_lifecycle(h: Harness, metrics: Metrics, claim: NodeClaim) -> None:
    """The actuator's counters (NodeClaim/Node created and terminated)."""
    from joiner.cluster.kube.actuator import KubeActuator

    actuator = KubeActuator(
        None, h.state, h.feed, h.lifecycle, metrics, create_nodes=True, dry_run=True, report=None
    )
    assert actuator._created_reason(claim) == "provisioned"
    assert claim.instance is not None
    zone = claim.instance.offering.zone
    metrics.nodeclaims_created.labels("provisioned", "pool", "false").inc()
    metrics.nodes_created.labels("pool", zone).inc()
    metrics.nodeclaims_terminated.labels("pool", "spot", zone).inc()
    metrics.nodes_terminated.labels("pool", zone).inc()
    metrics.scheduling_duration.labels(controller="provisioner").observe(0.01)


def _count_disruption(h: Harness, metrics: Metrics, claim: NodeClaim) -> None:
    """Disruption: a command and its candidate's timeline record."""
    wiring = MetricsWiring(metrics, h.state)
    wiring.command(
        SimpleNamespace(
            method=DisruptionMethod.SINGLE_NODE,
            action="Replace",
            candidates=[SimpleNamespace(pool=SimpleNamespace(name="pool"))],
        )
    )
    claim.disruption_reason = "Underutilized"  # as DisruptionController.execute sets it
    wiring.timeline(tl.DISRUPTION, claim.name, None, "reworded English is not read")
    wiring.refresh(synced=True)


def _count_interruption(metrics: Metrics) -> None:
    """The interruption queue: received, deleted and time on the queue."""
    body = json.dumps(
        {
            "version": "0",
            "id": "e1",
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "source": "aws.ec2",
            "time": "2026-01-01T00:00:00Z",
            "resources": [],
            "detail": {"instance-id": "i-0123", "instance-action": "terminate"},
        }
    )
    sqs = _FakeSQS(body, sent_ms=1_000_000)
    handled: list[ce.CloudEvent] = []

    def handle(event: ce.CloudEvent) -> None:
        handled.append(event)
        metrics.interruption_messages.labels(message_type=message_type(event)).inc()

    queue = InterruptionQueue(
        sqs,
        "url",
        handle,
        sleep=lambda _s: None,
        on_deleted=metrics.interruption_deleted.inc,
        on_queued_s=metrics.interruption_queue_duration.observe,
        wall_now_s=lambda: 1_003.5,
    )
    assert queue.poll_once() == 1
    assert sqs.deleted == ["r1"]


def _scrape(metrics: Metrics) -> str:
    """``/metrics`` as served over HTTP."""
    server = serve(0, metrics=metrics, ready=lambda: True, host="127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            return str(resp.read().decode())
    finally:
        server.shutdown()


def test_scraped_metrics_carry_karpenters_names_and_label_sets() -> None:
    h = Harness()
    metrics = Metrics()
    claim = _launched_claim(h, metrics)
    assert claim.instance is not None
    it = claim.instance_type_options[0]
    _count_cloud_error(metrics)
    _count_lifecycle(h, metrics, claim)
    _count_disruption(h, metrics, claim)
    _count_interruption(metrics)
    scraped = _scrape(metrics)
    seen = label_sets(scraped)
    for name, labels in KARPENTER.items():
        assert seen.get(name) == {frozenset(labels)}, (name, seen.get(name))
    # The pre-v1 name is gone.
    assert "karpenter_provisioner_scheduling_duration_seconds" not in scraped

    # Values as Karpenter reports them.
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(scraped)
        for s in f.samples
    }
    assert (
        samples[("karpenter_nodepools_limit", (("nodepool", "pool"), ("resource_type", "cpu")))]
        == 100
    )
    usage_cpu = samples[
        ("karpenter_nodepools_usage", (("nodepool", "pool"), ("resource_type", "cpu")))
    ]
    assert usage_cpu == it.capacity["cpu"] / 1000
    assert samples[("karpenter_cluster_state_node_count", ())] == 1  # launched, not registered
    assert samples[("karpenter_cluster_state_synced", ())] == 1
    key = (("consolidation_type", "single"), ("decision", "replace"), ("reason", "underutilized"))
    assert samples[("karpenter_voluntary_disruption_decisions_total", key)] == 1
    by_pool = tuple(sorted((("nodepool", "pool"), *key)))
    assert samples[("karpenter_voluntary_disruption_decisions_by_nodepool_total", by_pool)] == 1
    key = (
        ("capacity_type", claim.instance.offering.capacity_type),
        ("nodepool", "pool"),
        ("reason", "underutilized"),
    )
    assert samples[("karpenter_nodeclaims_disrupted_total", key)] == 1
    assert (
        samples[
            (
                "karpenter_interruption_received_messages_total",
                (("message_type", "spot_interrupted"),),
            )
        ]
        == 1
    )
    assert samples[("karpenter_interruption_deleted_messages_total", ())] == 1
    assert samples[
        ("karpenter_interruption_message_queue_duration_seconds_sum", ())
    ] == pytest.approx(3.5)
    err = (
        ("controller", "provisioner"),
        ("error", "InsufficientCapacityError"),
        ("method", "Create"),
        ("provider", "simulated"),
    )
    assert samples[("karpenter_cloudprovider_errors_total", err)] == 1
    dur = (("controller", "provisioner"), ("method", "Create"), ("provider", "simulated"))
    assert samples[("karpenter_cloudprovider_duration_seconds_count", dur)] >= 1


def _claim_for_reason(**fields: Any) -> NodeClaim:
    claim = NodeClaim(
        name="pool-abcde",
        nodepool="pool",
        node_class="nc",
        requirements=Requirements([]),
        requests={},
        instance_type_options=(),
        created_at_s=0.0,
    )
    for name, value in fields.items():
        setattr(claim, name, value)
    return claim


@pytest.mark.parametrize(
    ("kind", "fields", "want"),
    [
        (tl.DISRUPTION, {"disruption_reason": "Drifted"}, "drifted"),
        (tl.DISRUPTION, {"disruption_reason": "Empty"}, "empty"),
        (tl.DISRUPTION, {}, "unknown"),
        (tl.EXPIRED, {"disruption_reason": "Expired"}, "expired"),
        (tl.UNHEALTHY, {"disruption_reason": "Unhealthy"}, "unhealthy"),
        (tl.CORDON, {"interruption": ce.MessageKind.SPOT_INTERRUPTED}, "spot_interrupted"),
        (tl.CORDON, {"interruption": ce.MessageKind.INSTANCE_STOPPED}, "instance_stopped"),
        (tl.CORDON, {}, None),
        (tl.DRAINED, {"disruption_reason": "Drifted"}, None),
    ],
)
def test_disrupted_reason_reads_the_claims_typed_fields(
    kind: str, fields: dict[str, Any], want: str | None
) -> None:
    """The reason comes from the NodeClaim's typed fields, never from the timeline's English
    detail, so rewording a message cannot change a metric."""
    assert disrupted_reason(kind, _claim_for_reason(**fields)) == want


def test_message_types_are_karpenter_provider_aws_kinds() -> None:
    def ev(kind: str, state: str | None = None) -> ce.CloudEvent:
        return ce.CloudEvent(kind=kind, instance_ids=("i-1",), state=state)

    assert message_type(ev(ce.SPOT_INTERRUPTION)) == "spot_interrupted"
    assert message_type(ev(ce.REBALANCE_RECOMMENDATION)) == "rebalance_recommendation"
    assert message_type(ev(ce.SCHEDULED_CHANGE)) == "scheduled_change"
    assert message_type(ev(ce.STATE_CHANGE, "stopped")) == "instance_stopped"
    assert message_type(ev(ce.STATE_CHANGE, "shutting-down")) == "instance_terminated"
    assert snake_case("GarbageCollected") == "garbage_collected"
    assert dataclasses.is_dataclass(ce.CloudEvent)


def _node(name: str, nodeclaim: str | None) -> Node:
    return Node(
        name=name,
        nodeclaim=nodeclaim,
        labels={},
        taints=(),
        capacity={},
        allocatable={},
        created_at_s=0.0,
    )


def test_a_command_counts_once_per_nodepool_of_its_candidates() -> None:
    """Karpenter ``queue.go`` ``StartCommand``: the per-NodePool count is by distinct
    NodePool of the candidates; the total once per command."""
    metrics = Metrics()
    wiring = MetricsWiring(metrics, Harness().state)
    pools = ["a", "b", "a"]
    cands = [SimpleNamespace(pool=SimpleNamespace(name=p)) for p in pools]
    wiring.command(
        SimpleNamespace(method=DisruptionMethod.MULTI_NODE, action="Delete", candidates=cands)
    )
    labels = {"decision": "delete", "reason": "underutilized", "consolidation_type": "multi"}
    value = metrics.registry.get_sample_value
    by_pool = "karpenter_voluntary_disruption_decisions_by_nodepool_total"
    assert value(by_pool, {"nodepool": "a", **labels}) == 1
    assert value(by_pool, {"nodepool": "b", **labels}) == 1
    assert value("karpenter_voluntary_disruption_decisions_total", labels) == 1


def test_drained_nodes_count_by_nodepool_only_with_a_nodeclaim() -> None:
    """Karpenter's termination controller counts a drained node by its NodePool, and only a
    node with a NodeClaim: a static node's drain is not counted."""
    state = Harness().state
    claim = _claim_for_reason()
    state.nodeclaims[claim.name] = claim
    state.nodes["managed"] = _node("managed", claim.name)
    state.nodes["static"] = _node("static", None)
    metrics = Metrics()
    wiring = MetricsWiring(metrics, state)
    wiring.timeline(tl.DRAINED, "managed", None, "any detail")
    wiring.timeline(tl.DRAINED, "static", None, "any detail")
    wiring.timeline(tl.DRAINED, "gone", None, "any detail")
    scraped = metrics.exposition().decode()
    drained = [
        (s.labels, s.value)
        for f in text_string_to_metric_families(scraped)
        for s in f.samples
        if s.name == "karpenter_nodes_drained_total"
    ]
    assert drained == [({"nodepool": "pool"}, 1.0)]


def test_a_terminated_nodes_lifetime_is_observed_by_nodepool() -> None:
    """Karpenter ``NodeLifetimeDurationSeconds``: creation to termination, for a node with a
    NodeClaim only; a record about a NodeClaim that never got a node observes nothing."""
    state = Harness().state
    claim = _claim_for_reason()
    state.nodeclaims[claim.name] = claim
    node = state.nodes["managed"] = _node("managed", claim.name)
    node.created_at_s, node.deleted_at_s = 100.0, 100.0 + 2 * 3600
    static = state.nodes["static"] = _node("static", None)
    static.deleted_at_s = 50.0
    metrics = Metrics()
    wiring = MetricsWiring(metrics, state)
    for name in ("managed", "static", claim.name):
        wiring.timeline(tl.TERMINATED, name, None, "any detail")
    value = metrics.registry.get_sample_value
    name = "karpenter_nodes_lifetime_duration_seconds"
    assert value(f"{name}_count", {"nodepool": "pool"}) == 1
    assert value(f"{name}_sum", {"nodepool": "pool"}) == 7200
    assert value(f"{name}_bucket", {"nodepool": "pool", "le": "3600.0"}) == 0
    assert value(f"{name}_bucket", {"nodepool": "pool", "le": "7200.0"}) == 1
    assert value(f"{name}_count", {"nodepool": ""}) is None
