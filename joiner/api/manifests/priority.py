"""Pod priority: ``scheduling.k8s.io/v1`` PriorityClass objects and the Priority admission
plugin's resolution of each pod's ``priority`` and ``preemptionPolicy``.

Kubernetes (``plugin/pkg/admission/priority``): a pod naming ``priorityClassName`` gets that
class's ``value`` and ``preemptionPolicy``; a pod naming none gets the class marked
``globalDefault`` (at most one), or priority 0 and ``PreemptLowerPriority`` when there is
none. The built-in classes ``system-cluster-critical`` (2000000000) and
``system-node-critical`` (2000001000) always exist. A pod naming a class that does not exist
is rejected. A pod whose ``spec.priority`` is already set (a cluster dump: admission ran)
keeps it. User classes take values up to 1000000000 and may not be named ``system-*``
(``apis/scheduling/validation``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import models as m

if TYPE_CHECKING:
    from joiner.api.manifests.loader import ManifestSet

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
    value: int = Field(ge=-(2**31), le=HIGHEST_USER_PRIORITY)
    globalDefault: bool = False
    preemptionPolicy: Literal["PreemptLowerPriority", "Never"] = PREEMPT_LOWER
    description: Any = None


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A PriorityClass: ``value`` (higher is more important), whether it is the default for
    pods naming none, and whether its pods may preempt."""

    name: str
    value: int
    global_default: bool
    preemption_policy: str
    source: o.Source


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
    """``PodTemplate`` keyword arguments for a pod spec's own priority fields.

    Raises:
        InputError: ``priority`` is not an integer, or ``preemptionPolicy`` is not one of
            ``PreemptLowerPriority`` and ``Never``.
    """
    value: int | None = None
    if spec.priority is not None:
        try:
            value = int(str(spec.priority))
        except ValueError:
            raise InputError(
                f"must be an integer, got {spec.priority!r}", field=f"{field}.priority"
            ) from None
    policy = spec.preemptionPolicy
    if policy is not None and policy not in (PREEMPT_LOWER, NEVER):
        raise InputError(
            f"must be {PREEMPT_LOWER} or {NEVER}, got {policy!r}",
            field=f"{field}.preemptionPolicy",
        )
    name = spec.priorityClassName
    return {
        "priority": value,
        "priority_class": str(name) if name else None,
        "preemption_policy": policy,
    }


def _admit(t: o.PodTemplate, classes: dict[str, PriorityClass], source: o.Source) -> o.PodTemplate:
    if t.priority is not None:  # admission already ran (a dump)
        return replace(t, preemption_policy=t.preemption_policy or PREEMPT_LOWER)
    name = t.priority_class
    if name in SYSTEM_CLASSES:
        return replace(
            t, priority=SYSTEM_CLASSES[name], preemption_policy=t.preemption_policy or PREEMPT_LOWER
        )
    if name is not None:
        pc = classes.get(name)
        if pc is None:
            raise InputError(
                f"no PriorityClass named {name!r} (admission would reject these pods); "
                f"loaded: {', '.join(sorted(classes)) or 'none'}",
                file=source.file,
                obj=source.ref,
                field="priorityClassName",
            )
    else:
        pc = next((c for c in classes.values() if c.global_default), None)
        if pc is None:
            return replace(t, priority=0, preemption_policy=t.preemption_policy or PREEMPT_LOWER)
    # A pod's own preemptionPolicy gives way to its class's (admission sets it).
    return replace(t, priority=pc.value, preemption_policy=pc.preemption_policy)


def admit(out: ManifestSet) -> None:
    """Resolve every pod template's priority and preemption policy in place (module docstring).

    Raises:
        InputError: two classes are ``globalDefault`` or share a name, or a template names a
            missing class.
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
    out.workloads[:] = [
        replace(w, template=_admit(w.template, classes, w.source)) for w in out.workloads
    ]
    out.owned_workloads[:] = [
        replace(w, template=_admit(w.template, classes, w.source)) for w in out.owned_workloads
    ]
    out.cronjobs[:] = [
        replace(c, template=_admit(c.template, classes, c.source)) for c in out.cronjobs
    ]
    out.daemonsets[:] = [
        replace(d, template=_admit(d.template, classes, d.source)) for d in out.daemonsets
    ]
    out.pods[:] = [replace(p, template=_admit(p.template, classes, p.source)) for p in out.pods]
