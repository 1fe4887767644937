"""Warnings about what a manifest asks for that Joiner reads but would mislead a user: pod
spec fields whose upstream effect is not modelled, a ``karpenter.sh/do-not-disrupt`` value
Karpenter ignores, a memory quantity without a unit, and a Node condition status that is
neither ``True``, ``False`` nor ``Unknown``, and a pending Pod's ``PodScheduled`` condition read
against what it says. Each appends to ``ManifestSet.warnings`` (or
``unmodelled``, grouped later); none changes what is read."""

from __future__ import annotations

import re
from collections.abc import Mapping

from joiner.api import durations, labels
from joiner.api.manifests import models as m
from joiner.api.manifests import unmodelled
from joiner.api.manifests.manifestset import ManifestSet


def note_unmodelled(
    spec: m.PodSpec,
    base: str,
    file: str,
    obj: str,
    out: ManifestSet,
    *,
    annotations: Mapping[str, str],
    template: bool = True,
) -> None:
    """Note what pod spec ``spec`` (at path ``base``; a workload's template unless not
    ``template``, a Pod's own spec) sets whose effect Joiner does not model (grouped into
    one warning later, ``unmodelled.grouped_warnings``), and warn of unit-less memory and
    an ignored ``karpenter.sh/do-not-disrupt`` value (``annotations``, the pod's)."""
    found = unmodelled.unmodelled_fields(spec)
    if template and spec.nodeName:
        found.append(("nodeName", unmodelled.TEMPLATE_NODE_NAME))
    if not template:
        # A Pod's own scheduling gates are modelled: it adds no demand and is left out.
        found = [(name, why) for name, why in found if name != "schedulingGates"]
    for name, why in found:
        out.unmodelled.setdefault((f"{base}.{name}", why), []).append(f"{file}: {obj}")
    note_unitless_memory(spec, base, file, obj, out)
    note_ignored_do_not_disrupt(annotations, base, file, obj, out)


def note_ignored_do_not_disrupt(
    annotations: Mapping[str, str], base: str, file: str, obj: str, out: ManifestSet
) -> None:
    """Warn of a ``karpenter.sh/do-not-disrupt`` value that protects nothing although it
    was surely meant to (``True``, ``yes``, `` true``, ``10x``, ``-true``): Karpenter takes only
    ``"true"`` or a Go duration (pkg/utils/pod/scheduling.go ``IsDoNotDisruptActive``), and
    so does Joiner (``durations.do_not_disrupt``); ``"false"`` draws nothing. ``base`` is
    the pod spec's path, whose metadata sits beside it."""
    value = annotations.get(labels.DO_NOT_DISRUPT)
    if value is None or value == "false":
        return
    # A negative duration is one too (``time.ParseDuration``): it protects for no time.
    if value == "true" or durations.do_not_disrupt(value.removeprefix("-"))[1] is not None:
        return
    where = base.removesuffix("spec") + "metadata.annotations"
    out.warnings.append(
        f"{file}: {obj}: field {where}.{labels.DO_NOT_DISRUPT}: {value!r} is neither "
        '"true" nor a Go duration such as 30m, so Karpenter ignores it: the pod does not '
        "block disruption"
    )


#: Below this many bytes a memory quantity is taken for a missing unit: no container runs in
#: less than a mebibyte.
_UNITLESS_MEMORY_MAX = 1 << 20


def note_unitless_memory(spec: m.PodSpec, base: str, file: str, obj: str, out: ManifestSet) -> None:
    """Warn of a memory request or limit written as a bare number under a mebibyte
    (``memory: 2048``, ``memory: 0.5``) or in thousandths of a byte (``memory: 512m``, a CPU
    unit): Kubernetes reads it as bytes, as Joiner does, but it is almost always a forgotten
    or wrong unit."""
    groups = (("containers", spec.containers), ("initContainers", spec.initContainers))
    for group, containers in groups:
        for i, c in enumerate(containers):
            for part, values in (
                ("requests", c.resources.requests),
                ("limits", c.resources.limits),
            ):
                value = values.get("memory")
                text = str(value).strip() if value is not None else ""
                reading = _memory_slip(text)
                if reading is None:
                    continue
                out.warnings.append(
                    f"{file}: {obj}: field {base}.{group}[{i}].resources.{part}.memory: "
                    f"{reading}; did you mean {text.removesuffix('m')}Mi?"
                )


#: A bare decimal number (``2048``, ``0.5``), and one with the milli suffix (``512m``).
_BARE_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+", re.ASCII)
_MILLI_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)m", re.ASCII)


