"""Pod priority: ``scheduling.k8s.io/v1`` PriorityClass objects and the Priority admission
plugin's resolution of each pod's ``priority`` and ``preemptionPolicy``.

Kubernetes (``plugin/pkg/admission/priority``): a pod naming ``priorityClassName`` gets that
class's ``value`` and ``preemptionPolicy``; a pod naming none gets the class marked
``globalDefault`` (at most one), or priority 0 and ``PreemptLowerPriority`` when there is
none. The built-in classes ``system-cluster-critical`` (2000000000) and
``system-node-critical`` (2000001000) always exist. A pod naming a class that does not exist
is rejected, and so is a pod that sets ``spec.priority`` other than the value admission
computes, or ``spec.preemptionPolicy`` other than the class's (``admitPod`` in
``plugin/pkg/admission/priority/admission.go``: "must not be provided in pod spec"; with no
class and no default the computed policy is ``PreemptLowerPriority``). Joiner applies that
check to pod templates (Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs, DaemonSets),
whose pods admission has yet to create. A Pod whose ``spec.priority`` is already set is a
cluster dump's: admission ran, so it keeps its priority and policy. User classes take values
up to 1000000000 and may not be named ``system-*`` (``apis/scheduling/validation``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt

from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.manifests.manifestset import ManifestSet, PriorityClass

#: Built-in classes (``pkg/apis/scheduling`` ``SystemPriorityClasses``).
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
#: Largest value a user PriorityClass may take (``HighestUserDefinablePriority``).
HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPT_LOWER: Literal["PreemptLowerPriority"] = "PreemptLowerPriority"
NEVER: Literal["Never"] = "Never"


class PriorityClassModel(m.Strict):
    """``scheduling.k8s.io/v1`` PriorityClass (every field is modelled or inert)."""

    apiVersion: str
    kind: Literal["PriorityClass"]
    metadata: m.Metadata
    value: StrictInt = Field(ge=-(2**31), le=HIGHEST_USER_PRIORITY)
    globalDefault: StrictBool = False
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] = PREEMPT_LOWER
    description: Any = None


def is_builtin(doc: dict[str, Any]) -> bool:
    """True for a built-in class exactly as the API server creates it (name and value of
    ``SYSTEM_CLASSES``): every live cluster and every dump of one lists these, and they are
    always in force, so they are not user classes (whose ``system-`` names are refused)."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return isinstance(name, str) and SYSTEM_CLASSES.get(name) == doc.get("value")


def priority_class(model: PriorityClassModel, file: str) -> PriorityClass:
    """The validated model as a domain value.

    Raises:
        InputError: the name is reserved (``system-`` prefix).
    """
    name = model.metadata.name
    if name.startswith("system-"):
        raise InputError("names starting with 'system-' are reserved", field="metadata.name")
    return PriorityClass(
        name,
        model.value,
        model.globalDefault,
        model.preemptionPolicy,
        o.Source(file, "PriorityClass", name, model.apiVersion),
    )


def pod_fields(spec: m.PodSpec, field: str) -> dict[str, Any]:
    """``PodTemplate`` keyword arguments for a pod spec's own priority fields (their types
    are checked by the model: ``priority`` a 32-bit integer, ``preemptionPolicy`` one of
    ``PreemptLowerPriority`` and ``Never``)."""
    return {
        "priority": spec.priority,
        "priority_class": spec.priorityClassName or None,
        "preemption_policy": spec.preemptionPolicy,
    }


def _resolve(t: o.PodTemplate, classes: dict[str, PriorityClass], at: _At) -> tuple[int, str]:
    """The (value, preemption policy) admission computes for the template's class."""
    name = t.priority_class
    if name in SYSTEM_CLASSES:
        return SYSTEM_CLASSES[name], PREEMPT_LOWER
    if name is None:
        pc = next((c for c in classes.values() if c.global_default), None)
        return (0, PREEMPT_LOWER) if pc is None else (pc.value, pc.preemption_policy)
    found = classes.get(name)
    if found is None:
        raise at.error(
            f"no PriorityClass named {name!r} (admission would reject these pods); "
            f"loaded: {', '.join(sorted(classes)) or 'none'}",
            "priorityClassName",
        )
    return found.value, found.preemption_policy


