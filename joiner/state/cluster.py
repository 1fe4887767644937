"""In-memory cluster state: pods, NodeClaims and nodes, with the queries controllers need."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from joiner.api import labels, quantity
from joiner.api.objects import NodePool, PodDisruptionBudget, PodTemplate, Taint
from joiner.api.quantity import Resources
from joiner.api.requirements import Requirements
from joiner.cloudprovider.events import MessageKind
from joiner.cloudprovider.reservations import reservation_labels
from joiner.cloudprovider.types import Instance, InstanceType
from joiner.state.registry import LiveNames, Registry

_revisions = itertools.count(1)
_revision = 0
#: Like ``_revision``, but changed only by NodeClaim and Node changes (not by pods).
_node_revision = 0
#: Like ``_revision``, but changed only by pod changes (``ClusterState``'s pod caches).
_pod_revision = 0
#: How many changes the live-object caches cannot follow by themselves: a pod's,
#: NodeClaim's or node's ``deleted_at_s`` back to None, or a pod's ``order`` or ``daemon``
#: changed after it was made. The caches follow additions and deletions, and read every
#: object again when this moves.
_rereads = 0


#: Pods and Nodes whose tracked fields (``_POD_TRACKED``, ``_NODE_TRACKED``, and a pod's
#: ``template``) were set, oldest first, in any state of this process (``changes_since``):
#: caches that follow changes read these instead of every object. ``_journal_base`` is the
#: position of its first entry since the start: entries before a reader's mark are dropped
#: when it says it is done with them (``journal_forget``), and all of them once the
#: journal reaches ``_JOURNAL_MAX`` entries, so that it never holds many objects alive; a
#: reader whose mark is before the base must read everything again.
_journal: list[Pod | Node] = []
_journal_base = 0
_JOURNAL_MAX = 1 << 17


def _journal_add(obj: Pod | Node) -> None:
    global _journal_base
    if len(_journal) >= _JOURNAL_MAX:
        _journal_base += len(_journal)
        _journal.clear()
    _journal.append(obj)


def journal_mark() -> tuple[int, int]:
    """Where the change journal stands now, for ``changes_since``: ``(position, rereads)``."""
    return _journal_base + len(_journal), _rereads


def changes_since(mark: tuple[int, int]) -> list[Pod | Node] | None:
    """The pods and nodes (of any state) whose tracked fields or pod template were set
    since ``mark`` (``journal_mark``), oldest first, possibly repeated; None when that can
    no longer be told (entries since were dropped, or an undeletion or a fixed field's
    change made every cache read everything again): read everything then."""
    position, rereads = mark
    if position < _journal_base or rereads != _rereads:
        return None
    return _journal[position - _journal_base :]


def journal_forget(mark: tuple[int, int]) -> None:
    """Drop the journal's entries before ``mark``: its reader is done with them (another
    reader with an earlier mark then reads everything again)."""
    global _journal_base
    drop = mark[0] - _journal_base
    if drop > 0:
        del _journal[:drop]
        _journal_base += drop


def revision() -> int:
    """A number that changes whenever a pod is bound, unbound or deleted, or a node changes
    readiness, deletion or schedulability (any state in this process). Caches and the
    baseline's skipped scans compare it; it never reaches an output."""
    return _revision


def _bump() -> None:
    global _revision, _pod_revision
    _revision = _pod_revision = next(_revisions)


def _bump_nodes() -> None:
    global _revision, _node_revision
    _revision = _node_revision = next(_revisions)


def _note_set(obj: object, name: str, value: Any) -> None:
    """Count, before it is set, a change the caches must read everything again for
    (``_rereads``): an undeletion (``deleted_at_s`` from a time back to None), or a new
    ``order`` or ``daemon`` for a pod already made (one whose ``__post_init__`` ran: a
    Pod built without ``__init__``, or a subclass that skips it, must not change them)."""
    # ``getattr``, not ``obj.__dict__``: reading ``__dict__`` makes CPython build a dict for
    # the instance, and every attribute read of it is slower from then on.
    global _rereads
    if name == "deleted_at_s":
        if value is None and getattr(obj, name, None) is not None:
            _rereads += 1
    elif name in _REREAD and getattr(obj, "_made", False) and getattr(obj, name) != value:
        _rereads += 1


