"""Controller mode counts an unbound pod as demand only once kube-scheduler has tried it and
found no room (``PodScheduled`` with reason ``Unschedulable``), as Karpenter
``pkg/utils/pod/scheduling.go`` ``IsProvisionable`` requires ``FailedToSchedule``: until
then it waits outside the state, so no node is launched for a pod kube-scheduler was about
to bind to existing room."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest

from joiner.cluster.kube import client as kube
from joiner.controllers.provisioning.provisioner import Provisioner
from tests.cluster.test_kube_adapter import NODECLASS, NODEPOOL, Harness, _pod
from tests.manifests import unschedulable


def _started(*pods: dict[str, Any]) -> Harness:
    """A started feed with NodePool ``pool``, no nodes and ``pods``."""
    h = Harness()
    h.sync(kube.NODEPOOL, NODEPOOL)
    h.sync(kube.EC2NODECLASS, NODECLASS)
    for kind in (kube.NODECLAIM, kube.NODE, kube.DAEMONSET, kube.PDB):
        h.sync(kind)
    h.sync(kube.POD, *pods)
    h.feed.start()
    return h


def _launched(h: Harness) -> int:
    """One provisioning pass over the state; how many NodeClaims are live after it."""
    Provisioner(h.state, h.cloud, h.lifecycle, h.clock, random.Random(0)).reconcile()
    return len(h.state.live_nodeclaims())


def test_a_pod_kube_scheduler_has_not_refused_gets_no_nodeclaim_until_it_does() -> None:
    h = _started(_pod("a", "u1"))
    assert h.pending == [] and "u1" not in h.state.pods and "u1" in h.feed.held
    assert _launched(h) == 0
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1")])  # a status update, still untried
    assert h.pending == [] and _launched(h) == 0
    h.clock.run_until(h.clock.now() + 3.0)
    h.feed.deliver(kube.POD, "MODIFIED", [unschedulable(_pod("a", "u1"))])
    assert h.pending == ["a"] and not h.feed.held
    assert h.state.pods["u1"].created_at_s == 0.0  # created when first seen, not when refused
    assert _launched(h) == 1


def test_a_pod_bound_without_being_refused_joins_as_bound() -> None:
    h = _started()
    h.feed.deliver(kube.POD, "ADDED", [_pod("a", "u1")])
    bound: list[str] = []
    h.feed.on_bound.append(lambda p: bound.append(p.name))
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])
    pod = h.state.pods["u1"]
    assert pod.node_name == "n1" and bound == ["a"] and h.pending == []
    assert not h.feed.held and _launched(h) == 0


@pytest.mark.parametrize("reason", ["SchedulingGated", "SchedulerError", ""])
def test_pod_scheduled_false_for_another_reason_is_no_demand(reason: str) -> None:
    doc = _pod("a", "u1")
    doc["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": reason}]
    h = _started(doc)
    assert h.pending == [] and "u1" in h.feed.held and _launched(h) == 0


def test_the_reason_a_pod_waits_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="joiner.cluster.kube.feed")
    h = _started()
    for _ in range(3):
        h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1")])
    waits = [r for r in caplog.records if "ignoring pod ns/a" in r.getMessage()]
    assert len(waits) == 1 and "not found it unschedulable" in waits[0].getMessage()
    assert waits[0].levelno == logging.DEBUG


def test_a_pod_already_counted_stays_when_an_event_lacks_the_condition() -> None:
    h = _started(unschedulable(_pod("a", "u1")))
    assert h.pending == ["a"]
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1")])
    assert "u1" in h.state.pods and not h.feed.held and _launched(h) == 1


def test_a_preemptor_and_a_gated_pod_keep_their_handling() -> None:
    """A pod nominated by kube-scheduler's preemption (which marks it unschedulable) joins;
    a gated pod (not provisionable) waits, unlogged and unheld, until it is bound."""
    nominated = unschedulable(_pod("p", "u1"))
    nominated["status"]["nominatedNodeName"] = "n1"
    gated = _pod("g", "u2")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    h = _started(nominated, gated)
    assert h.pending == ["p"] and not h.feed.held and "u2" not in h.state.pods


def test_a_preemptor_is_no_demand_until_its_nomination_lapses() -> None:
    """Karpenter ``IsPreempting``: a pending pod kube-scheduler nominated to a node waits
    for its victims there; once kube-scheduler clears the nomination and the pod is still
    unschedulable, it is demand."""
    nominated = unschedulable(_pod("p", "u1"))
    nominated["status"]["nominatedNodeName"] = "n1"
    h = _started(nominated)
    assert h.state.pods["u1"].nominated_node_name == "n1"
    assert _launched(h) == 0 and h.pending == ["p"]
    h.feed.deliver(kube.POD, "MODIFIED", [unschedulable(_pod("p", "u1"))])
    assert h.state.pods["u1"].nominated_node_name is None
    assert h.pending == ["p", "p"]  # the provisioner hears of it at once
    assert _launched(h) == 1


def test_a_nominated_pod_that_binds_is_not_announced_as_pending_again() -> None:
    nominated = unschedulable(_pod("p", "u1"))
    nominated["status"]["nominatedNodeName"] = "n1"
    h = _started(nominated)
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("p", "u1", node="n1")])
    assert h.state.pods["u1"].node_name == "n1" and h.pending == ["p"]


def test_a_pod_nominated_after_it_joined_stops_being_demand() -> None:
    h = _started(unschedulable(_pod("p", "u1")))
    later = unschedulable(_pod("p", "u1"))
    later["status"]["nominatedNodeName"] = "n1"
    h.feed.deliver(kube.POD, "MODIFIED", [later])
    assert h.state.pods["u1"].nominated_node_name == "n1"
    assert _launched(h) == 0


def test_a_nominated_pod_never_found_unschedulable_is_no_demand_once_the_nomination_lapses() -> (
    None
):
    """``IsProvisionable`` needs ``FailedToSchedule`` whatever the nomination: a pod
    nominated without the condition (kube-scheduler may name the node a pod is about to be
    bound to) is held, and clearing the nomination does not make it demand."""
    nominated = _pod("p", "u1")
    nominated["status"]["nominatedNodeName"] = "n1"
    h = _started(_pod("p", "u1"))
    h.feed.deliver(kube.POD, "MODIFIED", [nominated])
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("p", "u1")])
    assert "u1" in h.feed.held and h.pending == [] and _launched(h) == 0
    refused = unschedulable(_pod("p", "u1"))
    refused["status"]["nominatedNodeName"] = "n1"
    h.feed.deliver(kube.POD, "MODIFIED", [refused])
    assert h.pending == ["p"] and h.state.pods["u1"].nominated_node_name == "n1"
    assert _launched(h) == 0


def test_a_pod_nominated_to_a_node_that_does_not_exist_is_no_demand() -> None:
    """Karpenter ``IsPreempting`` looks at the name only, not at the node."""
    ghost = unschedulable(_pod("p", "u1"))
    ghost["status"]["nominatedNodeName"] = "no-such-node"
    h = _started(ghost)
    assert h.pending == ["p"] and _launched(h) == 0


def test_a_nomination_on_a_bound_pod_is_not_kept() -> None:
    bound = unschedulable(_pod("a", "u1", node="n1"))
    bound["status"]["nominatedNodeName"] = "n2"
    h = _started(bound)
    h.feed.deliver(kube.POD, "MODIFIED", [bound])
    assert h.state.pods["u1"].nominated_node_name is None


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"phase": "Pending", "conditions": None},
        {"phase": None, "conditions": [{"type": "PodScheduled", "reason": None}]},
        {"phase": "Pending", "nominatedNodeName": ""},
    ],
)
def test_a_pod_without_a_readable_unschedulable_condition_is_held(status: Any) -> None:
    doc = _pod("a", "u1")
    doc["status"] = status
    h = _started(doc)
    assert "u1" in h.feed.held and "u1" not in h.state.pods and _launched(h) == 0


@pytest.mark.parametrize(
    "status",
    [
        {"conditions": {"type": "PodScheduled", "reason": "Unschedulable"}},
        {"conditions": [{"reason": "Unschedulable"}]},
        {"conditions": [{"type": "PodScheduled", "status": False, "reason": "Unschedulable"}]},
        {"conditions": [None]},
        {"nominatedNodeName": 5},
    ],
)
def test_a_pod_of_the_wrong_shape_is_warned_about_and_kept_as_it_was(
    status: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A document the loader refuses is logged, not dropped in silence, and leaves the pod
    where it was (held here)."""
    # the level is set here: after the CLI tests the root logger may be at ERROR
    caplog.set_level(logging.WARNING, logger="joiner")
    h = _started(_pod("a", "u1"))
    doc = _pod("a", "u1")
    doc["status"] = status
    h.feed.deliver(kube.POD, "MODIFIED", [doc])
    assert "u1" in h.feed.held and _launched(h) == 0
    assert any("pod ns/a not read" in r.getMessage() for r in caplog.records)


