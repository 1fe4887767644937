"""Resource names (the keys of a ``ResourceList``: ``cpu``, ``memory``, ``nvidia.com/gpu``)
validated as Kubernetes validates them, so that a name with a blank, a stray ``/`` or an
unprefixed made-up name is an input error instead of a resource no node ever offers.

Three rules, from the loosest:

``QUALIFIED``
    ``IsQualifiedName`` (``k8s.io/apimachinery/pkg/util/validation``): an optional DNS-1123
    subdomain prefix and ``/``, then a name of at most 63 characters of ``[A-Za-z0-9-_.]``
    that starts and ends with a letter or digit. Karpenter's CRDs (NodePool and Provisioner
    ``limits``, NodeClaim ``resources``) and the CapacityBuffer CRD check nothing more, and
    Karpenter's own ``nodes`` limit is such a name.
``RESOURCE``
    ``validateResourceName`` (``k8s.io/kubernetes/pkg/apis/core/validation``): qualified,
    and a name without a prefix must be a standard one (``cpu``, ``memory``, ``pods``,
    ``ephemeral-storage``, ``hugepages-<size>``, ...; ``helper.IsStandardResourceName``):
    node capacity, pod and RuntimeClass overhead, volume claims, instance types.
``CONTAINER``
    ``validateContainerResourceName``: a resource rule name that, without a prefix, is one a
    container may request (``cpu``, ``memory``, ``ephemeral-storage``, ``hugepages-<size>``;
    ``IsStandardContainerResourceName``), and with a prefix outside ``kubernetes.io/`` an
    extended resource (``IsExtendedResourceName``: not ``requests.``-prefixed, and
    ``requests.<name>`` is itself qualified). ``example.com/widget``, an extended resource
    Joiner knows nothing of, is well formed and accepted.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from joiner.api.errors import InputError

Rule = Literal["qualified", "resource", "container"]
QUALIFIED: Rule = "qualified"
RESOURCE: Rule = "resource"
CONTAINER: Rule = "container"

_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", re.ASCII)
_NAME_MAX = 63
_SUBDOMAIN = re.compile(
    r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*", re.ASCII
)
_SUBDOMAIN_MAX = 253
_HUGEPAGES = "hugepages-"

#: ``helper.IsStandardResourceName``'s set (besides ``hugepages-*``).
STANDARD = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
#: ``IsStandardContainerResourceName``'s set (besides ``hugepages-*``).
STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})


@lru_cache(maxsize=8192)
def qualified_name_problem(value: str) -> str | None:
    """What makes ``value`` not a qualified name (``IsQualifiedName``), or None."""
    parts = value.split("/")
    if len(parts) > 2:
        return "has more than one '/'"
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "has an empty prefix before '/'"
        if len(prefix) > _SUBDOMAIN_MAX or not _SUBDOMAIN.fullmatch(prefix):
            return (
                f"has the prefix {prefix!r}, which is not a DNS subdomain (lower-case letters, "
                "digits, '-' and '.', e.g. example.com)"
            )
    name = parts[-1]
    if not name:
        return "has an empty name"
    if len(name) > _NAME_MAX:
        return f"has a name longer than {_NAME_MAX} characters"
    if not _NAME.fullmatch(name):
        return (
            "has characters other than letters, digits, '-', '_' and '.' in its name, or does "
            "not start and end with a letter or digit"
        )
    return None


@lru_cache(maxsize=4096)
def _problem(name: str, rule: Rule) -> str | None:
    problem = qualified_name_problem(name)
    if problem is not None or rule == QUALIFIED:
        return problem
    prefixed = "/" in name
    if not prefixed and not (name in STANDARD or name.startswith(_HUGEPAGES)):
        return "is not a standard resource name; give it a domain prefix (e.g. example.com/name)"
    if rule == RESOURCE:
        return None
    if not prefixed:
        if name in STANDARD_CONTAINER or name.startswith(_HUGEPAGES):
            return None
        return (
            "is not a resource a container can request (cpu, memory, ephemeral-storage, "
            "hugepages-<size>, or an extended resource such as nvidia.com/gpu)"
        )
    native = "kubernetes.io/" in name
    if not native and (
        name.startswith("requests.") or qualified_name_problem(f"requests.{name}") is not None
    ):
        return "does not follow the extended resource name standard (domain/name)"
    return None


def is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a prefixed name outside ``kubernetes.io/`` (such as
    ``nvidia.com/gpu``), not ``requests.``-prefixed. The API server takes only whole amounts
    of one in a container's requests and limits."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def check(name: object, *, rule: Rule, field: str | None = None) -> str:
    """``name`` when it is a valid resource name under ``rule`` (module docstring).

    Raises:
        InputError: not a string, or invalid; the message says why, ``field`` names it.
    """
    if not isinstance(name, str):
        raise InputError(f"resource name {name!r} must be a string", field=field)
    problem = _problem(name, rule)
    if problem is not None:
        raise InputError(f"resource name {name!r} {problem}", field=field)
    return name
