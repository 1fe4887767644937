"""Pod-side domain objects: where an object came from (``Source``), taints and tolerations,
topology spread and affinity terms, host ports, and the frozen ``PodTemplate`` that holds a
pod's scheduling-relevant facts (identical replicas share one value and one cache entry).

Re-exported by ``joiner.api.objects``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api.quantity import Resources
from joiner.api.requirements import Requirement, Requirements

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)

#: Kubernetes' default ``terminationGracePeriodSeconds`` (the API server sets it on every pod
#: that leaves it unset).
DEFAULT_TERMINATION_GRACE_PERIOD_S = 30.0


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from, for messages: ``file`` and ``Kind/name``."""

    file: str
    kind: str
    name: str
    api_version: str = ""

    @property
    def ref(self) -> str:
        """``Kind/name`` as people write it."""
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint (``key=value:effect``)."""

    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; ``operator`` is ``Equal`` (default) or ``Exists``."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes matching: an empty effect matches all; empty key + Exists matches all."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerates_all(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> Taint | None:
    """The first NoSchedule/NoExecute taint not tolerated, or None when all are tolerated.

    PreferNoSchedule taints never block scheduling.
    """
    for taint in taints:
        if taint.effect == PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[]`` (``matchLabelKeys`` already folded into
    ``selector`` using the pod's own labels, as kube-apiserver does)."""

    key: str
    max_skew: int
    selector: Requirements
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    min_domains: int | None = None
    #: ``Honor``: only domains of nodes the pod's node affinity/selector allows count.
    node_affinity_policy: str = "Honor"
    #: ``Ignore``: tainted nodes' domains count too.
    node_taints_policy: str = "Ignore"


