"""What loading manifests produces: ``ManifestSet``, and the values of the kinds whose
resolution reads the whole set (PriorityClass, CapacityBuffer, cluster-proportional-autoscaler).

This module sits below the modules that build those values and run their passes over a
loaded set (``priority.admit``, ``capacitybuffer.resolve``, ``proportional.resolve``) and
below ``loader``, which fills the set; it imports only the domain objects and the value types
of ``hpa`` and ``runtimeclass``, so no import runs in a circle. The upstream rules each value
follows are in its building module's docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from joiner.api import objects as o
from joiner.api import quantity
from joiner.api.manifests import hpa, runtimeclass
from joiner.api.overlays import NodeOverlay


@dataclass
class ManifestSet:
    """Everything loaded from a set of manifest files, in file order, plus load warnings."""

    nodepools: list[o.NodePool] = field(default_factory=list)
    nodeclasses: list[o.NodeClass] = field(default_factory=list)
    workloads: list[o.Workload] = field(default_factory=list)
    cronjobs: list[o.CronJob] = field(default_factory=list)
    daemonsets: list[o.DaemonSet] = field(default_factory=list)
    pods: list[o.StandalonePod] = field(default_factory=list)
    pdbs: list[o.PodDisruptionBudget] = field(default_factory=list)
    nodes: list[o.ClusterNode] = field(default_factory=list)
    pvcs: list[o.PersistentVolumeClaim] = field(default_factory=list)
    pvs: list[o.PersistentVolume] = field(default_factory=list)
    storageclasses: list[o.StorageClass] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    runtimeclasses: list[runtimeclass.RuntimeClass] = field(default_factory=list)
    priorityclasses: list[PriorityClass] = field(default_factory=list)
    #: ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffers, and the ``v1`` PodTemplates
    #: (``namespace/name``) they may name.
    capacitybuffers: list[CapacityBuffer] = field(default_factory=list)
    #: ``karpenter.sh/v1alpha1`` NodeOverlays (``cloudprovider.overlay`` applies them).
    nodeoverlays: list[NodeOverlay] = field(default_factory=list)
    #: ``autoscaling/v2`` HorizontalPodAutoscalers (``joiner.sim.hpa`` runs them).
    hpas: list[hpa.HorizontalPodAutoscaler] = field(default_factory=list)
    #: cluster-proportional-autoscaler Deployments, and the ConfigMaps (``ns/name`` ->
    #: data, file, object) they may read.
    proportional: list[ProportionalAutoscaler] = field(default_factory=list)
    configmaps: dict[str, tuple[dict[str, Any], str, str]] = field(default_factory=dict)
    podtemplates: dict[str, o.PodTemplate] = field(default_factory=dict)
    #: (pod field path, upstream effect) -> objects that set a field Joiner does not model.
    unmodelled: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: ``karpenter.sh/v1`` NodeClaims of a cluster dump: launched or in-flight capacity.
    nodeclaims: list[o.ClusterNodeClaim] = field(default_factory=list)
    #: Objects of kinds Joiner does not model (``Kind/name``, file), for one grouped warning.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Owned workloads (a ReplicaSet of a Deployment, a Job of a CronJob): loaded for
    #: reference, never run on their own, since their owner creates their pods.
    owned_workloads: list[o.Workload] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def nodeclass(self, name: str) -> o.NodeClass | None:
        """The NodeClass named ``name``, or None."""
        return next((n for n in self.nodeclasses if n.name == name), None)

    def deployment(self, key: str) -> o.Workload | None:
        """The workload ``namespace/name`` (or ``name`` in ``default``), or None."""
        if "/" not in key:
            key = f"default/{key}"
        return next((d for d in self.workloads if d.key == key), None)

    @property
    def deployments(self) -> list[o.Workload]:
        """Every workload that runs pods (Deployments, StatefulSets, unowned ReplicaSets, Jobs)."""
        return self.workloads


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A PriorityClass: ``value`` (higher is more important), whether it is the default for
    pods naming none, and whether its pods may preempt."""

    name: str
    value: int
    global_default: bool
    preemption_policy: str
    source: o.Source


@dataclass(frozen=True)
class CapacityBuffer:
    """A CapacityBuffer; ``template`` is None until ``capacitybuffer.resolve``
    resolves it (or when it does not resolve)."""

    namespace: str
    name: str
    source: o.Source
    template_ref: str | None = None
    #: ``Kind/namespace/name`` of ``scalableRef``.
    scalable: str | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: quantity.Resources | None = None
    template: o.PodTemplate | None = None
    #: The workload key (``namespace/name``) whose replica count ``percentage`` reads.
    workload: str | None = field(default=None)

    def desired(self, scalable_replicas: int) -> int:
        """``computeReplicas`` (the ``capacitybuffer`` module docstring) for the workload's
        current replicas."""
        candidates: list[int] = []
        if self.percentage is not None and scalable_replicas > 0:
            n = math.ceil(scalable_replicas * self.percentage / 100)
            candidates.append(max(n, 1) if self.percentage > 0 else n)
        if self.replicas is not None:
            candidates.append(self.replicas)
        if self.limits is not None and self.template is not None:
            fits = [
                self.limits[k] // v
                for k, v in self.template.requests.items()
                if k in self.limits and v > 0 and k != quantity.PODS
            ]
            if fits:
                return min(min(fits), max(candidates)) if candidates else min(fits)
        return max(candidates) if candidates else 0


@dataclass(frozen=True, slots=True)
class Linear:
    """The ``linear`` parameters (the ``proportional`` module docstring)."""

    cores_per_replica: float = 0.0
    nodes_per_replica: float = 0.0
    min: int = 1
    max: int = 0
    prevent_single_point_failure: bool = False
    include_unschedulable_nodes: bool = False


@dataclass(frozen=True, slots=True)
class Ladder:
    """The ``ladder`` parameters: ``(threshold, replicas)`` steps, sorted."""

    cores_to_replicas: tuple[tuple[int, int], ...] = ()
    nodes_to_replicas: tuple[tuple[int, int], ...] = ()
    include_unschedulable_nodes: bool = False


@dataclass(frozen=True, slots=True)
class ProportionalAutoscaler:
    """One CPA Deployment: what it scales, its ConfigMap, and the parameters in force
    (``params`` None until ``proportional.resolve``, or when neither the ConfigMap nor
    ``--default-params`` exists)."""

    key: str
    target_kind: str
    target_key: str
    configmap: str
    default_params: str | None
    poll_s: float
    source: o.Source
    params: Linear | Ladder | None = None
