"""The provisioner: one scheduling pass over pending pods, then NodeClaims for what is left.

Karpenter ``Provisioner.Schedule``: snapshot nodes (and in-flight NodeClaims) before pods, so
capacity is over- rather than under-estimated; solve; create one NodeClaim per new claim
after re-checking NodePool limits; launch each through the NodeClaim lifecycle.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from joiner.api import labels, quantity
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.nodepools import NodePool
from joiner.api.objects import PodTemplate, Taint
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.overlay import Overlays
from joiner.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    InstanceType,
    NodeClassNotReadyError,
)
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.provisioning.buffers import Buffers
from joiner.scheduling import (
    BoundPod,
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    Scheduler,
    SchedulingInput,
)
from joiner.scheduling.daemonsets import overhead_on_node
from joiner.scheduling.static import is_static
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod
from joiner.state.snapshot import bound_pod, pod_requests, view_basis, view_current

log = logging.getLogger(__name__)

_SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_OFFER_KEYS = (
    labels.ZONE,
    labels.CAPACITY_TYPE,
    labels.ZONE_ID,
    labels.CAPACITY_RESERVATION_ID,
)


#: Requirement keys that steer scheduling but that a NodeClaim never carries: the hostname
#: (Karpenter pkg/controllers/provisioning/scheduling/nodeclaim.go
#: ``NodeClaim.FinalizeScheduling`` deletes it) and the keys of the DaemonSet scheduling
#: simulation (nodeclaimtemplate.go ``schedulingSimulationKeys``, filtered out by
#: ``NodeClaimTemplate.ToNodeClaim``). Karpenter's NodeClaim CRD refuses each of them in
#: ``spec.requirements`` (its ``x-kubernetes-validations`` on the key).
SCHEDULING_ONLY_KEYS = frozenset({labels.HOSTNAME, labels.REGISTERED, labels.INITIALIZED})


def nodeclaim_requirements(reqs: Requirements) -> Requirements:
    """``reqs`` as a new NodeClaim's ``spec.requirements``: without the
    ``SCHEDULING_ONLY_KEYS``."""
    if not SCHEDULING_ONLY_KEYS.intersection(reqs):
        return reqs
    return Requirements(r for key, r in reqs.items() if key not in SCHEDULING_ONLY_KEYS)


@dataclass
class ProvisioningStats:
    """Counters for the summary: passes run and NodeClaims created."""

    passes: int = 0
    nodeclaims_created: int = 0
    launch_failures: int = 0
    unschedulable: dict[str, str] = field(default_factory=dict)


class Provisioner:
    """Runs a scheduling pass (``reconcile``) whenever the batcher flushes."""

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        lifecycle: Lifecycle,
        clock: Clock,
        rng: random.Random,
        *,
        scheduler: Scheduler | None = None,
        on_unschedulable: Callable[[Sequence[str]], None] | None = None,
        nomination_window_s: float = 20.0,
    ) -> None:
        self._state = state
        #: How long a NodeClaim stays nominated after a pass placed a pod on it
        #: (``NodeClaim.nominated_until_s``; Karpenter ``nominationWindow``).
        self.nomination_window_s = nomination_window_s
        self._cloud = cloud
        self._lifecycle = lifecycle
        self._clock = clock
        self._rng = rng
        self._scheduler = scheduler or Scheduler()
        self._on_unschedulable = on_unschedulable
        #: Whether a NodePool is Ready (controller mode: its status' ``Ready`` condition);
        #: one that is not is skipped. None: every NodePool is.
        self.pool_ready: Callable[[str], bool] | None = None
        self.stats = ProvisioningStats()
        self._snapshot: (
            tuple[tuple[int, ...], tuple[ExistingNode, ...], tuple[BoundPod, ...]] | None
        ) = None
        #: Per registered NodeClaim: its snapshot entry and what it was built from
        #: (``_full_snapshot``).
        self._views: dict[str, _View] = {}
        #: Per NodePool: the cloud's last type list and its tuple (``templates``).
        self._type_tuples: dict[str, tuple[list[InstanceType], tuple[InstanceType, ...]]] = {}
        #: CapacityBuffers (``CapacityBuffer`` feature gate), or None.
        self.buffers: Buffers | None = None
        #: NodeOverlays applied to the instance types (Karpenter's ``NodeOverlay`` gate on).
        self.overlays: Overlays | None = None
        #: Called with (pod uid, existing capacity's name: a NodeClaim's, or an unmanaged
        #: node's) for every pod a pass places on existing capacity, in flight or registered
        #: (Karpenter ``Results.Record``); virtual CapacityBuffer pods are not reported.
        self.nominated_listeners: list[Callable[[str, str], None]] = []
        #: Called with (pod uid, why) for every real pod a pass could not place, ``why``
        #: being the scheduler's reason (Karpenter ``Results.Record``'s pod errors).
        self.unschedulable_listeners: list[Callable[[str, str], None]] = []
        #: Called with (NodePool name, whether because of a ``minValues``) for every NodePool
        #: whose requirements leave no instance type, in a pass with pods to place (Karpenter
        #: ``scheduler.go`` NewScheduler's NoCompatibleInstanceTypes).
        self.incompatible_listeners: list[Callable[[str, bool], None]] = []

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler this provisioner solves with (its packing policy); consolidation
        simulates replacements with the same one."""
        return self._scheduler

    def reconcile(self) -> None:
        """One pass: solve for every pending pod, create and launch the new NodeClaims."""
        self.stats.passes += 1
        existing, bound = self.snapshot()
        pending, moving = self._demand()
        ignored = self._refused(pending)
        if ignored:
            pending = [p for p in pending if p.uid not in ignored]
            failed = self._record_unschedulable(list(ignored.items()))
            if self._on_unschedulable is not None:
                self._on_unschedulable(failed)
        virtual = self.buffers.virtual_pods() if self.buffers is not None else []
        pending = pending + virtual
        if not pending:
            return
        templates = self.templates()
        if self.incompatible_listeners:
            self._report_incompatible(templates)
        result = self._scheduler.solve(
            SchedulingInput(
                pods=pod_requests(self._state, pending),
                existing=tuple(existing),
                bound_pods=tuple(bound),
                nodepools=tuple(templates),
                daemonsets=tuple(self._state.daemonsets[k] for k in sorted(self._state.daemonsets)),
            )
        )
        for p in pending:
            p.unschedulable_reason = None
        fake = {p.uid for p in virtual}
        until_s = self._clock.now() + self.nomination_window_s
        for uid, where in result.existing_placements:
            if uid in self._state.pods:
                # Karpenter ``NominateNodeForPod``: real pods only (buffer pods never).
                claim = self._state.nodeclaims.get(where)
                if claim is not None:
                    claim.nominated_until_s = until_s
                for listener in self.nominated_listeners:
                    listener(uid, where)
        failed = self._record_unschedulable(result.unschedulable)
        buffered = self._create_all(result.new_nodeclaims, moving, fake)
        if self.buffers is not None:
            # Nodes and NodeClaims holding virtual pods after this pass (HasBufferPods).
            self.buffers.nodes = frozenset(
                [n for u, n in result.existing_placements if u in fake] + buffered
            )
        if failed and self._on_unschedulable is not None:
            self._on_unschedulable(failed)

    def _demand(self) -> tuple[list[Pod], dict[str, str]]:
        """The pods a pass provisions for, in order, and the node each one moves off (pod
        uid -> node name) when it replaces a pod of a disrupted node."""
        # Karpenter ``pod.IsProvisionable``: a preemptor kube-scheduler nominated to a node
        # (``status.nominatedNodeName``) waits for its victims; it is not demand.
        pending = [p for p in self._state.pending_pods() if p.nominated_node_name is None]
        # Karpenter: pods on nodes being deleted are demand, so their replacement launches
        # before the drain finishes.
        moving = {
            p.uid: node.name
            for node in self._state.live_nodes()
            if node.deleting
            for p in self._state.pods_on(node.name)
            # A pod shutting down after its eviction already has its replacement.
            if not p.daemon and p.terminating_until_s is None
        }
        pending = pending + [
            self._state.pods[uid] for uid in sorted(moving, key=lambda u: self._state.pods[u].order)
        ]
        # Pods that replace ones evicted or lost from a disrupted node: their NodeClaims are
        # that node's replacement (for the timeline and lead-time figures).
        for p in pending:
            old = self._state.pods.get(p.replaces) if p.replaces else None
            if old is not None and old.node_name is not None:
                node = self._state.nodes.get(old.node_name)
                if node is not None and (node.deleting or node.deleted_at_s is not None):
                    moving.setdefault(p.uid, node.name)
        return pending, moving

    def _refused(self, pods: Sequence[Pod]) -> dict[str, str]:
        """The pods of ``pods`` Karpenter ``Provisioner.GetPendingPods`` ignores, by uid, with
        the reason recorded for each: those ``Provisioner.Validate`` refuses for a
        restricted label or ``karpenter.sh/nodepool DoesNotExist``, and pending ones whose
        claims cannot be used (``ValidatePersistentVolumeClaims``; ``joiner plan``'s
        reason, ``ClusterState.volume_wait``)."""
        refused: dict[str, str] = {}
        for p in pods:
            if p.template.karpenter_ignores:
                refused[p.uid] = f"ignoring pod, {p.template.karpenter_ignores}"
                continue
            why = self._state.volume_wait(p)
            if why is not None:
                refused[p.uid] = why
        return refused

    def _record_unschedulable(self, unschedulable: Sequence[tuple[str, str]]) -> list[str]:
        """Record each unschedulable pod's reason (on the pod and in the stats); the uids of
        the real pods among them (a CapacityBuffer's virtual pod is never reported)."""
        failed: list[str] = []
        for uid, reason in unschedulable:
            if uid not in self._state.pods:
                continue
            self._state.pods[uid].unschedulable_reason = reason
            self.stats.unschedulable[uid] = reason
            failed.append(uid)
            for listener in self.unschedulable_listeners:
                listener(uid, reason)
            pod = self._state.pods[uid]
            log.info(
                "pod unschedulable pod=%s reason=%s",
                pod.name,
                reason,
                extra=log_keys(Pod=f"{pod.namespace}/{pod.name}"),
            )
        return failed

    def _report_incompatible(self, templates: Sequence[NodePoolTemplate]) -> None:
        """Tell ``incompatible_listeners`` of each NodePool in ``templates`` that can launch
        nothing (``no_compatible_types``)."""
        for t in templates:
            min_values = no_compatible_types(t.nodepool, t.instance_types)
            if min_values is not None:
                for listener in self.incompatible_listeners:
                    listener(t.nodepool.name, min_values)

    def _create_all(
        self, news: Sequence[NewNodeClaim], moving: dict[str, str], fake: set[str]
    ) -> list[str]:
        """Create and launch a NodeClaim for each of ``news``; the names of those holding a
        CapacityBuffer virtual pod (uids ``fake``)."""
        od_needed = self._on_demand_needed(news)
        # Replicas of one pod shape make identical NodeClaims: compute their offers once.
        capacity_types: dict[tuple[object, ...], list[str]] = {}
        buffered: list[str] = []
        for new in news:
            pool = self._state.nodepools[new.nodepool]
            ct_key = (
                tuple(it.name for it in new.instance_types),
                *(new.requirements.get_or_exists(k) for k in _OFFER_KEYS),
            )
            cts = capacity_types.get(ct_key)
            if cts is None:
                cts = capacity_types[ct_key] = _capacity_types(new)
            if od_needed.get(pool.name, 0) > 0 and labels.CAPACITY_TYPE_ON_DEMAND in cts:
                # joiner.dev/on-demand-base: this NodeClaim fills the on-demand base.
                cts = [labels.CAPACITY_TYPE_ON_DEMAND]
                od_needed[pool.name] -= 1
            claim = self.create_nodeclaim(
                new,
                capacity_types=cts,
                replaces=tuple(sorted({moving[u] for u in new.pods if u in moving})),
            )
            if fake.intersection(new.pods):
                buffered.append(claim.name)
        return buffered

    def create_nodeclaim(
        self,
        new: NewNodeClaim,
        *,
        capacity_types: Sequence[str],
        instance_types: Sequence[InstanceType] | None = None,
        replaces: tuple[str, ...] = (),
    ) -> NodeClaim:
        """Create the NodeClaim for a scheduling result and launch it.

        ``instance_types`` narrows the options (consolidation keeps only cheaper ones);
        ``capacity_types`` pins the capacity-type requirement. A failed launch is counted and
        logged; the lifecycle has then deleted the NodeClaim (``deleted_at_s`` set).
        """
        pool = self._state.nodepools[new.nodepool]
        options = tuple(instance_types) if instance_types is not None else new.instance_types
        reqs = nodeclaim_requirements(
            new.requirements.add(
                Requirement.in_(labels.INSTANCE_TYPE, *[it.name for it in options]),
                Requirement.in_(labels.CAPACITY_TYPE, *capacity_types),
            )
        )
        claim = NodeClaim(
            name=self._name(pool.name),
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=reqs,
            requests=new.requests,
            instance_type_options=options,
            created_at_s=self._clock.now(),
            # Virtual CapacityBuffer pods are never nominated (Karpenter scheduler.go).
            nominated=tuple(u for u in new.pods if u in self._state.pods),
            replaces=replaces,
            launched_from=pool.drift_fields(),
        )
        self._state.nodeclaims[claim.name] = claim
        self.stats.nodeclaims_created += 1
        try:
            self._lifecycle.launch(claim)
        except CloudProviderError as exc:
            self.stats.launch_failures += 1
            log.warning(
                "launch failed nodeclaim=%s error=%s",
                claim.name,
                exc,
                extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool),
            )
        return claim

    def _on_demand_needed(self, new_claims: Sequence[NewNodeClaim]) -> dict[str, int]:
        """Per NodePool with an on-demand base, how many new NodeClaims must be on-demand."""
        out: dict[str, int] = {}
        for name, pool in self._state.nodepools.items():
            if pool.on_demand_base is None:
                continue
            live = [c for c in self._state.live_nodeclaims() if c.nodepool == name]
            on_demand = sum(
                1
                for c in live
                if (c.instance is not None and c.instance.offering.capacity_type == "on-demand")
                or (
                    c.instance is None
                    and c.requirements.get_or_exists(labels.CAPACITY_TYPE).values == {"on-demand"}
                )
            )
            total = len(live) + sum(1 for n in new_claims if n.nodepool == name)
            out[name] = pool.on_demand_nodes_wanted(total) - on_demand
        return out

    def _name(self, pool: str) -> str:
        while True:
            suffix = "".join(self._rng.choice(_SUFFIX_ALPHABET) for _ in range(5))
            name = f"{pool}-{suffix}"
            if name not in self._state.nodeclaims:
                return name

    def snapshot(
        self, exclude: frozenset[str] = frozenset()
    ) -> tuple[list[ExistingNode], list[BoundPod]]:
        """Existing capacity for a solve: launched NodeClaims (registered or not) except
        those whose node is deleted, being deleted, or named in ``exclude`` (NodeClaim
        names: consolidation candidates). Returns the nodes and the pods bound to them.

        The full snapshot is computed once per cluster change (``state.change_key``), so a
        consolidation pass simulating each candidate in turn builds it once."""
        existing, bound = self.base_snapshot()
        if not exclude:
            return list(existing), list(bound)
        return (
            [e for e in existing if e.name not in exclude],
            [b for b in bound if b.node not in exclude],
        )

    def base_snapshot(self) -> tuple[tuple[ExistingNode, ...], tuple[BoundPod, ...]]:
        """``snapshot()`` as tuples, the very same objects until the cluster changes
        (``state.change_key``): solves over it with ``SchedulingInput.exclude_nodes`` share
        what the scheduler derives from it (``scheduling.base``)."""
        key = self._state.change_key()
        if self._snapshot is None or self._snapshot[0] != key:
            existing, bound = self._full_snapshot()
            self._snapshot = (key, tuple(existing), tuple(bound))
        return self._snapshot[1], self._snapshot[2]

    def _full_snapshot(self) -> tuple[list[ExistingNode], list[BoundPod]]:
        out: list[ExistingNode] = []
        bound_pods: list[BoundPod] = []
        views: dict[str, _View] = {}
        daemonsets = [self._state.daemonsets[k] for k in sorted(self._state.daemonsets)]
        daemonsets_t = tuple(daemonsets)
        # Static capacity (nodes no NodePool manages) counts too: Karpenter's cluster state
        # holds every Node, and its scheduling simulation tries existing nodes first.
        for static in self._state.ready_nodes():
            if static.nodeclaim is None:
                out.append(
                    _existing(
                        static.name, static.labels, static.taints, static.allocatable,
                        self._state.pods_on(static.name), True, None, daemonsets, bound_pods,
                    )
                )  # fmt: skip
        for claim in self._state.live_nodeclaims():
            if claim.instance is None:
                continue
            node = self._state.nodes.get(claim.node_name) if claim.node_name else None
            if node is not None and (node.deleted_at_s is not None or node.deleting):
                continue
            if node is not None:
                bound = self._state.pods_on(node.name)
                initialized = claim.initialized_at_s is not None
                # A node's entry is rebuilt only when something it is made of changed
                # (equality, without building a key: equal templates give an equal entry).
                made = (
                    tuple(p.template for p in bound),
                    tuple(p.daemon for p in bound),
                    initialized,
                    claim.nodepool,
                    daemonsets_t,
                )
                view = self._views.get(claim.name)
                if view is None or not view_current(view, node, made):
                    pods: list[BoundPod] = []
                    taints = node.taints if initialized else _lasting(node.taints)
                    existing = _existing(
                        claim.name, dict(node.labels), taints, node.allocatable, bound,
                        initialized, claim.nodepool, daemonsets, pods,
                    )  # fmt: skip
                    view = (*view_basis(node, made), existing, tuple(pods))
                views[claim.name] = view
                out.append(view[5])
                bound_pods.extend(view[6])
                continue
            # In flight: the labels its requirements fix, its NodePool's taints, no pods.
            pool = self._state.nodepools[claim.nodepool]
            out.append(
                _existing(
                    claim.name, self._lifecycle.labels_for(claim), pool.taints,
                    claim.instance.instance_type.allocatable, [],
                    claim.initialized_at_s is not None, claim.nodepool, daemonsets, bound_pods,
                )
            )  # fmt: skip
        self._views = views
        return out, bound_pods

    def templates(self) -> list[NodePoolTemplate]:
        """Each NodePool but the static ones with its NodeClass's instance types
        (NodeOverlays applied, when ``overlays`` is set) and what its limits leave."""
        listed = []
        for name in sorted(self._state.nodepools):
            pool = self._state.nodepools[name]
            if is_static(pool):
                # Karpenter ``provisioner.go`` ``NewScheduler``: static pools keep their own
                # count (``controllers/static``); pending pods never launch one.
                continue
            if self.pool_ready is not None and not self.pool_ready(name):
                # Karpenter ``provisioner.go`` ``NewScheduler``: "ignoring nodepool, not ready".
                log.warning(
                    "ignoring nodepool, not ready nodepool=%s", name, extra=log_keys(NodePool=name)
                )
                continue
            try:
                listed.append((pool, self._cloud.get_instance_types(pool.node_class_ref.name)))
            except NodeClassNotReadyError as exc:
                log.warning(
                    "nodepool skipped nodepool=%s reason=%s",
                    name,
                    exc,
                    extra=log_keys(NodePool=name),
                )
        if self.overlays is not None:
            overlaid = self.overlays.apply_all(listed)
            listed = [(pool, types) for (pool, _), types in zip(listed, overlaid, strict=True)]
        return [self._template(pool, types) for pool, types in listed]

    def pool_types(self, pool: NodePool) -> list[InstanceType]:
        """``pool``'s instance types as a launch for it sees them (NodeOverlays applied,
        when ``overlays`` is set); none while its NodeClass is not ready."""
        try:
            types = self._cloud.get_instance_types(pool.node_class_ref.name)
        except NodeClassNotReadyError:
            return []
        if self.overlays is not None:
            return list(self.overlays.apply_all([(pool, types)])[0])
        return types

    def overlaid_types(self) -> dict[str, tuple[InstanceType, ...]] | None:
        """Each NodePool's instance types with the NodeOverlays applied, by pool name; None
        when no overlays are in force."""
        if self.overlays is None:
            return None
        return {t.nodepool.name: t.instance_types for t in self.templates()}

    def _template(self, pool: NodePool, types: list[InstanceType]) -> NodePoolTemplate:
        name = pool.name
        remaining: dict[str, int] = {}
        if pool.limits:
            usage = self._state.nodepool_usage(name)
            remaining = {k: v - usage.get(k, 0) for k, v in pool.limits}
        held = self._type_tuples.get(name)
        if held is None or held[0] is not types:
            held = self._type_tuples[name] = (types, tuple(types))
        return NodePoolTemplate(
            nodepool=pool,
            # The same tuple while the cloud's list is the same object, so solves
            # share the prepared pool without rebuilding its key.
            instance_types=held[1],
            remaining=tuple(sorted(remaining.items())),
        )


