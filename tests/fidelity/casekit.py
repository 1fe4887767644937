"""The vocabulary of the differential corpus: the neutral ``Case`` form and the builders
of its NodePools, pods, Deployments, DaemonSets and PDBs (the cases are in cases.py and
disruption_cases.py)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
HOST = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"


@dataclass
class Change:
    """What a disruption case changes once the ``before`` cluster is stable."""

    delete_pods: tuple[str, ...] = ()
    #: merged into the named NodePool's spec (dicts merge, other values replace)
    pool_patch: dict[str, Obj] = field(default_factory=dict)
    #: pods whose nodes are made NotReady first (kwok stops heartbeating them; the harness
    #: waits until the node lifecycle controller marks them Unknown and unreachable)
    not_ready: tuple[str, ...] = ()


@dataclass
class Case:
    """One differential case (see the module docstring)."""

    id: str
    features: tuple[str, ...]
    pools: dict[str, Obj]
    pods: list[Obj] = field(default_factory=list)
    before: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    pdbs: list[Obj] = field(default_factory=list)
    #: cluster-scoped PriorityClasses (named after the case: they are not fenced)
    priority_classes: list[Obj] = field(default_factory=list)
    #: ``karpenter.sh/v1alpha1`` NodeOverlay specs by name (cluster-scoped: rendering names
    #: them after the case and confines them to the case's NodePools)
    overlays: dict[str, Obj] = field(default_factory=dict)
    kind: str = "provision"
    change: Change | None = None
    #: runs alone: it could see other cases' nodes (nodeAffinityPolicy Ignore, ...)
    alone: bool = False
    #: why the zones are a tie Karpenter breaks at random: then only the zone pattern (how
    #: many NodeClaims per zone, not which zone) is compared
    zone_ties: str = ""
    note: str = ""


def req(key: str, op: str, *values: str, min_values: int | None = None) -> Obj:
    r: Obj = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    if min_values is not None:
        r["minValues"] = min_values
    return r


def pool(
    *requirements: Obj,
    taints: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    weight: int | None = None,
    policy: str = "WhenEmptyOrUnderutilized",
    after: str = "Never",
    budgets: list[Obj] | None = None,
) -> Obj:
    """A NodePool spec; linux/amd64 unless the requirements say otherwise."""
    keys = {r["key"] for r in requirements}
    reqs = list(requirements)
    if ARCH not in keys:
        reqs.append(req(ARCH, "In", "amd64"))
    spec: Obj = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {"requirements": reqs, "taints": list(taints or []), "expireAfter": "Never"},
        },
        "disruption": {
            "consolidationPolicy": policy,
            "consolidateAfter": after,
            "budgets": budgets or [{"nodes": "100%"}],
        },
    }
    if limits:
        spec["limits"] = limits
    if weight is not None:
        spec["weight"] = weight
    return spec


def pod(
    name: str,
    cpu: str = "500m",
    memory: str = "256Mi",
    *,
    labels: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    limits_only: bool = False,
    **spec: Any,
) -> Obj:
    """A bare Pod with one container; ``spec`` keys are merged into ``spec``."""
    resources: Obj = {"cpu": cpu, "memory": memory, **(extra or {})}
    container: Obj = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": resources} if limits_only else {"requests": resources},
    }
    if extra and not limits_only:  # extended resources cannot be overcommitted
        container["resources"]["limits"] = dict(extra)
    ports = spec.pop("host_ports", None)
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    body: Obj = {"containers": [container], **spec}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": dict(labels or {"app": name.rstrip("0123456789-") or name}),
            "annotations": dict(annotations or {}),
        },
        "spec": body,
    }


def deployment(name: str, replicas: int = 1, **kw: Any) -> Obj:
    """A Deployment of ``pod(name, **kw)``: its pods come back after an eviction, as a
    real workload's do (a bare Pod evicted by a drain is gone for good)."""
    template = pod(name, labels={"app": name}, **kw)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }


def pods(prefix: str, n: int, **kw: Any) -> list[Obj]:
    """``n`` identical pods ``<prefix>-0..n-1`` labelled ``app: <prefix>``."""
    kw.setdefault("labels", {"app": prefix})
    return [pod(f"{prefix}-{i}", **copy.deepcopy(kw)) for i in range(n)]


def spread(key: str, app: str, skew: int = 1, when: str = "DoNotSchedule", **kw: Any) -> Obj:
    c: Obj = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
    }
    c.update(kw)
    return c


def affinity_term(key: str, app: str) -> Obj:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def node_affinity(*exprs: Obj) -> Obj:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


def daemonset(name: str, cpu: str, memory: str = "128Mi", **spec: Any) -> Obj:
    template = pod(name, cpu, memory, labels={"ds": name}, **spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"ds": name}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }


def pdb(name: str, app: str, max_unavailable: int = 0) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


def overlay(
    *requirements: Obj,
    price: str | None = None,
    adjust: str | None = None,
    capacity: dict[str, str] | None = None,
) -> Obj:
    """A NodeOverlay spec (``price`` replaces, ``adjust`` is a ``priceAdjustment``)."""
    spec: Obj = {"requirements": list(requirements)}
    for key, value in (("price", price), ("priceAdjustment", adjust), ("capacity", capacity)):
        if value is not None:
            spec[key] = value
    return spec


def priority_class(name: str, value: int, *, preempt: bool = False) -> Obj:
    """A ``scheduling.k8s.io/v1`` PriorityClass (never the global default) whose pods do not
    preempt, or, with ``preempt``, preempt lower-priority pods (``PreemptLowerPriority``)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority" if preempt else "Never",
    }


#: the annotation Karpenter's ``EvictionCost`` (pkg/utils/disruption/disruption.go) reads
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
#: an extended resource no instance type has unless a NodeOverlay adds it
LICENCE = "fidelity.joiner.dev/licence"
SOFT_TAINT = {"key": "preferred", "value": "no", "effect": "PreferNoSchedule"}
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
DEFAULT = {"default": pool()}
