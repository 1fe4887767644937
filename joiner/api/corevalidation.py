"""Rules the API server applies to core objects in Go, beyond their OpenAPI schema.

Kubernetes refuses these at create (``k8s.io/kubernetes`` ``pkg/apis/core/validation``,
``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``), so a dump of a live cluster
never holds them; a hand-written manifest may. ``check_object`` applies them to a parsed
manifest (nulls already dropped) before its model reads it:

- container names (init and regular) are DNS-1123 labels, unique across both lists
  (core ``validateContainers``, ``validateInitContainers``: ``IsDNS1123Label``, "Duplicate
  value");
- a container's request is at most its limit for every resource named in both (core
  ``ValidateContainerResourceRequirements``: "must be less than or equal to ... limit");
- a toleration with operator ``Exists`` has no value, and ``tolerationSeconds`` needs the
  ``NoExecute`` effect (core ``ValidateTolerations``);
- the pod template of a Deployment, ReplicaSet, StatefulSet or DaemonSet restarts
  ``Always`` (apps ``ValidatePodTemplateSpecForReplicaSet``,
  ``ValidatePodTemplateSpecForStatefulSet``, ``ValidateDaemonSetSpec``);
- a Deployment's ``maxUnavailable`` and ``maxSurge`` are a non-negative integer or a string
  of digits and ``%`` (apps ``ValidatePositiveIntOrPercent``, apimachinery
  ``IsValidPercent``), not both 0, and ``maxUnavailable`` at most 100% (apps
  ``ValidateRollingUpdateDeployment``, ``IsNotMoreThan100Percent``);
- a CronJob's name is at most 52 characters, leaving room for the 11 its Jobs add (batch
  ``ValidateCronJobCreate``);
- a pod's (or pod template's) ``controller.kubernetes.io/pod-deletion-cost`` annotation is a
  32-bit integer in decimal, without a plus sign or leading zeros (core
  ``ValidatePodSpecificAnnotations``, core helper ``GetDeletionCostFromPodAnnotations``:
  "must be a 32bit integer").
"""

from __future__ import annotations

import re
from typing import Any

from joiner.api import k8snames
from joiner.api.errors import InputError
from joiner.api.labels import POD_DELETION_COST
from joiner.api.quantity import exact_quantity
from joiner.api.validation import shown

#: batch ``ValidateCronJobCreate``: 63 (a label value) less the 11 of a Job's suffix.
CRONJOB_NAME_MAX = 52

_PERCENT = re.compile(r"[0-9]+%", re.ASCII)

#: Where each kind keeps its pod spec (keys from the object's root).
_POD_SPEC: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_RESTART_ALWAYS = frozenset(("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"))
#: The range of a 32-bit integer (Go ``strconv.ParseInt(value, 10, 32)``).
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _pod_spec(doc: dict[str, Any], kind: str) -> tuple[dict[str, Any], str] | None:
    """The pod spec of ``doc`` and its field path, or None when it has none (yet)."""
    node: Any = doc
    for key in _POD_SPEC.get(kind, ()):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if kind not in _POD_SPEC or not isinstance(node, dict):
        return None
    return node, ".".join(_POD_SPEC[kind])


def _containers(spec: dict[str, Any], path: str) -> list[tuple[dict[str, Any], str]]:
    """``(container, field path)`` for each init then regular container that is a mapping."""
    out = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if isinstance(items, list):
            out += [(c, f"{path}.{key}[{i}]") for i, c in enumerate(items) if isinstance(c, dict)]
    return out


