"""A pending Pod's ``PodScheduled`` condition that says one thing while Joiner reads another
warns, naming the field (``input_notes.note_pod_scheduled``): ``joiner plan`` lets
kube-scheduler try a pod without the condition on the existing nodes first, and takes a pod
with it as one kube-scheduler refused, Karpenter's demand, whatever its status said."""

from __future__ import annotations

import pytest

from joiner.api.manifests import load_text

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  NODE
  containers: [{name: c, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
status:
  phase: Pending
  conditions: CONDITIONS
"""


def _load(conditions: str, node: str = "") -> tuple[list[str], bool]:
    text = POD.replace("CONDITIONS", conditions).replace("NODE", node or "priority: 0")
    loaded = load_text(text, "pods.yaml")
    (pod,) = loaded.pods
    return loaded.warnings, pod.scheduler_tried


@pytest.mark.parametrize(("status", "shown"), [("'True'", "'True'"), ("Unknown", "'Unknown'")])
def test_a_pending_pod_scheduled_other_than_false_warns(status: str, shown: str) -> None:
    """``PodScheduled=True`` without ``spec.nodeName`` (kube-scheduler sets it only as it
    binds) was read as a refused pod, Karpenter's demand, without a word."""
    warnings, tried = _load(f"[{{type: PodScheduled, status: {status}}}]")
    assert warnings == [
        f"pods.yaml: Pod/p: field status.conditions[0].status: PodScheduled status "
        f"{shown} on a pod without spec.nodeName: read as a pod kube-scheduler refused "
        "(PodScheduled=False), which Karpenter provisions for"
    ]
    assert tried


def test_a_condition_without_a_status_says_so() -> None:
    warnings, _ = _load("[{type: PodScheduled}]")
    assert ["status not given on a pod" in w for w in warnings] == [True]


@pytest.mark.parametrize(
    ("conditions", "warning", "tried"),
    [
        # another condition type: the pod is new to kube-scheduler
        (
            "[{type: podscheduled, status: 'False'}]",
            "[0].type: 'podscheduled' is not PodScheduled (condition types are "
            "case-sensitive): the pod is read as one kube-scheduler has not tried yet",
            False,
        ),
        (
            "[{type: PodScheduled, status: 'False'}, {type: PodScheduled}]",
            "[1]: a second PodScheduled condition (a Pod has one condition of each type); "
            "the pod is read as one kube-scheduler refused",
            True,
        ),
        # Karpenter provisions only for reason Unschedulable (FailedToSchedule)
        (
            "[{type: PodScheduled, status: 'False', reason: SchedulingGated}]",
            "[0].reason: 'SchedulingGated' is not Unschedulable, which Karpenter waits for: "
            "read as a pod kube-scheduler refused (PodScheduled=False), which Karpenter "
            "provisions for",
            True,
        ),
    ],
)
def test_a_misspelt_repeated_or_gated_pod_scheduled_warns(
    conditions: str, warning: str, tried: bool
) -> None:
    assert _load(conditions) == (
        [f"pods.yaml: Pod/p: field status.conditions{warning}"],
        tried,
    )


def test_a_refused_pod_and_a_bound_one_draw_nothing() -> None:
    assert _load("[{type: PodScheduled, status: 'False', reason: Unschedulable}]") == ([], True)
    bound, _ = _load("[{type: PodScheduled, status: 'True'}]", node="nodeName: n1")
    assert bound == []
    gated = "[{type: PodScheduled, status: 'False', reason: SchedulingGated}]"
    assert _load(gated, node="schedulingGates: [{name: g}]") == ([], True)