#: (the node, copies of its labels, its taints, (its pods' templates, whether each is a
#: DaemonSet pod, initialized, NodePool, DaemonSets), a copy of its allocatable; its entry,
#: its bound pods).
_View = tuple[
    Node,
    dict[str, str],
    tuple[Taint, ...],
    tuple[object, ...],
    quantity.Resources,
    ExistingNode,
    tuple[BoundPod, ...],
]


def _existing(
    name: str,
    node_labels: dict[str, str],
    taints: tuple[Taint, ...],
    allocatable: quantity.Resources,
    bound: list[Pod],
    initialized: bool,
    nodepool: str | None,
    daemonsets: list[PodTemplate],
    bound_pods: list[BoundPod],
) -> ExistingNode:
    """One existing node of the snapshot: allocatable less its pods and the DaemonSet pods
    still to come; its pods are appended to ``bound_pods``."""
    used: quantity.Resources = {}
    daemons_bound: quantity.Resources = {}
    for p in bound:
        used = quantity.add(used, p.template.requests)
        if p.daemon:
            daemons_bound = quantity.add(daemons_bound, p.template.requests)
        bound_pods.append(bound_pod(name, p.template))
    expected = overhead_on_node(node_labels, taints, daemonsets)
    still_to_come = {k: max(0, v - daemons_bound.get(k, 0)) for k, v in expected.items()}
    return ExistingNode(
        name=name,
        labels=tuple(sorted(node_labels.items())),
        taints=taints,
        available=quantity.subtract(quantity.subtract(allocatable, used), still_to_come),
        initialized=initialized,
        nodepool=nodepool,
    )