def _check_container_names(containers: list[tuple[dict[str, Any], str]]) -> None:
    """Core ``validateContainers``/``validateInitContainers``: each name a DNS-1123 label,
    none twice across init and regular containers.

    Raises:
        InputError: a name breaks the rule or repeats (field named).
    """
    seen: dict[str, str] = {}
    for container, path in containers:
        name = container.get("name")
        if not isinstance(name, str):
            continue  # a missing or non-string name is the model's error
        problems = k8snames.dns1123_label(name)
        if problems:
            raise InputError(
                f"container name {shown(name)} {'; '.join(problems)}", field=f"{path}.name"
            )
        if name in seen:
            raise InputError(
                f"duplicate container name {shown(name)} (also at {seen[name]}); the API "
                "server refuses two containers of one name, init containers included",
                field=f"{path}.name",
            )
        seen[name] = path


def _amount(value: Any, field: str) -> Any:
    """``value`` as an exact quantity.

    Raises:
        InputError: not a quantity (the model then gives its own message).
    """
    try:
        return exact_quantity(str(value).strip())
    except ValueError as exc:
        raise InputError(f"{shown(value)} is not a Kubernetes quantity", field=field) from exc


def _check_requests_within_limits(container: dict[str, Any], path: str) -> None:
    """Core ``ValidateContainerResourceRequirements``: a request is at most its limit.

    Raises:
        InputError: a request exceeds the limit of the same resource.
    """
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return
    for name, request in requests.items():
        if name not in limits:
            continue
        field = f"{path}.resources.requests.{name}"
        if _amount(request, field) > _amount(limits[name], f"{path}.resources.limits.{name}"):
            raise InputError(
                f"request {shown(request)} must be less than or equal to the {name} limit of "
                f"{shown(limits[name])}",
                field=field,
            )


def _check_tolerations(spec: dict[str, Any], path: str) -> None:
    """Core ``ValidateTolerations``: ``Exists`` takes no value; ``tolerationSeconds`` only
    with the ``NoExecute`` effect.

    Raises:
        InputError: a toleration breaks either rule (field named).
    """
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        return
    for i, tol in enumerate(tolerations):
        if not isinstance(tol, dict):
            continue  # the model names a toleration that is not a mapping
        where = f"{path}.tolerations[{i}]"
        if tol.get("operator") == "Exists" and tol.get("value"):
            raise InputError(
                f"value {shown(tol['value'])} must be empty when operator is Exists",
                field=f"{where}.value",
            )
        if "tolerationSeconds" in tol and tol.get("effect") != "NoExecute":
            raise InputError(
                f"effect must be NoExecute when tolerationSeconds is set (got "
                f"{shown(tol.get('effect', ''))})",
                field=f"{where}.effect",
            )


def _int_or_percent(value: Any, field: str) -> int:
    """Apps ``ValidatePositiveIntOrPercent``: the integer, or the percentage's number.

    Raises:
        InputError: a negative integer, or a string that is not digits and ``%``.
    """
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            raise InputError(
                f"{shown(value)} must be an integer or a percentage of digits and % (e.g. "
                "'25%'); a count is written without quotes",
                field=field,
            )
        return int(value[:-1])
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InputError(f"{value} must be greater than or equal to 0", field=field)
        return value
    raise InputError(f"{shown(value)} must be an integer or a percentage", field=field)


def _check_rolling_update(doc: dict[str, Any]) -> None:
    """Apps ``ValidateRollingUpdateDeployment`` on a Deployment's ``rollingUpdate``.

    Raises:
        InputError: a value is neither an integer nor a percentage, both are 0, or
            ``maxUnavailable`` is above 100%.
    """
    spec = doc.get("spec")
    strategy = spec.get("strategy") if isinstance(spec, dict) else None
    rolling = strategy.get("rollingUpdate") if isinstance(strategy, dict) else None
    if not isinstance(rolling, dict):
        return
    path = "spec.strategy.rollingUpdate"
    # Absent fields take the defaults (25% each, apps/v1 SetDefaults_Deployment).
    unavailable = rolling.get("maxUnavailable", "25%")
    surge = rolling.get("maxSurge", "25%")
    n_unavailable = _int_or_percent(unavailable, f"{path}.maxUnavailable")
    n_surge = _int_or_percent(surge, f"{path}.maxSurge")
    if n_unavailable == 0 and n_surge == 0:
        raise InputError("may not be 0 when maxSurge is 0", field=f"{path}.maxUnavailable")
    if isinstance(unavailable, str) and n_unavailable > 100:
        raise InputError(
            f"{shown(unavailable)} must not be greater than 100%", field=f"{path}.maxUnavailable"
        )


