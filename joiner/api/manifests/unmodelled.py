"""Pod fields that affect scheduling upstream but that Joiner does not model: one grouped
warning per field, naming the objects that set it (kube-scheduler, Karpenter and the
kubelet would act on them; Joiner schedules as if they were unset).

Fields with no effect on where or whether a pod runs (image, probes, env, DNS, security
context...) are not listed and stay silent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api.manifests import models as m

#: PodSpec field -> (when it counts as set, what upstream does with it).
POD_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "activeDeadlineSeconds": (
        lambda v: v is not None,
        "the kubelet fails the pod after this many seconds",
    ),
    "os": (lambda v: bool(v), "the kubelet rejects a pod whose os differs from the node's"),
    # Admission fills priority 0 and PreemptLowerPriority into every pod of a dump.
    "priority": (lambda v: v not in (None, 0, "0"), "kube-scheduler preempts lower-priority pods"),
    "priorityClassName": (
        lambda v: bool(v) and v not in ("system-cluster-critical", "system-node-critical"),
        "kube-scheduler preempts lower-priority pods (critical classes only order drains)",
    ),
    "preemptionPolicy": (
        lambda v: bool(v) and v != "PreemptLowerPriority",
        "kube-scheduler preemption",
    ),
    "resourceClaims": (lambda v: bool(v), "dynamic resource allocation (DRA)"),
    "resources": (lambda v: bool(v), "pod-level resources size the pod"),
    "schedulerName": (
        lambda v: bool(v) and v != "default-scheduler",
        "another scheduler binds the pod",
    ),
    "schedulingGates": (lambda v: bool(v), "a gated pod is neither scheduled nor provisioned"),
}


#: A workload template's ``nodeName`` (a Pod's own ``spec.nodeName`` is modelled: bound).
TEMPLATE_NODE_NAME = (
    "its pods go straight to that node's kubelet; neither kube-scheduler nor Karpenter place them"
)


def unmodelled_fields(spec: m.PodSpec) -> list[tuple[str, str]]:
    """(field, upstream effect) of each field ``spec`` sets that Joiner does not model."""
    return [
        (name, why) for name, (is_set, why) in POD_FIELDS.items() if is_set(getattr(spec, name))
    ]


def grouped_warnings(seen: dict[tuple[str, str], list[str]]) -> list[str]:
    """One warning per (field path, effect), naming the objects (the first three without
    ``-v``: ``api.grouping``)."""
    from joiner.api.grouping import grouped

    return [
        grouped(f"not modelled: {field} ({why}); Joiner schedules as if it were unset", objs)
        for (field, why), objs in sorted(seen.items())
    ]