def test_a_held_pod_marked_then_unmarked_bound_and_deleted() -> None:
    h = _started(_pod("a", "u1"))
    gone: list[str] = []
    h.feed.on_pod_gone.append(lambda p: gone.append(p.name))
    h.feed.deliver(kube.POD, "MODIFIED", [unschedulable(_pod("a", "u1"))])
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1")])
    assert h.pending == ["a"] and not h.feed.held  # counted once, it stays
    h.feed.deliver(kube.POD, "MODIFIED", [_pod("a", "u1", node="n1")])
    h.feed.deliver(kube.POD, "DELETED", [_pod("a", "u1", node="n1")])
    assert h.state.pods["u1"].deleted_at_s is not None and gone == ["a"]


@pytest.mark.parametrize(
    "last",
    [
        ("DELETED", {}),
        ("MODIFIED", {"deletionTimestamp": "2026-01-01T00:00:00Z"}),
        ("MODIFIED", {"phase": "Succeeded"}),
        ("MODIFIED", {"phase": "Failed"}),
    ],
)
def test_a_held_pod_that_goes_away_leaves_nothing_behind(last: tuple[str, dict[str, Any]]) -> None:
    event, change = last
    h = _started(_pod("a", "u1"))
    gone: list[str] = []
    h.feed.on_pod_gone.append(lambda p: gone.append(p.name))
    doc = unschedulable(_pod("a", "u1"))
    if "deletionTimestamp" in change:
        doc["metadata"]["deletionTimestamp"] = change["deletionTimestamp"]
    if "phase" in change:
        doc["status"]["phase"] = change["phase"]
    h.feed.deliver(kube.POD, event, [doc])
    assert not h.feed.held and "u1" not in h.state.pods and gone == [] and h.pending == []
    assert not h.feed._held_since
    assert _launched(h) == 0


