"""cluster-proportional-autoscaler (CPA) as users deploy it: a Deployment running the
``cluster-proportional-autoscaler`` image with ``--target``, ``--configmap`` (and optionally
``--namespace``, ``--default-params``, ``--poll-period-seconds``), and a ``v1`` ConfigMap
whose ``linear`` or ``ladder`` key holds the JSON parameters. The cluster-autoscaler FAQ sizes
overprovisioning placeholders this way (a share of the cluster's cores or nodes).

Upstream rules (kubernetes-sigs/cluster-proportional-autoscaler):

- ``cmd/cluster-proportional-autoscaler/options``: the flags; ``--target`` is
  ``<kind>/<name>`` for deployment, replicaset, statefulset or replicationcontroller (case
  insensitive); ``--namespace`` defaults to the autoscaler's own namespace; the ConfigMap is
  created from ``--default-params`` only when it is missing (an existing one wins);
  ``--poll-period-seconds`` defaults to 10;
- ``pkg/autoscaler/controller/linearcontroller``: ``replicas = max(ceil(cores /
  coresPerReplica), ceil(nodes / nodesPerReplica))``, each clamped to ``[min, max]`` (``min``
  0 means 1, ``max`` 0 means none; a per-replica value of 0 gives 1), then at least 2 from
  the node side when ``preventSinglePointFailure`` and there is more than one node;
  ``includeUnschedulableNodes`` counts every node and its cores instead of the schedulable
  ones;
- ``pkg/autoscaler/controller/laddercontroller``: ``coresToReplicas`` and ``nodesToReplicas``
  are ``[threshold, replicas]`` steps (each value at least 1); the step of the largest
  threshold not above the count applies (the first step below every threshold; no steps:
  1), and the larger of the two wins;
- ``pkg/autoscaler/k8sclient``: cores are the nodes' allocatable CPU, summed.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import replace
from typing import Any

from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.jsontext import parse_json
from joiner.api.manifests import models as m

# The values are re-exported: callers name them with the module that builds them.
from joiner.api.manifests.manifestset import Ladder as Ladder
from joiner.api.manifests.manifestset import Linear as Linear
from joiner.api.manifests.manifestset import ManifestSet
from joiner.api.manifests.manifestset import ProportionalAutoscaler as ProportionalAutoscaler

IMAGE = "cluster-proportional-autoscaler"
DEFAULT_POLL_S = 10.0
_KINDS = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "replicaset": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
}


class ConfigMapModel(m.Model):
    """``v1`` ConfigMap (only ``data`` is read)."""

    apiVersion: str
    kind: str
    metadata: m.Metadata
    data: dict[str, Any] | None = None


def expected_replicas(params: Linear | Ladder, nodes: int, cores: int) -> int:
    """The replicas CPA sets for ``nodes`` nodes of ``cores`` cores (module docstring)."""
    if isinstance(params, Ladder):
        return max(_step(cores, params.cores_to_replicas), _step(nodes, params.nodes_to_replicas))

    def side(count: int, per_replica: float) -> int:
        if per_replica == 0:
            return 1
        res = math.ceil(count / per_replica)
        if params.max != 0:
            res = min(params.max, res)
        return max(params.min, res)

    from_cores = side(cores, params.cores_per_replica)
    from_nodes = side(nodes, params.nodes_per_replica)
    if params.prevent_single_point_failure and nodes > 1 and from_nodes < 2:
        from_nodes = 2
    return max(from_cores, from_nodes)


def _step(count: int, steps: tuple[tuple[int, int], ...]) -> int:
    if not steps:
        return 1
    below = [r for threshold, r in steps if threshold <= count]
    return below[-1] if below else steps[0][1]


def parse_params(text: str, key: str, field: str) -> Linear | Ladder:
    """``linear`` or ``ladder`` JSON (``key``) as parameters.

    Raises:
        InputError: not JSON, unknown or wrongly typed fields, or values CPA refuses
            (naming ``field``).
    """
    raw = parse_json(text, what=f"{key} parameters", field=field)
    if not isinstance(raw, dict):
        raise InputError(f"{key} parameters must be a JSON object", field=field)
    if key == "ladder":
        steps = {}
        for name in ("coresToReplicas", "nodesToReplicas"):
            entries = raw.get(name) or []
            if not isinstance(entries, list) or not all(
                isinstance(e, list)
                and len(e) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in e)
                for e in entries
            ):
                raise InputError(
                    f"{name} must be a list of [threshold, replicas] pairs of integers >= 1",
                    field=field,
                )
            steps[name] = tuple(sorted((int(a), int(b)) for a, b in entries))
        return Ladder(
            steps["coresToReplicas"],
            steps["nodesToReplicas"],
            bool(raw.get("includeUnschedulableNodes", False)),
        )
    numbers = {}
    for name in ("coresPerReplica", "nodesPerReplica", "min", "max"):
        value = raw.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InputError(f"{name} must be a non-negative number, got {value!r}", field=field)
        numbers[name] = value
    if numbers["coresPerReplica"] == 0 and numbers["nodesPerReplica"] == 0:
        raise InputError("give coresPerReplica or nodesPerReplica (above 0)", field=field)
    minimum = int(numbers["min"]) or 1
    if numbers["max"] and numbers["max"] < minimum:
        raise InputError(f"max {numbers['max']} is below min {minimum}", field=field)
    return Linear(
        float(numbers["coresPerReplica"]),
        float(numbers["nodesPerReplica"]),
        minimum,
        int(numbers["max"]),
        bool(raw.get("preventSinglePointFailure", False)),
        bool(raw.get("includeUnschedulableNodes", False)),
    )


def _flags(container: m.Container) -> dict[str, str]:
    words: list[str] = []
    for part in (container.command, container.args):
        if isinstance(part, list):
            words += [str(x) for x in part]
        elif isinstance(part, str):
            words += shlex.split(part)
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            if not eq and i + 1 < len(words) and not words[i + 1].startswith("--"):
                value = words[i + 1]
                i += 1
            out[name] = value
        i += 1
    return out


def detect(
    spec: m.PodSpec, w: o.Workload, file: str, obj: str, warnings: list[str]
) -> ProportionalAutoscaler | None:
    """The CPA a workload runs, if one of its containers is the CPA image.

    Raises:
        InputError: ``--target`` or ``--configmap`` missing or malformed,
            ``--poll-period-seconds`` not a positive integer (naming the container's field).
    """
    for i, c in enumerate(spec.containers or []):
        if IMAGE not in str(c.image or ""):
            continue
        flags = _flags(c)
        where = f"spec.template.spec.containers[{i}].args"
        target = flags.get("target", "")
        kind, _, name = target.partition("/")
        if kind.lower() not in _KINDS or not name:
            raise InputError(
                f"--target must be deployment/<name>, replicaset/<name> or "
                f"statefulset/<name>, got {target!r}",
                field=where,
            )
        if not flags.get("configmap"):
            raise InputError("--configmap is required", field=where)
        poll = flags.get("poll-period-seconds", "10")
        if not poll.isdigit() or int(poll) < 1:
            raise InputError(
                f"--poll-period-seconds must be a positive integer, got {poll!r}", field=where
            )
        namespace = flags.get("namespace") or w.namespace
        return ProportionalAutoscaler(
            key=w.key,
            target_kind=_KINDS[kind.lower()],
            target_key=f"{namespace}/{name}",
            configmap=f"{namespace}/{flags['configmap']}",
            default_params=flags.get("default-params"),
            poll_s=float(poll),
            source=o.Source(file, w.kind, w.key),
        )
    del obj, warnings
    return None


def resolve(out: ManifestSet) -> None:
    """Give each CPA its parameters: its ConfigMap's, else ``--default-params`` (as CPA
    creates the ConfigMap from them); ConfigMaps no CPA reads join the skipped objects.

    Raises:
        InputError: the parameters are not one of ``linear`` and ``ladder`` or are invalid
            (naming the ConfigMap's ``data`` key or the ``--default-params`` flag).
    """
    used: set[str] = set()
    kinds = {w.key: w.kind for w in out.workloads}
    for i, cpa in enumerate(out.proportional):
        if kinds.get(cpa.target_key) != cpa.target_kind:
            out.warnings.append(
                f"{cpa.source.file}: {cpa.source.ref}: cluster-proportional-autoscaler's "
                f"--target {cpa.target_kind} {cpa.target_key} is not in the manifests: it "
                "scales nothing"
            )
        found = out.configmaps.get(cpa.configmap)
        if found is not None:
            used.add(cpa.configmap)
            (data, file, obj), field = found, "data"
        elif cpa.default_params is not None:
            file, obj, field = cpa.source.file, cpa.source.ref, "--default-params"
            parsed = parse_json(
                cpa.default_params, what="the parameters", file=file, obj=obj, field=field
            )
            if not isinstance(parsed, dict):
                raise InputError("must be a JSON object", file=file, obj=obj, field=field)
            data = {k: json.dumps(v) for k, v in parsed.items()}
        else:
            out.warnings.append(
                f"{cpa.source.file}: {cpa.source.ref}: cluster-proportional-autoscaler has no "
                f"ConfigMap {cpa.configmap} and no --default-params: it scales nothing"
            )
            continue
        keys = [k for k in ("linear", "ladder") if k in data]
        if len(keys) != 1:
            raise InputError(
                "give exactly one of the keys 'linear' and 'ladder'",
                file=file,
                obj=obj,
                field=field,
            )
        text = data[keys[0]]
        if not isinstance(text, str):
            raise InputError(
                "must be a string of JSON", file=file, obj=obj, field=f"{field}.{keys[0]}"
            )
        try:
            params = parse_params(text, keys[0], f"{field}.{keys[0]}")
        except InputError as exc:
            raise exc.located(file=file, obj=obj) from exc
        out.proportional[i] = replace(cpa, params=params)
    for key, (_, file, _) in sorted(out.configmaps.items()):
        if key not in used:
            out.skipped.append((f"ConfigMap/{key.partition('/')[2]}", file))