@dataclass(frozen=True, slots=True)
class _At:
    source: o.Source
    #: The pod spec's field path (``spec``, ``spec.template.spec``, ...).
    base: str
    #: A Pod of a cluster dump (``spec.priority`` set): admission already ran.
    admitted: bool = False

    def error(self, message: str, field: str) -> InputError:
        """``message`` about the pod spec's ``field``, naming the file and the object."""
        return InputError(
            message, file=self.source.file, obj=self.source.ref, field=f"{self.base}.{field}"
        )


def _admit(t: o.PodTemplate, classes: dict[str, PriorityClass], at: _At) -> o.PodTemplate:
    if at.admitted and t.priority is not None:
        if t.preemption_policy is not None:
            return t
        return replace(t, preemption_policy=PREEMPT_LOWER)
    value, policy = _resolve(t, classes, at)
    given = f"PriorityClass {t.priority_class!r}" if t.priority_class else "no PriorityClass"
    if t.priority is not None and t.priority != value:
        raise at.error(
            f"{t.priority} must not be set: Priority admission rejects pods whose priority "
            f"differs from the {value} it computes ({given}); remove it",
            "priority",
        )
    if t.preemption_policy is not None and t.preemption_policy != policy:
        raise at.error(
            f"{t.preemption_policy} must not be set: Priority admission rejects pods whose "
            f"preemptionPolicy differs from the {policy} it computes ({given}); set it on "
            "the PriorityClass instead",
            "preemptionPolicy",
        )
    if t.priority == value and t.preemption_policy == policy:
        return t
    return replace(t, priority=value, preemption_policy=policy)


def admit(out: ManifestSet) -> None:
    """Resolve every pod template's priority and preemption policy in place (module docstring).

    Raises:
        InputError: two classes are ``globalDefault`` or share a name, a template names a
            missing class, or sets a ``priority`` or ``preemptionPolicy`` admission rejects.
    """
    seen: dict[str, PriorityClass] = {}
    for c in out.priorityclasses:
        first = seen.setdefault(c.name, c)
        if first is not c:
            raise InputError(
                f"duplicate PriorityClass name (also {first.source.file})",
                file=c.source.file,
                obj=c.source.ref,
                field="metadata.name",
            )
    defaults = [c for c in out.priorityclasses if c.global_default]
    if len(defaults) > 1:
        raise InputError(
            f"only one PriorityClass may be globalDefault (also {defaults[0].source.ref})",
            file=defaults[1].source.file,
            obj=defaults[1].source.ref,
            field="globalDefault",
        )
    classes = {c.name: c for c in out.priorityclasses}
    tmpl = "spec.template.spec"
    out.workloads[:] = [
        replace(w, template=_admit(w.template, classes, _At(w.source, tmpl))) for w in out.workloads
    ]
    out.owned_workloads[:] = [
        replace(w, template=_admit(w.template, classes, _At(w.source, tmpl)))
        for w in out.owned_workloads
    ]
    job = "spec.jobTemplate.spec.template.spec"
    out.cronjobs[:] = [
        replace(c, template=_admit(c.template, classes, _At(c.source, job))) for c in out.cronjobs
    ]
    out.daemonsets[:] = [
        replace(d, template=_admit(d.template, classes, _At(d.source, tmpl)))
        for d in out.daemonsets
    ]
    pods = []
    for p in out.pods:
        admitted = _admit(p.template, classes, _At(p.source, "spec", admitted=True))
        pods.append(p if admitted is p.template else replace(p, template=admitted))
    out.pods[:] = pods
