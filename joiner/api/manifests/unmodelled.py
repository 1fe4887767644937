"""Fields Joiner accepts but does not model: one grouped warning per field, naming the
objects that set it (kube-scheduler, Karpenter, the kubelet or EC2 would act on them;
Joiner acts as if they were unset).

Pod fields: those that affect scheduling upstream. Fields with no effect on where or whether
a pod runs (image, probes, env, DNS, security context...) are not listed and stay silent.

Karpenter fields (``SPEC_FIELDS``, per kind): every accepted NodePool, NodeClass,
Provisioner or AWSNodeTemplate field that Karpenter or EC2 acts on and Joiner's converters
drop. ``tests/cli/test_schema_walk_karpenter.py`` walks the manifest models and checks that
each field either changes the loaded objects or is listed here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from joiner.api.manifests import models as m

#: PodSpec field -> (when it counts as set, what upstream does with it).
POD_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "activeDeadlineSeconds": (
        lambda v: v is not None,
        "the kubelet fails the pod after this many seconds",
    ),
    "os": (lambda v: bool(v), "the kubelet rejects a pod whose os differs from the node's"),
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


_EBS_RATE = (
    "blockDeviceMappings[].ebs.volumeInitializationRate",
    "the EBS volume initialization rate",
)
_CONTEXT = ("context", "the CreateFleet Context (reserved capacity)")

#: The v1 EC2NodeClass fields of the launch Joiner's AWS adapter does not write.
_EC2NODECLASS_V1: dict[str, str] = {
    "ipPrefixCount": "IP prefixes assigned per network interface",
    "networkInterfaces": "the launch template's network interfaces (EFA layouts)",
    "connectionTracking": "the launch template's connection tracking timeouts",
    "cpuOptions": "the launch template's CPU options",
    "placementGroupSelector": "the placement group instances launch into",
    _CONTEXT[0]: _CONTEXT[1],
    _EBS_RATE[0]: _EBS_RATE[1],
}

#: Kind (``Kind`` or ``Kind/version``) -> spec field path -> what upstream does with it.
#: A path's ``[]`` marks a list (set when any item sets what follows).
SPEC_FIELDS: dict[str, dict[str, str]] = {
    "EC2NodeClass/v1": _EC2NODECLASS_V1,
    "EC2NodeClass/v1beta1": {
        "kubelet": "v1beta1 kubelet settings belong on the NodePool (template.spec.kubelet)",
        _CONTEXT[0]: _CONTEXT[1],
        _EBS_RATE[0]: _EBS_RATE[1],
    },
    "AWSNodeTemplate": {_CONTEXT[0]: _CONTEXT[1], _EBS_RATE[0]: _EBS_RATE[1]},
    "Provisioner": {
        f"provider.{_CONTEXT[0]}": _CONTEXT[1],
        f"provider.{_EBS_RATE[0]}": _EBS_RATE[1],
        "kubeletConfiguration.containerRuntime": "the node's container runtime (gone in v1)",
    },
    "KWOKNodeClass": {"nodeRegistrationDelay": "Karpenter-kwok delays node registration"},
}


def _values(obj: object, parts: list[str]) -> Iterator[object]:
    if not parts:
        yield obj
        return
    name, many = parts[0].removesuffix("[]"), parts[0].endswith("[]")
    if isinstance(obj, BaseModel):
        value = getattr(obj, name, None)
    elif isinstance(obj, dict):
        value = obj.get(name)
    else:
        return
    if value is None:
        return
    for item in value if many and isinstance(value, list) else [value]:
        yield from _values(item, parts[1:])


def unmodelled_spec_fields(kind: str, spec: BaseModel) -> list[tuple[str, str]]:
    """(field path under ``spec``, upstream effect) of each ``SPEC_FIELDS[kind]`` field that
    ``spec`` sets (not None and not empty); [] for a kind with no such fields."""
    return [
        (path.replace("[]", ""), why)
        for path, why in SPEC_FIELDS.get(kind, {}).items()
        if any(v not in (None, "", [], {}) for v in _values(spec, path.split(".")))
    ]


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
        grouped(f"not modelled: {field} ({why}); Joiner acts as if it were unset", objs)
        for (field, why), objs in sorted(seen.items())
    ]