def _check_cronjob_name(doc: dict[str, Any]) -> None:
    """Batch ``ValidateCronJobCreate``: a CronJob's name is at most 52 characters.

    Raises:
        InputError: the name is longer.
    """
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(name, str) and len(name) > CRONJOB_NAME_MAX:
        raise InputError(
            f"a CronJob name must be no more than {CRONJOB_NAME_MAX} characters (got "
            f"{len(name)}): its Jobs add 11 and a Job's name must be a 63-character label",
            field="metadata.name",
        )


def pod_deletion_cost(value: str, field: str) -> int:
    """A ``controller.kubernetes.io/pod-deletion-cost`` value as the API server reads it.

    Kubernetes core helper ``GetDeletionCostFromPodAnnotations``: the first character is a
    minus sign, a digit 1-9, or the whole value is ``0`` (``validFirstDigit``), then the
    value is a base-10 32-bit integer (``strconv.ParseInt(value, 10, 32)``).

    Returns:
        The cost, in [-2147483648, 2147483647].

    Raises:
        InputError: anything else (core ``ValidatePodSpecificAnnotations``: "must be a
            32bit integer"), naming ``field``.
    """
    digits = value[1:] if value.startswith("-") else value
    first_ok = value.startswith("-") or value == "0" or value[:1] in tuple("123456789")
    if first_ok and digits.isascii() and digits.isdigit():
        cost = int(value)
        if _INT32_MIN <= cost <= _INT32_MAX:
            return cost
    raise InputError(
        f"{shown(value)} must be a 32bit integer (no plus sign or leading zeros), as the API "
        "server requires of a pod's deletion cost",
        field=field,
    )


def _check_deletion_cost(doc: dict[str, Any], kind: str) -> None:
    """The pod's or its template's deletion cost is a 32-bit integer (``pod_deletion_cost``).

    Raises:
        InputError: it is not.
    """
    meta_path = (*_POD_SPEC[kind][:-1], "metadata")
    node: Any = doc
    for key in meta_path:
        node = node.get(key) if isinstance(node, dict) else None
    annotations = node.get("annotations") if isinstance(node, dict) else None
    value = annotations.get(POD_DELETION_COST) if isinstance(annotations, dict) else None
    if isinstance(value, str):  # a value that is not a string: the model names it
        pod_deletion_cost(value, f"{'.'.join(meta_path)}.annotations.{POD_DELETION_COST}")


def check_object(doc: dict[str, Any], kind: str, file: str, obj: str) -> None:
    """Apply the rules of the module docstring to ``doc`` of ``kind`` (core and workload
    kinds; any other kind passes).

    Raises:
        InputError: a rule is broken, naming ``file``, ``obj`` and the field.
    """
    try:
        if kind == "CronJob":
            _check_cronjob_name(doc)
        if kind == "Deployment":
            _check_rolling_update(doc)
        found = _pod_spec(doc, kind)
        if found is None:
            return
        spec, path = found
        _check_deletion_cost(doc, kind)
        if kind in _RESTART_ALWAYS and spec.get("restartPolicy", "Always") != "Always":
            raise InputError(
                f"restartPolicy {shown(spec['restartPolicy'])} is not supported: a {kind}'s "
                "pods restart Always",
                field=f"{path}.restartPolicy",
            )
        containers = _containers(spec, path)
        _check_container_names(containers)
        for container, cpath in containers:
            _check_requests_within_limits(container, cpath)
        _check_tolerations(spec, path)
    except InputError as exc:
        raise exc.located(file=file, obj=obj) from exc
