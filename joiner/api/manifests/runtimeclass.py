"""``node.k8s.io/v1`` RuntimeClass: pod overhead and scheduling for pods that name it.

Kubernetes' RuntimeClass admission plugin (``plugin/pkg/admission/runtimeclass``) sets a
pod's ``spec.overhead`` from its RuntimeClass's ``overhead.podFixed`` and merges the
RuntimeClass's ``scheduling.nodeSelector`` (a conflicting key rejects the pod) and
``scheduling.tolerations`` into the pod; kube-scheduler and Karpenter then add the overhead
to the pod's requests (``resourcehelper.PodRequests``). Joiner applies the same to every pod
template once all manifests are loaded, since a RuntimeClass may come after its pods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import Field

from joiner.api import objects as o
from joiner.api import quantity, resourcenames
from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.requirements import Requirement


class Overhead(m.Strict):
    podFixed: dict[str, m.Scalar] = Field(default_factory=dict)


class Scheduling(m.Strict):
    nodeSelector: m.Labels = Field(default_factory=dict)
    tolerations: list[m.Toleration] = Field(default_factory=list)


class RuntimeClassModel(m.Model):
    apiVersion: str
    kind: str
    metadata: m.Metadata
    handler: str = Field(min_length=1)
    overhead: Overhead | None = None
    scheduling: Scheduling | None = None


@dataclass(frozen=True, slots=True)
class RuntimeClass:
    """A RuntimeClass's effect on the pods that name it."""

    name: str
    source: o.Source
    overhead: quantity.Resources
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[o.Toleration, ...] = ()


def runtimeclass(doc: RuntimeClassModel, file: str) -> RuntimeClass:
    """The domain value of a validated RuntimeClass.

    Raises:
        InputError: an overhead quantity does not parse.
    """
    sched = doc.scheduling or Scheduling()
    return RuntimeClass(
        name=doc.metadata.name,
        source=o.Source(file, "RuntimeClass", doc.metadata.name, doc.apiVersion),
        overhead=quantity.parse_resources(
            doc.overhead.podFixed if doc.overhead else {},
            field="overhead.podFixed",
            names=resourcenames.RESOURCE,
        ),
        node_selector=tuple(sorted(sched.nodeSelector.items())),
        tolerations=tuple(
            o.Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect)
            for t in sched.tolerations
        ),
    )


def apply(
    template: o.PodTemplate,
    classes: Mapping[str, RuntimeClass],
    where: str,
    warn: Callable[[str], None],
) -> o.PodTemplate:
    """``template`` as RuntimeClass admission leaves it: overhead added to its requests,
    the class's node selector and tolerations merged in. ``where`` names the pod's owner
    for messages.

    Raises:
        InputError: the class's nodeSelector conflicts with the pod's (admission rejects it).
    """
    name = template.runtime_class
    if name is None:
        return template
    rc = classes.get(name)
    if rc is None:
        warn(
            f"{where}: runtimeClassName {name!r} names no RuntimeClass in the manifests; its "
            "pod overhead and scheduling are not modelled (add the RuntimeClass object)"
        )
        return replace(template, runtime_class=None)
    selector = template.node_selector
    for key, value in rc.node_selector:
        r = selector.get(key)
        if r is not None and not r.has(value):
            raise InputError(
                f"RuntimeClass {name!r} requires {key}={value}, which conflicts with the "
                "pod's nodeSelector (Kubernetes' RuntimeClass admission rejects the pod)",
                field="spec.runtimeClassName",
            )
        selector = selector.add(Requirement.in_(key, value))
    requests = quantity.add(template.requests, rc.overhead)
    quantity.check_plausible(requests, field="spec.overhead")
    return replace(
        template,
        requests=requests,
        node_selector=selector,
        tolerations=(*template.tolerations, *rc.tolerations),
        runtime_class=None,
    )


def apply_all(out: Any, classes: list[RuntimeClass]) -> None:
    """Apply the RuntimeClasses to every pod template of a ``ManifestSet`` in place."""
    by_name = {rc.name: rc for rc in classes}
    warn = out.warnings.append
    for attr in ("workloads", "owned_workloads", "cronjobs", "daemonsets", "pods"):
        items = getattr(out, attr)
        for i, item in enumerate(items):
            if item.template.runtime_class is None:
                continue
            try:
                tmpl = apply(item.template, by_name, f"{item.source.file}: {item.source.ref}", warn)
            except InputError as exc:
                raise exc.located(file=item.source.file, obj=item.source.ref) from exc
            items[i] = replace(item, template=tmpl)