def test_a_stale_event_after_a_held_pod_was_deleted_does_not_bring_it_back() -> None:
    """A pod deleted while held has no state entry to mark deleted: its tombstone keeps a
    late event (a refused copy of it) from making it demand and launching a node."""
    h = _started(_pod("a", "u1"))
    h.feed.deliver(kube.POD, "DELETED", [_pod("a", "u1")])
    h.feed.deliver(kube.POD, "MODIFIED", [unschedulable(_pod("a", "u1"))])
    assert "u1" not in h.state.pods and not h.feed.held and h.pending == []
    assert _launched(h) == 0
    # the same name made again is a new pod (a new uid)
    h.feed.deliver(kube.POD, "ADDED", [unschedulable(_pod("a", "u2"))])
    assert h.pending == ["a"] and _launched(h) == 1


def test_the_deleted_held_pods_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from joiner.cluster.kube import feed

    monkeypatch.setattr(feed, "DELETED_HELD_KEPT", 2)
    h = _started()
    for uid in ("u1", "u2", "u3"):
        h.feed.deliver(kube.POD, "DELETED", [_pod("a", uid)])
    assert list(h.feed._deleted_unseen) == ["u2", "u3"]
    h.feed.deliver(kube.POD, "MODIFIED", [unschedulable(_pod("a", "u1"))])  # forgotten
    assert h.pending == ["a"]


def test_a_restart_rebuilds_held_and_nominated_pods_and_a_relist_forgets_a_gone_one() -> None:
    untried_nominated = _pod("tn", "u4")
    untried_nominated["status"]["nominatedNodeName"] = "n1"
    preemptor = unschedulable(_pod("p", "u3"))
    preemptor["status"]["nominatedNodeName"] = "n1"
    pods = [_pod("t", "u1"), unschedulable(_pod("r", "u2")), preemptor, untried_nominated]
    h = _started(*pods, _pod("b", "u5", node="n1"))
    assert set(h.feed.held) == {"u1", "u4"} and sorted(h.pending) == ["p", "r"]
    assert h.state.pods["u3"].nominated_node_name == "n1" and h.state.pods["u5"].node_name
    assert _launched(h) == 1  # for r only
    h.sync(kube.POD, *pods[1:])  # a relist: t is gone
    assert set(h.feed.held) == {"u4"} and "u1" not in h.feed._held_since


def test_a_relist_showing_a_pod_recreated_under_its_name_forgets_the_old_one() -> None:
    """Deleted and created again under the same name while the watch was down (a
    StatefulSet's pod): the relist lists the new uid only, so the old pod, counted or held,
    is gone; it was kept as demand (or held) for good."""
    h = _started(unschedulable(_pod("a", "u1")), _pod("b", "u3"))
    h.sync(kube.POD, unschedulable(_pod("a", "u2")), _pod("b", "u4"))
    assert h.state.pods["u1"].deleted_at_s is not None
    assert [p.uid for p in h.state.pending_pods()] == ["u2"] and set(h.feed.held) == {"u4"}