def _memory_slip(text: str) -> str | None:
    """What a memory quantity ``text`` amounts to when it is a bare number under a mebibyte
    or a number of thousandths of a byte (``note_unitless_memory``); None for any other
    text (units, zero, a mebibyte or more, not a number)."""
    if _MILLI_NUMBER.fullmatch(text) and float(text[:-1]) > 0:
        return f"{text} is {text[:-1]} thousandths of a byte (m is milli, a CPU unit)"
    if _BARE_NUMBER.fullmatch(text) and 0 < float(text) < _UNITLESS_MEMORY_MAX:
        return f"{text} has no unit, so it is {text} bytes"
    return None


#: The statuses a Kubernetes condition takes (``metav1.ConditionStatus``).
_CONDITION_STATUSES = ("True", "False", "Unknown")


def note_odd_conditions(parsed: m.Node, file: str, obj: str, out: ManifestSet) -> None:
    """Warn of a Node condition whose status is not ``True``, ``False`` or ``Unknown``
    (``false``, ``Maybe``): Karpenter counts any Ready status but ``True`` as NotReady
    (pkg/controllers/disruption/helpers.go ``BuildDisruptionBudgetMapping``), while the node
    lifecycle controller taints only ``False`` and ``Unknown`` (Kubernetes
    pkg/controller/nodelifecycle/node_lifecycle_controller.go ``doNoScheduleTaintingPass``),
    so such a node is NotReady for budgets yet still takes pods."""
    for i, c in enumerate(parsed.status.conditions):
        if c.status in _CONDITION_STATUSES:
            continue
        effect = (
            "Karpenter counts the node NotReady against disruption budgets, but it gets no "
            "not-ready taint, so pods are still placed there"
            if c.type == "Ready"
            else "it adds no taint"
        )
        out.warnings.append(
            f"{file}: {obj}: field status.conditions[{i}].status: {c.status!r} is not True, "
            f"False or Unknown: {effect}"
        )


#: The Pod condition kube-scheduler sets once it has tried a pod (``v1.PodScheduled``).
_POD_SCHEDULED = "PodScheduled"


def note_pod_scheduled(parsed: m.Pod, file: str, obj: str, out: ManifestSet) -> None:
    """Warn of a pending Pod's ``PodScheduled`` condition that Joiner reads one way while it
    says something else: a type spelled in another case (condition types are
    case-sensitive, so the pod reads as one kube-scheduler has not tried), a second
    ``PodScheduled`` condition, or one whose status or reason is not kube-scheduler's
    refusal (``_refusal_note``). None changes what is read (``pods.pod``: any
    ``PodScheduled`` condition marks the pod tried, Karpenter's demand)."""
    if parsed.spec.nodeName or parsed.spec.schedulingGates:
        return  # bound, or left out while gated (kube-scheduler says SchedulingGated)
    if parsed.status.phase in ("Succeeded", "Failed"):
        return
    seen = False
    for i, c in enumerate(parsed.status.conditions):
        where = f"{file}: {obj}: field status.conditions[{i}]"
        if c.type != _POD_SCHEDULED and c.type.lower() == _POD_SCHEDULED.lower():
            out.warnings.append(
                f"{where}.type: {c.type!r} is not {_POD_SCHEDULED} (condition types are "
                "case-sensitive): the pod is read as one kube-scheduler has not tried yet"
            )
        elif c.type == _POD_SCHEDULED and seen:
            out.warnings.append(
                f"{where}: a second {_POD_SCHEDULED} condition (a Pod has one condition of "
                "each type); the pod is read as one kube-scheduler refused"
            )
        elif c.type == _POD_SCHEDULED:
            seen = True
            note = _refusal_note(c)
            if note is not None:
                out.warnings.append(f"{where}.{note}")


def _refusal_note(c: m.PodConditionModel) -> str | None:
    """What a pending Pod's ``PodScheduled`` condition says that is not kube-scheduler's
    refusal (status ``False``, reason ``Unschedulable`` or not given), as the end of a
    warning naming the field; None when it says that refusal. kube-scheduler sets ``True``
    only as it binds the pod, and Karpenter provisions only for the reason
    ``Unschedulable`` (pkg/utils/pod/scheduling.go ``FailedToSchedule``): with
    ``SchedulingGated`` (its gates gone) kube-scheduler is still to try the pod."""
    read = (
        f"read as a pod kube-scheduler refused ({_POD_SCHEDULED}=False), which Karpenter "
        "provisions for"
    )
    if c.status != "False":
        status = repr(c.status) if c.status else "not given"
        return f"status: {_POD_SCHEDULED} status {status} on a pod without spec.nodeName: {read}"
    if c.reason and c.reason != "Unschedulable":
        return f"reason: {c.reason!r} is not Unschedulable, which Karpenter waits for: {read}"
    return None
