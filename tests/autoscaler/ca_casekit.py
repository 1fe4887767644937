"""The vocabulary of the Cluster Autoscaler differential corpus: the neutral ``Case`` form
both sides are rendered from (ca_render.py), and its builders. The cases are in ca_cases.py.

A case declares node groups (one instance type in one zone each, as CA's kwok provider
builds a group from one template Node), the NodePools that give groups their labels,
taints and annotations (groups of one pool differ only in type and zone), the workloads
(Deployments, bare Pods, DaemonSets) with their replicas in the first phase (scale-up) and,
for scale-down cases, in the second (``then``), PodDisruptionBudgets, and the Cluster
Autoscaler flags it sets beyond the harness's defaults (``CA_DEFAULTS``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
IT = "node.kubernetes.io/instance-type"
#: Every node of a case carries it (its NodePools' label); every pod selects it, so cases
#: run side by side never share a node.
CASE_LABEL = "joiner.dev/ca-case"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"

#: Cluster Autoscaler flags both sides run with unless a case sets its own (camelCase of
#: the flag, as Joiner's Scenario ``spec.clusterAutoscaler`` names them). Short timings so
#: a case settles in seconds on the stack; ``least-waste`` (not CA's ``random`` default) so
#: the choice is determinate; balancing off, as CA's default.
CA_DEFAULTS: Obj = {
    "scanInterval": "2s",
    "expander": "least-waste",
    "balanceSimilarNodeGroups": False,
    "scaleDownUtilizationThreshold": 0.5,
    "scaleDownUnneededTime": "10s",
    "scaleDownDelayAfterAdd": "10s",
    "scaleDownDelayAfterDelete": "2s",
    "scaleDownDelayAfterFailure": "10s",
    "maxNodeProvisionTime": "2m",
    "skipNodesWithSystemPods": True,
    "skipNodesWithLocalStorage": True,
}


@dataclass(frozen=True)
class Group:
    """One node group: ``instance_type`` in ``zone``, at most ``max_size`` nodes, with the
    labels, taints and annotations of NodePool ``pool``."""

    name: str
    instance_type: str
    zone: str = "us-east-1a"
    max_size: int = 20
    pool: str = "main"


@dataclass(frozen=True)
class Pool:
    """What every node of its groups carries beyond the instance type's labels."""

    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()  # key, value, effect
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass
class Workload:
    """Pods of one kind: ``Deployment`` (``replicas`` then ``then``), ``Pod`` (``replicas``
    bare pods, never re-created) or ``DaemonSet``. ``spec`` is merged into every pod's
    spec (nodeSelector entries are added to the case's own)."""

    name: str
    replicas: int = 1
    cpu: str = "500m"
    memory: str = "512Mi"
    kind: str = "Deployment"
    then: int | None = None
    namespace: str = ""
    spec: Obj = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class Case:
    """One differential case (module docstring). ``ca`` overrides ``CA_DEFAULTS``;
    ``priorities`` is the priority expander's ConfigMap over the groups' own names (each
    pattern is prefixed with ``<case>-`` when rendered, so it matches only the case's groups:
    ``small`` matches the case's group ``small``, ``.*`` all of them)."""

    id: str
    features: tuple[str, ...]
    groups: list[Group]
    workloads: list[Workload]
    pools: dict[str, Pool] = field(default_factory=lambda: {"main": Pool()})
    pdbs: list[Obj] = field(default_factory=list)
    ca: Obj = field(default_factory=dict)
    priorities: dict[int, list[str]] = field(default_factory=dict)
    note: str = ""

    @property
    def scale_down(self) -> bool:
        """A second phase changes replicas (the scale-down half of the corpus)."""
        return any(w.then is not None for w in self.workloads)

    def flags(self) -> Obj:
        """The CA flags of this case: the defaults with the case's own."""
        return {**CA_DEFAULTS, **self.ca}

    def config_key(self) -> str:
        """Cases with equal keys can share one Cluster Autoscaler process: same flags, and
        no cluster-wide limit (those count every node, so such a case runs alone)."""
        flags = self.flags()
        if any(k in flags for k in ("maxNodesTotal", "coresTotal", "memoryTotal")):
            return f"alone:{self.id}"
        return json.dumps(flags, sort_keys=True)


def group_name(case: Case, group: Group) -> str:
    """The group's name on both sides: the case id, then the group's own name."""
    return f"{case.id}-{group.name}"


def pool_name(case: Case, key: str) -> str:
    return f"{case.id}-{key}"


def namespace(case: Case) -> str:
    return f"ca-{case.id}"


def deploy(
    name: str, replicas: int, cpu: str = "500m", memory: str = "512Mi", **kw: Any
) -> Workload:
    return Workload(name, replicas, cpu, memory, **kw)


def bare(name: str, count: int, cpu: str = "500m", memory: str = "512Mi", **kw: Any) -> Workload:
    return Workload(name, count, cpu, memory, kind="Pod", **kw)


def daemonset(name: str, cpu: str = "100m", memory: str = "128Mi", **kw: Any) -> Workload:
    return Workload(name, 0, cpu, memory, kind="DaemonSet", **kw)


def pdb(
    name: str, app: str, *, max_unavailable: int | None = None, min_available: int | None = None
) -> Obj:
    spec: Obj = {"selector": {"matchLabels": {"app": app}}}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"name": name, "spec": spec}


def toleration(key: str, value: str, effect: str = "NoSchedule") -> Obj:
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def anti_affinity(app: str, key: str = HOST) -> Obj:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def soft_anti_affinity(app: str, key: str = HOST) -> Obj:
    """Preferred anti-affinity (weight 100): kube-scheduler spreads the pods one a node while
    it can; Cluster Autoscaler's simulations, filters only, ignore it."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
    }


def spread(app: str, key: str = HOST, max_skew: int = 1, *, hard: bool = True) -> Obj:
    """A topology spread constraint; ``hard=False`` is ScheduleAnyway (kube-scheduler scores
    it, Cluster Autoscaler's simulations ignore it)."""
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }


def one_a_node(app: str) -> Obj:
    """Pod spec fields that make kube-scheduler put ``app``'s pods one a node while there are
    enough nodes, without binding Cluster Autoscaler's drain simulation: preferred
    anti-affinity and a ScheduleAnyway hostname spread."""
    return {
        "affinity": soft_anti_affinity(app),
        "topologySpreadConstraints": [spread(app, hard=False)],
    }


def node_affinity(key: str, *values: str) -> Obj:
    expr = {"key": key, "operator": "In", "values": list(values)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr]}]
            }
        }
    }


def prefer_node(key: str, *values: str) -> Obj:
    """Preferred node affinity (weight 100) for ``key`` in ``values``."""
    expr = {"key": key, "operator": "In", "values": list(values)}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [expr]}}
            ]
        }
    }


def merged_spec(base: Obj, extra: Obj) -> Obj:
    """``base`` with ``extra`` merged in: nodeSelector entries added, lists and other
    values replaced."""
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if k == "nodeSelector":
            out.setdefault(k, {}).update(v)
        else:
            out[k] = copy.deepcopy(v)
    return out