_POD_TRACKED = frozenset(
    {"node_name", "deleted_at_s", "terminating_until_s", "nominated_node_name", "order", "daemon"}
)
#: Pod fields the caches read that are fixed when the pod is made (``_note_set``).
_REREAD = frozenset({"order", "daemon"})
_CLAIM_TRACKED = frozenset(
    {"instance", "node_name", "registered_at_s", "initialized_at_s", "deleted_at_s"}
)
_NODE_TRACKED = frozenset({"ready", "deleted_at_s", "deleting", "taints"})
_REGISTRIES = frozenset({"pods", "nodes", "nodeclaims"})


@dataclass
class Pod:
    """A pod and its lifecycle timestamps (seconds of run time).

    ``owner`` is ``Deployment/ns/name``, ``DaemonSet/ns/name`` or ``Pod/ns/name``.
    A pod is *lost* when it was killed without a graceful eviction.
    """

    uid: str
    namespace: str
    name: str
    template: PodTemplate
    owner: str
    created_at_s: float
    order: int
    node_name: str | None = None
    bound_at_s: float | None = None
    deleted_at_s: float | None = None
    daemon: bool = False
    lost: bool = False
    evicted: bool = False
    #: ``karpenter.sh/do-not-disrupt: "true"``: drains wait for it until the deadline.
    do_not_disrupt: bool = False
    #: ``karpenter.sh/do-not-disrupt: <duration>``: protected that long after it started
    #: running (seconds); None when the annotation is absent or ``"true"``.
    do_not_disrupt_for_s: float | None = None
    #: The pod this one replaces (its controller made it after an eviction or a loss).
    replaces: str | None = None
    #: The reason the last provisioning pass gave for not placing it, if any.
    unschedulable_reason: str | None = None
    #: Evicted and shutting down (preStop, grace period) until then: it still runs on its
    #: node, its controller already made the replacement.
    terminating_until_s: float | None = None
    #: ``status.nominatedNodeName``: kube-scheduler preempted pods on this node for it and
    #: binds it there once they are gone; Karpenter does not provision for it.
    nominated_node_name: str | None = None
    #: The pod this one was preempted for (it is being deleted for that reason).
    preempted_by: str | None = None

    def __post_init__(self) -> None:
        # From here on, a new ``order`` or ``daemon`` is a change the caches must see.
        object.__setattr__(self, "_made", True)

    @property
    def pending(self) -> bool:
        """Not bound and not deleted."""
        return self.node_name is None and self.deleted_at_s is None

    def blocks_disruption(self, now_s: float) -> bool:
        """``karpenter.sh/do-not-disrupt`` is in force at ``now_s``: ``"true"`` always, a
        duration until that long after the pod started running (Karpenter's rule)."""
        if self.do_not_disrupt:
            return True
        if self.do_not_disrupt_for_s is None:
            return False
        start = self.bound_at_s if self.bound_at_s is not None else now_s
        return now_s < start + self.do_not_disrupt_for_s

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _POD_TRACKED:
            _note_set(self, name, value)
            object.__setattr__(self, name, value)
            _bump()
            _journal_add(self)
        else:
            object.__setattr__(self, name, value)
            if name == "template":
                _journal_add(self)