#: The selector of a pod affinity term without ``labelSelector``: it selects no pod
#: (Kubernetes ``metav1.LabelSelectorAsSelector(nil)`` is ``labels.Nothing()``, as
#: kube-scheduler's InterPodAffinity and Karpenter's ``topologygroup.go``
#: ``NewTopologyGroup`` read it). No label value can be ``-``, so no pod has this one.
SELECTS_NO_POD = Requirements([Requirement.in_("joiner.dev/label-selector-not-set", "-")])


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term: pods matching ``selector`` in ``namespaces`` (None: the
    pod's own namespace; empty tuple: all namespaces) share/avoid a ``key`` domain."""

    key: str
    selector: Requirements
    namespaces: tuple[str, ...] | None = None

    def covers(self, own_namespace: str, namespace: str) -> bool:
        """True when a pod in ``namespace`` is in this term's scope."""
        if self.namespaces is None:
            return namespace == own_namespace
        return not self.namespaces or namespace in self.namespaces


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node (``hostPort``)."""

    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol on overlapping addresses (0.0.0.0 overlaps every address)."""
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.ip == other.ip or "0.0.0.0" in (self.ip, other.ip)


@dataclass(frozen=True, slots=True, eq=True)
class PodTemplate:
    """The scheduling-relevant part of a pod spec, shared by all replicas.

    Attributes:
        requests: effective requests (max of init containers and the sum of containers, plus
            overhead), cpu in millicores, memory in bytes, always including ``pods: 1``.
        node_selector: ``spec.nodeSelector`` as requirements.
        required_affinity: the OR-ed terms of required node affinity (each ANDed).
        tolerations: ``spec.tolerations``.
        labels: pod labels.
        namespace: the pod's namespace (affinity and spread count pods per namespace).
        preferred_affinity: preferred node-affinity terms as (weight, requirements).
        spread: topology spread constraints.
        pod_affinity / pod_anti_affinity: required terms.
        preferred_pod_affinity / preferred_pod_anti_affinity: (weight, term).
        host_ports: host ports its containers bind.
        volume_claims: names of the PersistentVolumeClaims it mounts.
    """

    requests: Resources
    node_selector: Requirements = field(default_factory=Requirements)
    required_affinity: tuple[Requirements, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    namespace: str = "default"
    preferred_affinity: tuple[tuple[int, Requirements], ...] = ()
    spread: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preferred_pod_anti_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    volume_claims: tuple[str, ...] = ()
    #: priorityClassName system-cluster-critical or system-node-critical: drained last.
    critical: bool = False
    #: Pinned to a node by name (``matchFields``, as DaemonSet pods are): never provisioned for.
    pinned: bool = False
    #: The nodes ``pinned`` names, when its terms only name nodes (``metadata.name In``):
    #: kube-scheduler binds a new such pod to one of them.
    pinned_nodes: tuple[str, ...] = ()
    #: Why Karpenter's provisioner ignores the pod (a restricted label it requires, or
    #: ``karpenter.sh/nodepool DoesNotExist``: ``api.manifests.pods.karpenter_ignores``);
    #: ``""`` when it provisions for it. kube-scheduler may still bind it to a node.
    karpenter_ignores: str = ""
    #: ``spec.runtimeClassName`` whose RuntimeClass is still to be applied (overhead,
    #: scheduling); None once applied, or when ``spec.overhead`` shows admission already ran.
    runtime_class: str | None = None
    #: Volumes Cluster Autoscaler counts as local storage (emptyDir not in memory, hostPath)
    #: and not listed in ``cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes``.
    local_volumes: tuple[str, ...] = ()
    #: ``cluster-autoscaler.kubernetes.io/safe-to-evict``: True, False, or None when absent.
    ca_safe_to_evict: bool | None = None
    #: Seconds from eviction until the pod is gone: its preStop hooks within
    #: ``terminationGracePeriodSeconds`` (``api.manifests.termination``).
    shutdown_s: float = 0.0
    #: ``spec.terminationGracePeriodSeconds`` (the API server's default, 30, when unset):
    #: a drain with a NodePool ``terminationGracePeriod`` deletes the pod this long before
    #: the node's deadline (``controllers.termination``).
    termination_grace_period_s: float = DEFAULT_TERMINATION_GRACE_PERIOD_S
    #: Pod priority (``spec.priority``, or its PriorityClass's value as admission sets it;
    #: ``api.manifests.priority``); None only before the loader resolved it (taken as 0).
    priority: int | None = None
    #: ``spec.priorityClassName`` as written (None when unset).
    priority_class: str | None = None
    #: ``PreemptLowerPriority`` or ``Never`` (None: not yet resolved, the former).
    preemption_policy: str | None = None
    #: ``controller.kubernetes.io/pod-deletion-cost``: a 32-bit integer (the API server
    #: admits no other); None when absent. Karpenter's eviction cost reads it.
    deletion_cost: int | None = None
    #: ``karpenter.sh/do-not-disrupt`` as written on the pod (template); None when absent.
    #: The pods made from the template take it (``api.durations.do_not_disrupt``).
    do_not_disrupt: str | None = None
    #: ``__hash__``'s value once computed (0: not yet); not an init field, so
    #: ``dataclasses.replace`` starts afresh, and never pickled (a hash is per process).
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    @property
    def priority_value(self) -> int:
        """The pod's priority, 0 when unresolved (kube-scheduler ``corev1helpers.PodPriority``)."""
        return self.priority if self.priority is not None else 0

    @property
    def may_preempt(self) -> bool:
        """kube-scheduler ``PodEligibleToPreemptOthers``: false for ``preemptionPolicy: Never``."""
        return self.preemption_policy != "Never"

    def __getstate__(self) -> list[object]:
        return [0 if f == "_hash" else getattr(self, f) for f in self.__dataclass_fields__]

    def __setstate__(self, state: list[object]) -> None:
        for f, value in zip(self.__dataclass_fields__, state, strict=True):
            object.__setattr__(self, f, value)

    def __hash__(self) -> int:
        # Templates are immutable and hashed on every dict lookup: computed once.
        if self._hash:
            return self._hash
        value = (
            hash(
                (
                    tuple(sorted(self.requests.items())),
                    self.node_selector,
                    self.required_affinity,
                    self.tolerations,
                    self.labels,
                    self.namespace,
                    self.spread,
                    self.pod_affinity,
                    self.pod_anti_affinity,
                )
            )
            or 1
        )
        object.__setattr__(self, "_hash", value)
        return value

    def requirement_terms(self) -> tuple[Requirements, ...]:
        """The alternatives a node must satisfy one of: nodeSelector AND each affinity term."""
        if not self.required_affinity:
            return (self.node_selector,)
        return tuple(self.node_selector.merge(term) for term in self.required_affinity)

    @property
    def has_preferences(self) -> bool:
        """True when relaxation may apply (preferred terms or ScheduleAnyway spread)."""
        return bool(
            self.preferred_affinity
            or self.preferred_pod_affinity
            or self.preferred_pod_anti_affinity
            or any(c.when_unsatisfiable == SCHEDULE_ANYWAY for c in self.spread)
        )