def _lasting(taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
    """A managed node's taints that outlast its start-up: a node not initialized yet is
    placed on without the known ephemeral ones (``labels.KNOWN_EPHEMERAL_TAINTS``: the
    node lifecycle controller's ``not-ready``/``unreachable`` while it is not Ready yet, or
    while the API server restarts), as Karpenter's ``StateNode.Taints`` drops them, so the
    pods nominated to it launch nothing more."""
    return tuple(t for t in taints if not labels.known_ephemeral_taint(t.key, t.effect))


def static_capacity_types(new: NewNodeClaim) -> list[str]:
    """The capacity types a static NodeClaim (``scheduling.static.template_claim``) may
    launch as: those its instance types offer under its requirements."""
    return _capacity_types(new)


def _capacity_types(new: NewNodeClaim) -> list[str]:
    """The capacity types of ``new``'s instance types' available offerings its requirements
    allow, sorted (the scan stops once it has every capacity type they allow)."""
    allowed = new.requirements.get(labels.CAPACITY_TYPE)
    every = len(allowed.values) if allowed is not None and not allowed.complement else None
    found: set[str] = set()
    for it in new.instance_types:
        found.update(o.capacity_type for o in it.available_offerings(new.requirements))
        if every is not None and len(found) >= every:
            break
    return sorted(found)


def no_compatible_types(pool: NodePool, types: Sequence[InstanceType]) -> bool | None:
    """Whether ``pool``'s requirements filter out every instance type of ``types``: None
    when some type is left, False when no type matches them with an available offering,
    True when some do but too few values remain for a ``minValues`` (Karpenter
    ``scheduling/scheduler.go`` NewScheduler, ``filterInstanceTypesByRequirements`` for an
    empty pod, ``InstanceTypes.SatisfiesMinValues``; the ``Strict`` policy)."""
    reqs = pool.requirements
    if pool.own_label_conflict() is not None:
        return False
    left = [
        it
        for it in types
        if it.requirements.intersects(reqs) is None and it.available_offerings(reqs)
    ]
    if not left:
        return False
    for key, r in reqs.items():
        if r.min_values is None:
            continue
        values = {
            v
            for it in left
            if (tr := it.requirements.get(key)) is not None and not tr.complement
            for v in tr.values
        }
        if len(values) < r.min_values:
            return True
    return None