@dataclass
class NodeClaim:
    """A request for one node, and what the cloud resolved it to.

    Lifecycle (Karpenter ``nodeclaim/lifecycle``): created -> launched (instance set) ->
    registered (node exists) -> initialized (node Ready); deleted at the end.
    """

    name: str
    nodepool: str
    node_class: str
    requirements: Requirements
    requests: Resources
    instance_type_options: tuple[InstanceType, ...]
    created_at_s: float
    instance: Instance | None = None
    launched_at_s: float | None = None
    registered_at_s: float | None = None
    initialized_at_s: float | None = None
    deleted_at_s: float | None = None
    node_name: str | None = None
    #: Pod uids the scheduler placed here when it was created (Karpenter nominations).
    nominated: tuple[str, ...] = ()
    #: Nodes being disrupted whose pods this NodeClaim was launched for.
    replaces: tuple[str, ...] = ()
    #: Until when (seconds) a provisioning pass last placed a pending pod on it, launched
    #: or in flight (Karpenter ``StateNode.Nominate``): disruption leaves it alone until
    #: then, the pods being on their way to it. None: never nominated.
    nominated_until_s: float | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _CLAIM_TRACKED:
            _note_set(self, name, value)
            object.__setattr__(self, name, value)
            _bump_nodes()
        else:
            object.__setattr__(self, name, value)

    #: The NodePool template fields it was launched from (``NodePool.drift_fields``), for
    #: drift; None when unknown (a node adopted from a running cluster).
    launched_from: dict[str, object] | None = None
    #: Why it is being disrupted (``Empty``, ``Drifted``, ``Underutilized``, ``Expired``,
    #: ``Interrupted``), once it is.
    disruption_reason: str | None = None
    #: The interruption message that deletes it (its kind, as Karpenter's metrics name it),
    #: once one does.
    interruption: MessageKind | None = None
    #: The node condition type whose node repair deletes it (``Ready``), once repair does.
    repaired_condition: str | None = None


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """One Node status condition: ``status`` (``True``, ``False``, ``Unknown``) since
    ``last_transition_s`` (seconds on the controllers' clock)."""

    status: str
    last_transition_s: float


@dataclass
class Node:
    """A Kubernetes node, backed by a NodeClaim or, for ``nodeclaim=None``, static capacity
    no NodePool manages (an EKS managed node group, a self-managed or Fargate node): pods
    run there, but no controller launches, disrupts or deletes it (Karpenter's cluster
    state counts every Node; only NodeClaim-backed ones are ``Managed()``)."""

    name: str
    nodeclaim: str | None
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    capacity: Resources
    allocatable: Resources
    created_at_s: float
    ready: bool = False
    deleted_at_s: float | None = None
    #: Marked for deletion (interruption, disruption): not a target, and its pods are demand.
    deleting: bool = False
    #: Node annotation ``karpenter.sh/do-not-disrupt: "true"``: never a disruption candidate.
    do_not_disrupt: bool = False
    #: Node annotation ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"``:
    #: Cluster Autoscaler never removes it.
    scale_down_disabled: bool = False
    #: When the node will be gone whatever happens (a Spot reclaim), if known.
    deadline_s: float | None = None
    draining: bool = False
    #: Last time a non-DaemonSet pod was bound to or removed from it (Karpenter's
    #: ``lastPodEventTime``, which starts ``consolidateAfter``); its creation until then.
    last_pod_event_s: float | None = None
    #: Node status conditions by type (``Ready``, the node monitoring agent's
    #: ``KernelReady``, ...), as far as known: what node repair reads.
    conditions: dict[str, NodeCondition] = field(default_factory=dict)

    def set_condition(self, type_: str, status: str, at_s: float) -> None:
        """Set condition ``type_`` to ``status`` (``True``/``False``/``Unknown``); its
        ``last_transition_s`` moves to ``at_s`` only when the status changes (kubelet's
        ``lastTransitionTime``)."""
        old = self.conditions.get(type_)
        if old is None or old.status != status:
            self.conditions[type_] = NodeCondition(status, at_s)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _NODE_TRACKED:
            _note_set(self, name, value)
            object.__setattr__(self, name, value)
            _bump_nodes()
            _journal_add(self)
        else:
            object.__setattr__(self, name, value)


