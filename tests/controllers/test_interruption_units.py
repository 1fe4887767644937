"""EventBridge parsing, NTH values, and PodDisruptionBudget arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joiner.api.errors import InputError
from joiner.api.objects import PodDisruptionBudget, Source
from joiner.api.requirements import Requirements
from joiner.cloudprovider import events
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.controllers.termination.pdb import (
    allowed_by_budget,
    blocking,
    disruptions_allowed,
    violated,
)
from joiner.state.cluster import ClusterState, Node, Pod
from joiner.testing.builders import make_pod_template

REPO = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((REPO / "examples" / "spot-interruptions" / "spot-itn-sample.json").read_text())


def _envelope(detail_type, detail, source="aws.ec2"):
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": detail_type,
        "source": source,
        "detail": detail,
    }


def test_parse_each_message_kind():
    itn = events.parse_message(SAMPLE)
    assert itn == events.CloudEvent(
        events.SPOT_INTERRUPTION, ("i-1234567890abcdef0",), SAMPLE["id"], action="terminate"
    )
    sqs = {"MessageId": "m", "Body": json.dumps(SAMPLE)}
    assert events.parse_message(json.dumps(sqs)) == itn
    rebalance = events.parse_message(
        _envelope("EC2 Instance Rebalance Recommendation", {"instance-id": "i-1"})
    )
    assert rebalance.kind == events.REBALANCE_RECOMMENDATION
    stopping = events.parse_message(
        _envelope(
            "EC2 Instance State-change Notification", {"instance-id": "i-1", "state": "stopping"}
        )
    )
    assert (stopping.kind, stopping.state) == (events.STATE_CHANGE, "stopping")
    health = events.parse_message(
        _envelope(
            "AWS Health Event",
            {
                "service": "EC2",
                "eventTypeCategory": "scheduledChange",
                "affectedEntities": [{"entityValue": "i-1"}, {"entityValue": "i-2"}],
            },
            source="aws.health",
        )
    )
    assert health.kind == events.SCHEDULED_CHANGE and health.instance_ids == ("i-1", "i-2")


def test_ignored_messages_are_none():
    assert (
        events.parse_message(
            _envelope(
                "EC2 Instance State-change Notification", {"instance-id": "i", "state": "running"}
            )
        )
        is None
    )
    assert (
        events.parse_message(_envelope("AWS Health Event", {"service": "RDS"}, source="aws.health"))
        is None
    )
    assert events.parse_message(_envelope("Something Else", {})) is None


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "[]",
        json.dumps({"source": "aws.ec2", "detail": {}}),
        json.dumps(_envelope("EC2 Spot Instance Interruption Warning", {})),
    ],
)
def test_malformed_messages_are_input_errors(raw):
    with pytest.raises(InputError):
        events.parse_message(raw, file="m.json")


def test_nth_values_with_and_without_wrapper():
    seed = REPO / ".." / "shared" / "examples" / "seed" / "node-termination-handler-values.yaml"
    values = {
        "enableRebalanceMonitoring": True,
        "enableRebalanceDraining": True,
        "nodeSelector": {"karpenter.sh/capacity-type": "spot", "karpenter.sh/initialized": True},
    }
    bare = InterruptionSettings.from_helm_values(values)
    wrapped = InterruptionSettings.from_helm_values({"aws-node-termination-handler": values})
    assert bare == wrapped
    assert bare.rebalance_draining and bare.spot_draining and bare.scheduled_draining
    assert bare.selects({"karpenter.sh/capacity-type": "spot", "karpenter.sh/initialized": "true"})
    assert not bare.selects({"karpenter.sh/capacity-type": "on-demand"})
    assert InterruptionSettings() == InterruptionSettings.from_helm_values(None)
    with pytest.raises(InputError, match="enableRebalanceDraining"):
        InterruptionSettings.from_helm_values({"enableRebalanceDraining": "yes"})
    assert seed.name  # the seed file itself is exercised by the example scenario


def test_nth_keys_beside_the_wrapper_warn_and_an_empty_wrapper_is_empty():
    """Regression (breaker): keys next to the wrapper were dropped silently, and a wrapper
    whose lines are all commented out (``null``) was an error where Helm reads ``{}``."""
    values = {
        "aws-node-termination-handler": {"enableSpotInterruptionDraining": True},
        "enableRebalanceDraining": True,
        "bogusKey": 1,
    }
    got = InterruptionSettings.from_helm_values(values, file="v.yaml", field="interruption")
    assert not got.rebalance_draining
    (warning,) = got.warnings
    assert "beside the aws-node-termination-handler wrapper, so not read" in warning
    assert "interruption.bogusKey" in warning and "interruption.enableRebalanceDraining" in warning
    empty = InterruptionSettings.from_helm_values({"aws-node-termination-handler": None})
    assert empty == InterruptionSettings()


def _state(n_pods, min_available=None, max_unavailable=None):
    state = ClusterState()
    state.nodes["n"] = Node("n", "c", {}, (), {}, {}, 0.0, ready=True)
    tmpl = make_pod_template()
    from dataclasses import replace

    tmpl = replace(tmpl, labels=(("app", "web"),), namespace="shop")
    for i in range(n_pods):
        state.pods[f"p{i}"] = Pod(
            f"p{i}", "shop", f"web-{i}", tmpl, "shop/web", 0.0, i, node_name="n"
        )
    state.pdbs = [
        PodDisruptionBudget(
            "shop",
            "web",
            Requirements.from_labels({"app": "web"}),
            Source("f", "PodDisruptionBudget", "web"),
            min_available=min_available,
            max_unavailable=max_unavailable,
        )
    ]
    return state


@pytest.mark.parametrize(
    ("min_available", "max_unavailable", "allowed"),
    [(8, None, 2), ("50%", None, 5), (None, 1, 1), (None, "30%", 3), (10, None, 0)],
)
def test_pdb_disruptions_allowed(min_available, max_unavailable, allowed):
    state = _state(10, min_available, max_unavailable)
    assert disruptions_allowed(state, state.pdbs[0]) == allowed


def test_controller_settings_take_nth_values_and_rebalance_replacement(tmp_path):
    from joiner.operator.controller_settings import interruption_settings, load_settings

    path = tmp_path / "settings.yaml"
    path.write_text(
        "interruption:\n  rebalanceReplacement: true\n"
        "  aws-node-termination-handler: {enableRebalanceDraining: true, cordonOnly: true}\n"
    )
    got = interruption_settings(load_settings(path), str(path))
    assert got.rebalance_replacement and got.rebalance_draining and got.cordon_only
    path.write_text("interruption: {rebalanceReplacement: sometimes}\n")
    with pytest.raises(InputError, match="rebalanceReplacement"):
        load_settings(path)
    default = interruption_settings(load_settings(None), None)
    assert not default.rebalance_replacement and not default.rebalance_draining


def test_pdb_budgets_of_several_namespaces_count_only_their_own_pods():
    """``allowed_by_budget`` and ``violated`` walk the pods once for every budget; each
    budget still counts only its namespace's pods its selector matches (terminating and
    DaemonSet pods left out), as ``disruptions_allowed`` does one budget at a time."""
    from dataclasses import replace

    state = ClusterState()
    state.nodes["n"] = Node("n", "c", {}, (), {}, {}, 0.0, ready=True)
    base = make_pod_template()
    order = 0
    for ns, app, count in [("shop", "web", 4), ("shop", "db", 2), ("blog", "web", 3)]:
        tmpl = replace(base, labels=(("app", app),), namespace=ns)
        for i in range(count):
            uid = f"{ns}-{app}-{i}"
            state.pods[uid] = Pod(uid, ns, uid, tmpl, f"{ns}/{app}", 0.0, order, node_name="n")
            order += 1
    state.pods["shop-web-0"].terminating_until_s = 30.0
    daemon = replace(base, labels=(("app", "web"),), namespace="shop")
    state.pods["ds"] = Pod("ds", "shop", "ds", daemon, "shop/ds", 0.0, order, "n", daemon=True)

    def budget(ns, app, **fields):
        selector = Requirements.from_labels({"app": app})
        source = Source("f", "PodDisruptionBudget", f"{ns}-{app}")
        return PodDisruptionBudget(ns, f"{ns}-{app}", selector, source, **fields)

    state.pdbs = [
        budget("shop", "web", min_available=2),  # 3 members (one terminating), 1 allowed
        budget("blog", "web", min_available=4),  # 3 members: violated
        budget("shop", "db", max_unavailable=1),  # 2 members, 1 allowed
        budget("news", "web", min_available=1),  # no members: -1, but not violated
    ]
    assert allowed_by_budget(state) == [1, -1, 1, -1]
    assert allowed_by_budget(state) == [disruptions_allowed(state, b) for b in state.pdbs]
    assert [b.name for b in violated(state)] == ["blog-web"]
    allowed = allowed_by_budget(state)
    assert blocking(state, state.pods["blog-web-1"], allowed) is state.pdbs[1]
    assert blocking(state, state.pods["shop-web-1"], allowed) is None
    assert blocking(state, state.pods["ds"], allowed) is None