@dataclass
class ClusterState:
    """All objects of one cluster, keyed by name/uid."""

    #: Every pod seen, deleted ones included (``registry``).
    pods: Registry[Pod] = field(default_factory=Registry)
    #: Every NodeClaim and Node seen, deleted ones included (``registry``).
    nodeclaims: Registry[NodeClaim] = field(default_factory=Registry)
    nodes: Registry[Node] = field(default_factory=Registry)
    nodepools: dict[str, NodePool] = field(default_factory=dict)
    daemonsets: dict[str, PodTemplate] = field(default_factory=dict)
    #: Node requirements each pod template's volumes impose (alternatives; absent: none).
    volume_terms: dict[PodTemplate, tuple[Requirements, ...]] = field(default_factory=dict)
    #: Pod templates whose PersistentVolumeClaims cannot be used, with why (the message of
    #: ``scheduling.volumes.MissingVolumeError``, the reason ``joiner plan`` gives): their
    #: pending pods stay pending (``volume_wait``).
    volume_waits: dict[PodTemplate, str] = field(default_factory=dict)
    #: The claims imposing ``volume_terms``, described per template
    #: (``scheduling.volumes.ResolvedVolumes.described``; absent: not known).
    volume_claims: dict[PodTemplate, str] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    #: Bumped on every pod event and node change the disruption controller cares about, so
    #: it can skip passes while nothing changed (Karpenter's cluster-state consolidation
    #: timestamp).
    generation: int = 0

    # Caches over ``pods``, valid while the pod revision and the pods' log are unchanged.
    _live: list[Pod] = field(default_factory=list, init=False, repr=False, compare=False)
    #: How much of ``pods.log`` ``_live`` has read, and ``pods.changes`` then.
    _live_seen: int = field(default=0, init=False, repr=False, compare=False)
    _live_changes: int = field(default=0, init=False, repr=False, compare=False)
    _live_rev: int = field(default=-1, init=False, repr=False, compare=False)
    _live_rereads: int = field(default=0, init=False, repr=False, compare=False)
    _by_node: dict[str, list[Pod]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _pending: list[Pod] = field(default_factory=list, init=False, repr=False, compare=False)
    #: ``snapshot.ready_nodes``' per-node views, reused while a node is unchanged.
    node_views: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    #: The live NodeClaims' and Nodes' names, and what ``live_nodeclaims``,
    #: ``live_nodes`` and ``ready_nodes`` derive from them (rebuilt when they may change).
    _claim_names: LiveNames = field(
        default_factory=LiveNames, init=False, repr=False, compare=False
    )
    _node_names: LiveNames = field(default_factory=LiveNames, init=False, repr=False, compare=False)
    _claims: list[NodeClaim] = field(default_factory=list, init=False, repr=False, compare=False)
    _live_nodes: list[Node] = field(default_factory=list, init=False, repr=False, compare=False)
    _ready: list[Node] = field(default_factory=list, init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        # ``pods``, ``nodes`` and ``nodeclaims`` are always ``Registry``s (a plain dict given
        # or assigned is copied into one), and the caches that read their logs start again.
        if name in _REGISTRIES:
            if not isinstance(value, Registry):
                value = Registry(value)
            if name == "pods":
                object.__setattr__(self, "_live_changes", -1)
                object.__setattr__(self, "_live_rev", -1)
            else:
                fresh = "_node_names" if name == "nodes" else "_claim_names"
                object.__setattr__(self, fresh, LiveNames())
        object.__setattr__(self, name, value)

    def __getstate__(self) -> dict[str, Any]:
        # A copy (``copy.copy``, ``copy.deepcopy``, pickle) starts every cache afresh: the
        # pod caches are keyed on this process's revision counter, and a shallow copy would
        # otherwise share the live-name trackers while keeping lists of its own.
        state = dict(self.__dict__)
        for f in fields(self):
            if not f.init:  # the caches: as a new state has them
                state[f.name] = f.default if f.default_factory is MISSING else f.default_factory()
        return state

    def _refresh(self) -> None:
        pods = self.pods
        log = pods.log
        if self._live_rev == _pod_revision and self._live_seen == len(log):
            return
        if self._live_changes != pods.changes or self._live_rereads != _rereads:
            # A pod was removed from the dict or written anew under its uid, or a deleted
            # one was brought back: read them all again.
            self._live, self._live_seen = [], len(log)
            self._live_changes, self._live_rereads = pods.changes, _rereads
            fresh = list(pods.values())
        else:  # only first additions since: the log's new keys, each once
            fresh = [pods[k] for k in log[self._live_seen :]]
            self._live_seen = len(log)
        live = [p for p in self._live if p.deleted_at_s is None]
        if fresh:
            last = live[-1].order if live else -1
            live += [p for p in fresh if p.deleted_at_s is None]
            if any(p.order < last for p in fresh) or any(
                a.order > b.order for a, b in itertools.pairwise(fresh)
            ):
                live.sort(key=lambda p: p.order)
        by_node: dict[str, list[Pod]] = {}
        pending: list[Pod] = []
        for p in live:  # one walk for both (this runs after every pod change)
            name = p.node_name
            if name is None:
                if not p.daemon:
                    pending.append(p)
            elif (on := by_node.get(name)) is None:
                by_node[name] = [p]
            else:
                on.append(p)
        self._live, self._live_rev = live, _pod_revision
        self._by_node = by_node
        self._pending = pending

    def change_key(self) -> tuple[int, ...]:
        """Equal between two calls only if no pod, node or NodeClaim was added, bound,
        unbound, launched, registered, initialized, cordoned or deleted in between (labels
        and taints of nodes included): what snapshot caches key on."""
        return (_revision, len(self.pods), len(self.nodes), len(self.nodeclaims))

    def live_pods(self) -> Iterator[Pod]:
        """Pods not deleted, by creation order."""
        self._refresh()
        return iter(list(self._live))

    def pod_event(self, pod: Pod, now_s: float) -> None:
        """Record that ``pod`` was bound to or removed from its node at ``now_s``."""
        if pod.daemon or pod.node_name is None:
            return
        node = self.nodes.get(pod.node_name)
        if node is not None:
            node.last_pod_event_s = now_s
        self.generation += 1

    def touch(self) -> None:
        """Note a change (a pod created, a node Ready or gone) for ``generation``."""
        self.generation += 1

    def pending_pods(self) -> list[Pod]:
        """Unbound, undeleted, non-DaemonSet pods, by creation order."""
        self._refresh()
        return list(self._pending)

    def volume_wait(self, pod: Pod) -> str | None:
        """Why ``pod`` may not be placed while pending, its claims being unusable
        (``volume_waits``), or None.

        Karpenter ``pkg/controllers/provisioning/provisioner.go`` ``GetPendingPods`` leaves
        out a pod ``Validate`` refuses (``volumetopology.go``
        ``ValidatePersistentVolumeClaims``); Kubernetes
        ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``
        ``VolumeBinding.PreFilter`` finds such a pod unschedulable (``binder.go``
        ``volumeBinder.GetPodVolumeClaims``: a missing claim, volume or class, an unbound
        ``Immediate`` claim)."""
        if not self.volume_waits or not pod.pending:
            return None
        return self.volume_waits.get(pod.template)

    def placeable_pending_pods(self) -> list[Pod]:
        """``pending_pods`` less those whose claims cannot be used (``volume_wait``): the
        pods kube-scheduler and the autoscalers try to place."""
        pending = self.pending_pods()
        if not self.volume_waits:
            return pending
        return [p for p in pending if self.volume_waits.get(p.template) is None]

    def pods_on(self, node_name: str) -> list[Pod]:
        """Live pods bound to ``node_name``, by creation order."""
        self._refresh()
        return list(self._by_node.get(node_name, ()))

    def requested_on(self, node_name: str) -> Resources:
        """Summed requests of the live pods bound to ``node_name``."""
        total: Resources = {}
        for p in self.pods_on(node_name):
            total = quantity.add(total, p.template.requests)
        return total

    def live_nodeclaims(self) -> list[NodeClaim]:
        """NodeClaims not deleted, by name (a new list; the live ones are tracked, not found
        by walking every NodeClaim ever seen)."""
        if self._claim_names.refresh(self.nodeclaims, _node_revision, _rereads):
            self._claims = [self.nodeclaims[k] for k in sorted(self._claim_names.names)]
        return list(self._claims)

    def _refresh_nodes(self) -> None:
        if self._node_names.refresh(self.nodes, _node_revision, _rereads):
            names = self._node_names.names
            self._live_nodes = [
                self.nodes[k] for k in sorted(names, key=self.nodes.seq.__getitem__)
            ]
            self._ready = [
                n for n in (self.nodes[k] for k in sorted(names)) if n.ready and not n.deleting
            ]

    def live_nodes(self) -> list[Node]:
        """Nodes not deleted (marked for deletion included), in the order they were added
        (a new list; tracked as ``live_nodeclaims``)."""
        self._refresh_nodes()
        return list(self._live_nodes)

    def ready_nodes(self) -> list[Node]:
        """Ready, undeleted, schedulable (not marked for deletion) nodes by name (a new list;
        tracked as ``live_nodeclaims``)."""
        self._refresh_nodes()
        return list(self._ready)

    def claim_of(self, node: Node) -> NodeClaim | None:
        """The node's NodeClaim, or None for static capacity (or a claim already gone)."""
        return self.nodeclaims.get(node.nodeclaim) if node.nodeclaim is not None else None

    def node_of_claim(self, claim: NodeClaim) -> Node | None:
        """The NodeClaim's node, if registered and not deleted."""
        node = self.nodes.get(claim.node_name) if claim.node_name else None
        return node if node is not None and node.deleted_at_s is None else None

    def nodepool_usage(self, nodepool: str) -> Resources:
        """Capacity of the pool's live NodeClaims, plus ``nodes`` (Karpenter status.resources).

        A NodeClaim not launched yet counts with its largest option (pessimistic).
        """
        total: Resources = {}
        for c in self.live_nodeclaims():
            if c.nodepool != nodepool:
                continue
            if c.instance is not None:
                cap = c.instance.instance_type.capacity
            else:
                cap = {}
                for it in c.instance_type_options:
                    cap = quantity.maximum(cap, it.capacity)
            total = quantity.add(total, cap)
            total["nodes"] = total.get("nodes", 0) + 1
        return total


def node_labels_for(claim: NodeClaim, pool: NodePool, region: str) -> dict[str, str]:
    """Labels a launched NodeClaim's node carries: the instance type's well-known labels, the
    offering's zone and capacity type, the pool's template labels and single-valued
    requirements."""
    assert claim.instance is not None
    inst = claim.instance
    out: dict[str, str] = {}
    for key, req in inst.instance_type.requirements.items():
        value = req.any()
        if value is not None and key not in (labels.ZONE, labels.ZONE_ID, labels.CAPACITY_TYPE):
            out[key] = value
    out.update(claim.requirements.labels())
    out.update(pool.node_labels())
    out[labels.ZONE] = inst.offering.zone
    out[labels.ZONE_ID] = inst.offering.zone_id
    out[labels.CAPACITY_TYPE] = inst.offering.capacity_type
    out.update(reservation_labels(inst.offering))
    out[labels.INSTANCE_TYPE] = inst.instance_type.name
    out[labels.REGION] = region
    return out
