"""The informer cache and what it feeds into ``ClusterState``.

``ClusterFeed.deliver`` keeps the last document of every object per kind (the cache the
actuator diffs against) and, once ``start`` has run, applies each change to the state the
controllers share, through the same manifest loader as files
(``joiner.api.manifests.load_documents``):

* NodePools, EC2NodeClasses, DaemonSets and PDBs: the whole configuration is re-loaded on
  any change (a document that does not load is skipped with a warning naming it; the
  others still apply; a skipped NodePool's error is kept in ``pool_errors`` for its
  status), then ``on_config`` hears of it.
* Pods: created on first sight (unbound non-provisionable pods, such as DaemonSet pods not
  yet placed, wait until they are bound), bound when ``spec.nodeName`` appears (the real
  kube-scheduler binds; Joiner never does), deleted when they finish, get a
  ``deletionTimestamp`` or disappear. An unbound pod is demand only once kube-scheduler
  has tried it and found no room (a ``PodScheduled`` condition with reason
  ``Unschedulable``: Karpenter ``pkg/utils/pod/scheduling.go`` ``IsProvisionable`` requires
  ``FailedToSchedule``); until then it waits outside the state (``held``) and joins on a
  later event that shows the condition, or as bound once kube-scheduler binds it; it counts
  as created when first seen. A nomination (``status.nominatedNodeName``) does not let a
  pod in without the condition; a pod in the state is no demand while it is nominated
  (``_follow_nomination``). A pod deleted in the state, or deleted while held (its uid
  kept, ``DELETED_HELD_KEPT`` at most), is never resurrected by a stale event. Its
  ``karpenter.sh/do-not-disrupt`` and ``controller.kubernetes.io/pod-deletion-cost``
  annotations follow the API (they may be set on a running pod).
* PersistentVolumeClaims, PersistentVolumes and StorageClasses (``volumefeed.VolumeCache``):
  each pod's volumes give its node requirements as ``joiner plan`` reads them
  (``scheduling.volumes.volume_terms``), read again on every change of these kinds. An
  unbound pod whose claims cannot be used yet (missing, being deleted, or unbound with an
  ``Immediate`` StorageClass: Karpenter ``Provisioner.Validate`` ignores it) waits outside
  the state and joins it (``on_pending``) once they can, after a volume or a pod change.
  A pod already counted whose volume goes away keeps the topology it had.
* Nodes: a Node whose ``spec.providerID`` is a live NodeClaim's instance registers it
  (``Lifecycle.register``; the actuator then removes ``karpenter.sh/unregistered``), and its
  Ready condition, once the known ephemeral taints are gone too (``not-ready``,
  ``unreachable``, ``karpenter.sh/unregistered``: ``labels.known_ephemeral_taint``, as
  Karpenter's initialization requires), initializes it (``Lifecycle.initialize``). Taints
  other than the two Joiner manages (``karpenter.sh/unregistered``,
  ``karpenter.sh/disrupted``) are taken from the API, with the ``NoSchedule`` taints the
  node lifecycle controller keeps for its conditions and a cordon where the API does not
  show them yet (``_lifecycle_taints``); Joiner's own come from the state. A Node that
  disappears takes its NodeClaim with it. A Node without the
  ``karpenter.sh/nodepool`` label and no NodeClaim (a managed node group, self-managed or
  Fargate node) is static capacity: the provisioner counts it, as Karpenter's cluster state
  counts every Node, and nothing drains or deletes it.
* NodeClaims: one deleted by someone else while live is reported (``on_claim_deleted``:
  the composition root drains and terminates it, as Karpenter's finalizer does). So is a
  live NodeClaim's Node that someone deletes (``kubectl delete node``): it keeps Joiner's
  finalizer until the drain is done (Karpenter's node termination controller).

``start`` (after every informer's first list) re-builds the NodeClaims from the
``karpenter.sh/v1`` NodeClaim objects (a restart or a new leader), registers them with
their Nodes, and lists orphans: NodeClaims never launched and Joiner-made Nodes without
Joiner's finalizer that no NodeClaim owns (``orphan_claims``, ``orphan_nodes``), which the
actuator deletes. A launched NodeClaim deleted while no controller ran (it waits with its
finalizer), or whose Node was, is adopted like the others and listed in
``deleting_claims``: the composition root drains it within its PodDisruptionBudgets, as if
the deletion had just been seen (once the pods are replayed, so the drain sees them).

A NodePool's Node still holding ``karpenter.sh/termination`` whose NodeClaim is gone (it
was deleted and released while no controller ran) is listed in ``unclaimed_nodes`` and
kept in the state as a Node without a NodeClaim, ``deleting``: it is no capacity, its pods
are demand, and the composition root drains it within their PodDisruptionBudgets before
the actuator releases the finalizer. This is Karpenter's node termination controller
with no NodeClaim (karpenter ``pkg/controllers/node/termination/controller.go``
``Controller.finalize``: ``NodeClaimForNode`` not found is no error; taint, drain, then
remove the finalizer); a Node not yet deleted is deleted first, as the AWS provider's
instance garbage collection deletes the Node of an instance no NodeClaim owns
(karpenter-provider-aws ``pkg/controllers/nodeclaim/garbagecollection/controller.go``
``garbageCollect``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from joiner.api import durations, labels
from joiner.api.clock import Clock
from joiner.api.errors import InputError
from joiner.api.logkeys import log_keys
from joiner.api.manifests import ManifestSet, load_documents
from joiner.api.objects import PodTemplate, StandalonePod, Taint, lifecycle_taints
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import CloudProviderError, Instance
from joiner.cluster.kube.client import (
    DAEMONSET,
    EC2NODECLASS,
    KWOKNODECLASS,
    NODE,
    NODECLAIM,
    NODEOVERLAY,
    NODEPOOL,
    PDB,
    POD,
    Kind,
)
from joiner.cluster.kube.volumefeed import VOLUME_KINDS, VolumeCache
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.scheduling.static import gated
from joiner.scheduling.volumes import MissingVolumeError
from joiner.state.cluster import ClusterState, Node, NodeClaim, NodeCondition, Pod

log = logging.getLogger(__name__)

#: Karpenter's kwok provider marks the Nodes it makes so kwok manages them.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
#: Taints Joiner owns on Nodes; all others belong to the API (kubelet, node controller).
MANAGED_TAINTS = frozenset({labels.TAINT_UNREGISTERED, labels.TAINT_DISRUPTED})
CONFIG_KINDS = (
    "NodePool",
    "EC2NodeClass",
    "KWOKNodeClass",
    "DaemonSet",
    "PodDisruptionBudget",
    "NodeOverlay",
)

#: How many uids of pods deleted while held (never in the state) the feed remembers, so a
#: stale event for one never brings it back as demand (a uid is never reused: a pod made
#: again under its name has a new one); the oldest are forgotten first.
DELETED_HELD_KEPT = 10_000
#: Why an unbound pod kube-scheduler has not found unschedulable yet is no demand.
NOT_UNSCHEDULABLE_YET = (
    "kube-scheduler has not found it unschedulable yet (no PodScheduled condition with "
    "reason Unschedulable); it is demand once it has, and counted as bound once bound"
)

#: ``adopt_instance(instance_type, node_class, zone, capacity_type, provider_id)``: the
#: cloud's instance behind an existing NodeClaim (raises ``CloudProviderError``).
AdoptInstance = Callable[[str, str, str, str, str], Instance]


def key_of(doc: dict[str, Any]) -> str:
    """``namespace/name`` (cluster-scoped: ``name``) of an API document."""
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp from the API (``2026-11-30T01:02:03Z``) as an aware datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def node_ready(doc: dict[str, Any]) -> bool:
    """The Node's ``Ready`` condition is ``True``."""
    for cond in (doc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_conditions(doc: dict[str, Any], now_s: float, wall: datetime) -> dict[str, NodeCondition]:
    """``status.conditions`` of a Node document by type: status and ``lastTransitionTime``
    on the controllers' clock (``now_s`` is ``wall``); a condition without a transition
    time counts from now. A duplicated type reads as its first entry (k8s.io/kubernetes
    pkg/api/v1/node/util.go GetNodeCondition)."""
    out: dict[str, NodeCondition] = {}
    for cond in (doc.get("status") or {}).get("conditions") or []:
        changed = parse_time(cond.get("lastTransitionTime"))
        age = max((wall - changed).total_seconds(), 0.0) if changed else 0.0
        out.setdefault(str(cond.get("type")), NodeCondition(str(cond.get("status")), now_s - age))
    return out


def api_taints(doc: dict[str, Any]) -> tuple[Taint, ...]:
    """``spec.taints`` of a Node document."""
    return tuple(
        Taint(str(t["key"]), str(t["effect"]), str(t.get("value") or ""))
        for t in (doc.get("spec") or {}).get("taints") or []
    )


class ClusterFeed:
    """The informer cache and the state it feeds (module docstring)."""

    def __init__(
        self,
        state: ClusterState,
        clock: Clock,
        lifecycle: Lifecycle,
        adopt_instance: AdoptInstance,
        *,
        source: str,
        wall_now: Callable[[], datetime],
    ) -> None:
        self._state = state
        self._clock = clock
        self._lifecycle = lifecycle
        self._adopt_instance = adopt_instance
        self.source = source
        self._wall_now = wall_now
        self.docs: dict[str, dict[str, dict[str, Any]]] = {}
        self.synced: set[str] = set()
        self.started = False
        self._order = 0
        self.orphan_claims: list[str] = []
        self.orphan_nodes: list[str] = []
        #: Launched NodeClaims found with a ``deletionTimestamp`` (or whose Node had one)
        #: at ``start``.
        self.deleting_claims: list[str] = []
        #: NodePool Nodes with Joiner's finalizer whose NodeClaim is gone, at ``start``.
        self.unclaimed_nodes: list[str] = []
        #: NodePools the last configuration load skipped, by name, with why (the NodePool
        #: status's ``ValidationSucceeded`` and ``NodeClassReady``).
        self.pool_errors: dict[str, InputError] = {}
        self._replaying = False
        #: Karpenter's ``StaticCapacity`` gate (``scheduling.static.gated``).
        self.static_capacity = False
        self.on_config: list[Callable[[ManifestSet], None]] = []
        self.on_pending: list[Callable[[Pod], None]] = []
        #: A pod joined the state that was seen unbound (pending now, or held and bound
        #: since): Karpenter's pod metrics time the binding of every pod seen ``Pending``.
        self.on_seen_unbound: list[Callable[[Pod], None]] = []
        self.on_bound: list[Callable[[Pod], None]] = []
        self.on_pod_gone: list[Callable[[Pod], None]] = []
        self.on_running: list[Callable[[Pod, dict[str, Any]], None]] = []
        self.on_registered: list[Callable[[NodeClaim], None]] = []
        self.on_ready: list[Callable[[NodeClaim], None]] = []
        #: A NodeClaim's Node changed its status conditions (node repair's trigger).
        self.on_conditions: list[Callable[[Node], None]] = []
        self.on_node_gone: list[Callable[[Node], None]] = []
        #: A live NodeClaim's object was deleted by someone else (``kubectl delete``).
        self.on_claim_deleted: list[Callable[[NodeClaim], None]] = []
        self._running: set[str] = set()
        #: The cluster's claims, volumes and StorageClasses.
        self.volumes = VolumeCache(source)
        #: Unbound pods that are no demand yet, waiting for kube-scheduler to find them
        #: unschedulable or for their volumes (uid -> their document and why).
        self.held: dict[str, tuple[dict[str, Any], str]] = {}
        #: When each held pod was first seen (uid -> clock time): its creation, once it joins.
        self._held_since: dict[str, float] = {}
        #: Uids of pods deleted while held or never seen (``DELETED_HELD_KEPT`` of them, in
        #: deletion order): a stale event for one is ignored, as for a pod deleted from the
        #: state (``Pod.deleted_at_s``).
        self._deleted_unseen: OrderedDict[str, None] = OrderedDict()

    # -- the cache ----------------------------------------------------------------------

    def deliver(self, kind: Kind, event: str, docs: list[dict[str, Any]]) -> None:
        """One informer delivery (``informer.Informer``): ``SYNC`` replaces the kind's
        cache, ``ADDED``/``MODIFIED``/``DELETED`` change one object. Must run on the
        controllers' thread."""
        cache = self.docs.setdefault(kind.kind, {})
        # Only configuration changes are compared with what was there (``_spec_changed``);
        # copying a 10,000-pod cache for every pod event would cost more than the event.
        before = dict(cache) if kind.kind in CONFIG_KINDS else {}
        changes = self._update_cache(kind, event, docs, cache)
        if kind.kind in VOLUME_KINDS:
            for ev, d in changes:
                self.volumes.apply(kind.kind, ev, key_of(d), d)
            if self.started and changes:
                self._volumes_changed()
        elif self.started:
            self._apply(kind, changes, before)

    def _apply(
        self, kind: Kind, changes: list[tuple[str, dict[str, Any]]], before: dict[str, Any]
    ) -> None:
        """Apply one delivery's changes of ``kind`` (not a volume kind) to the state."""
        if kind.kind in CONFIG_KINDS:
            if any(self._spec_changed(ev, d, before) for ev, d in changes):
                self.reload_config()
        elif kind.kind == POD.kind:
            for ev, d in changes:
                self._pod(ev, d)
        elif kind.kind == NODE.kind:
            for ev, d in changes:
                self._node(ev, d)
        elif kind.kind == NODECLAIM.kind:
            for ev, d in changes:
                self._claim_object(ev, d)

    def _update_cache(
        self, kind: Kind, event: str, docs: list[dict[str, Any]], cache: dict[str, dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """Apply one delivery to the kind's ``cache``; returns the ``(event, document)``
        changes it makes (a ``SYNC`` deletes what it no longer lists, and a Pod it lists
        under a new uid, and modifies the rest)."""
        changes: list[tuple[str, dict[str, Any]]] = []
        if event == "SYNC":
            fresh = {key_of(d): d for d in docs}
            changes += [
                ("DELETED", d)
                for k, d in cache.items()
                if k not in fresh or (kind.kind == POD.kind and _uid(d) != _uid(fresh[k]))
            ]
            changes += [("MODIFIED", d) for d in docs]
            cache.clear()
            cache.update(fresh)
            self.synced.add(kind.kind)
            return changes
        for d in docs:
            if event == "DELETED":
                cache.pop(key_of(d), None)
            else:
                cache[key_of(d)] = d
            changes.append((event, d))
        return changes

    def _claim_object(self, event: str, doc: dict[str, Any]) -> None:
        """A NodeClaim object changed: a live claim whose object is deleted (or being
        deleted) by someone else goes to ``on_claim_deleted``."""
        claim = self._state.nodeclaims.get(str((doc.get("metadata") or {}).get("name")))
        deleting = event == "DELETED" or (doc.get("metadata") or {}).get("deletionTimestamp")
        if deleting and claim is not None and claim.deleted_at_s is None:
            for deleted in self.on_claim_deleted:
                deleted(claim)

    @staticmethod
    def _spec_changed(event: str, doc: dict[str, Any], before: dict[str, dict[str, Any]]) -> bool:
        """Added, deleted, or a new ``metadata.generation`` (status-only updates, such as
        a PDB's, do not change the configuration)."""
        old = before.get(key_of(doc))
        if event == "DELETED" or old is None:
            return True
        gen = (doc.get("metadata") or {}).get("generation")
        return gen is None or gen != (old.get("metadata") or {}).get("generation")

    def of(self, kind: Kind) -> dict[str, dict[str, Any]]:
        """The cached documents of ``kind`` by key."""
        return self.docs.get(kind.kind, {})

    # -- configuration ------------------------------------------------------------------

    def reload_config(self) -> None:
        """Re-load NodePools, NodeClasses, DaemonSets and PDBs into the state (and
        NodeOverlays, when watched, into the ``ManifestSet`` the ``on_config`` listeners
        get)."""
        classes = [*self.of(EC2NODECLASS).values(), *self.of(KWOKNODECLASS).values()]
        rest = [
            *self.of(DAEMONSET).values(),
            *self.of(PDB).values(),
            *self.of(NODEOVERLAY).values(),
        ]
        pools = list(self.of(NODEPOOL).values())
        self.pool_errors = {}
        try:
            ms = load_documents([*classes, *pools, *rest], self.source)
        except InputError as exc:
            log.warning("cluster configuration has an error (%s); loading object by object", exc)
            ms = self._load_each(classes, pools, rest)
        st = self._state
        # Karpenter's StaticCapacity gate off: static pools are provisioned as others.
        st.nodepools = {p.name: p for p in gated(ms.nodepools, self.static_capacity)}
        st.daemonsets = {f"{d.namespace}/{d.name}": d.template for d in ms.daemonsets}
        st.pdbs = list(ms.pdbs)
        st.touch()
        for listener in self.on_config:
            listener(ms)

    def _load_each(
        self,
        classes: list[dict[str, Any]],
        pools: list[dict[str, Any]],
        rest: list[dict[str, Any]],
    ) -> ManifestSet:
        good_classes = []
        out = ManifestSet()
        for doc in [*classes, *rest]:
            try:
                one = load_documents([doc], self.source)
            except InputError as exc:
                log.warning("skipped %s: %s", key_of(doc), exc)
                continue
            if doc in classes:
                good_classes.append(doc)
            out.nodeclasses += one.nodeclasses
            out.daemonsets += one.daemonsets
            out.pdbs += one.pdbs
            out.nodeoverlays += one.nodeoverlays
        for doc in pools:
            try:
                one = load_documents([*good_classes, doc], self.source)
            except InputError as exc:
                log.warning("skipped NodePool %s: %s", key_of(doc), exc)
                self.pool_errors[key_of(doc)] = exc
                continue
            out.nodepools += one.nodepools
        return out

    # -- start: adopt what the API holds -------------------------------------------------

    def start(self) -> None:
        """Build the state from the cache (every informer has listed once): configuration,
        NodeClaims and their instances, Nodes, Pods; then apply changes as they come."""
        self.reload_config()
        now = self._clock.now()
        wall = self._wall_now()
        nodes_by_provider = {
            str((d.get("spec") or {}).get("providerID")): d
            for d in self.of(NODE).values()
            if (d.get("spec") or {}).get("providerID")
        }
        for doc in self.of(NODECLAIM).values():
            self._adopt_claim(doc, now, wall, nodes_by_provider)
        owned = {c.instance.provider_id for c in self._state.nodeclaims.values() if c.instance}
        for pid, doc in sorted(nodes_by_provider.items()):
            if pid not in owned:
                self._unowned_node(doc)
        self.started = True
        self._replaying = True
        try:
            for doc in list(self.of(NODE).values()):
                self._node("ADDED", doc)
            for doc in sorted(
                self.of(POD).values(),
                key=lambda d: str((d.get("metadata") or {}).get("creationTimestamp") or ""),
            ):
                self._pod("ADDED", doc)
        finally:
            self._replaying = False

    def _unowned_node(self, doc: dict[str, Any]) -> None:
        """A Node with a provider id no NodeClaim owns, at ``start``: a NodePool's Node with
        Joiner's finalizer is kept for its drain (``unclaimed_nodes``, module docstring);
        a Joiner-made one without it is an orphan, deleted at once; any other (a node
        group's, or a kubelet's Node of a NodePool without the finalizer) is left alone."""
        meta = doc.get("metadata") or {}
        name = str(meta.get("name"))
        if not (meta.get("labels") or {}).get(labels.NODEPOOL):
            return
        if labels.TERMINATION_FINALIZER in (meta.get("finalizers") or []):
            log.info(
                "node %s: its NodeClaim is gone; draining it before it goes",
                name,
                extra=log_keys(Node=name),
            )
            self._static_node(name, doc).deleting = True
            self.unclaimed_nodes.append(name)
        elif (meta.get("annotations") or {}).get(KWOK_ANNOTATION):
            self.orphan_nodes.append(name)

    def _adopt_claim(
        self,
        doc: dict[str, Any],
        now: float,
        wall: datetime,
        nodes_by_provider: dict[str, dict[str, Any]],
    ) -> None:
        meta = doc.get("metadata") or {}
        name = str(meta.get("name"))
        lab = dict(meta.get("labels") or {})
        status = doc.get("status") or {}
        provider_id = status.get("providerID")
        pool = self._state.nodepools.get(lab.get(labels.NODEPOOL, ""))
        if not provider_id or pool is None:
            log.info(
                "nodeclaim %s: %s; deleting it",
                name,
                "never launched"
                if not provider_id
                else f"NodePool {lab.get(labels.NODEPOOL)!r} does not exist",
                extra=log_keys(NodeClaim=name),
            )
            self.orphan_claims.append(name)
            return
        type_name = lab.get(labels.INSTANCE_TYPE, "")
        zone = lab.get(labels.ZONE, "")
        ct = lab.get(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND)
        try:
            instance = self._adopt_instance(
                type_name, pool.node_class_ref.name, zone, ct, str(provider_id)
            )
        except CloudProviderError as exc:
            log.warning(
                "nodeclaim %s: its instance %s: %s; deleting it",
                name,
                provider_id,
                exc,
                extra=log_keys(NodeClaim=name, NodePool=pool.name),
            )
            self.orphan_claims.append(name)
            return
        created = parse_time(meta.get("creationTimestamp"))
        age = (wall - created).total_seconds() if created else 0.0
        reqs = Requirements.from_labels(
            {k: v for k, v in lab.items() if k in (labels.INSTANCE_TYPE, labels.ZONE)}
            | {labels.CAPACITY_TYPE: ct}
        )
        annotations = meta.get("annotations") or {}
        claim = NodeClaim(
            name=name,
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=reqs,
            requests={},
            instance_type_options=(instance.instance_type,),
            created_at_s=now - age,
            instance=instance,
            launched_at_s=now - age,
            launched_from=pool.drift_fields()
            if annotations.get(HASH_ANNOTATION) == pool_hash(pool.drift_fields())
            else None,
        )
        self._state.nodeclaims[name] = claim
        if meta.get("deletionTimestamp"):
            self.deleting_claims.append(name)

    # -- pods -----------------------------------------------------------------------------

    def _pod(self, event: str, doc: dict[str, Any]) -> None:
        """Follow one Pod event: a new bound pod, or a pending one that is demand, joins the
        state (others are held: ``_holds``), a bound one is marked bound, a terminal,
        deleting or deleted one is gone, a running one is reported once."""
        uid = str(_uid(doc))
        now = self._clock.now()
        existing = self._state.pods.get(uid)
        if event == "DELETED":
            self.held.pop(uid, None)
            self._held_since.pop(uid, None)
            if existing is None:
                self._forget_deleted(uid)
            elif existing.deleted_at_s is None:
                self._gone(existing, now)
            return
        if existing is None and uid in self._deleted_unseen:
            log.debug("pod %s: event after its deletion ignored", key_of(doc))
            return
        try:
            loaded = load_documents([doc], self.source).pods
        except InputError as exc:
            log.warning("pod %s not read: %s", key_of(doc), exc)
            return
        if not loaded:
            return
        p = loaded[0]
        if existing is None:
            if self._holds(uid, p, doc):
                return
            existing = self._new_pod(uid, p, now)
            if existing is None:
                return
        if existing.deleted_at_s is not None:
            return  # deleted here (evicted): a stale event never brings it back
        if p.terminal or p.deleting:
            self._gone(existing, now)
            return
        self._follow_pod(existing, uid, p, doc, now)

    def _forget_deleted(self, uid: str) -> None:
        """Remember that the pod ``uid``, never in the state, was deleted (its tombstone,
        ``_deleted_unseen``), forgetting the oldest beyond ``DELETED_HELD_KEPT``."""
        self._deleted_unseen[uid] = None
        self._deleted_unseen.move_to_end(uid)
        while len(self._deleted_unseen) > DELETED_HELD_KEPT:
            self._deleted_unseen.popitem(last=False)

    def _new_pod(self, uid: str, p: StandalonePod, now: float) -> Pod | None:
        """Add a pod seen for the first time, or held until now, to the state (created when
        first seen; ``on_pending`` when unbound, ``on_seen_unbound`` when unbound or held
        before), or None for one the provisioner never counts (terminal, deleting, or
        unbound and not provisionable)."""
        held_since = self._held_since.pop(uid, None)
        if p.terminal or p.deleting:
            return None
        if p.node_name is None and not p.provisionable:
            return None
        kind, _, owner_name = (p.owner or "").partition("/")
        pod = Pod(
            uid=uid,
            namespace=p.namespace,
            name=p.name,
            template=p.template,
            owner=f"{kind}/{p.namespace}/{owner_name}" if kind else f"Pod/{p.key}",
            created_at_s=now if held_since is None else held_since,
            order=self._order,
            daemon=kind == "DaemonSet",
            nominated_node_name=p.nominated_node_name if p.node_name is None else None,
        )
        self._order += 1
        pod.do_not_disrupt, pod.do_not_disrupt_for_s = durations.do_not_disrupt(
            dict(p.annotations).get(labels.DO_NOT_DISRUPT)
        )
        self._state.pods[uid] = pod
        self._note_volumes(pod.template)
        self._state.touch()
        if p.node_name is None or held_since is not None:
            for seen in self.on_seen_unbound:
                seen(pod)
        if p.node_name is None:
            for listener in self.on_pending:
                listener(pod)
        return pod

    def _follow_pod(
        self, pod: Pod, uid: str, p: StandalonePod, doc: dict[str, Any], now: float
    ) -> None:
        """A live pod's annotations (``_follow_annotations``), its preemption nomination
        (``_follow_nomination``), its binding (``on_bound``)
        and its first ``Running`` phase (``on_running``)."""
        self._follow_annotations(pod, p)
        self._follow_nomination(pod, p)
        if p.node_name is not None and pod.node_name is None:
            pod.node_name = p.node_name
            pod.bound_at_s = now
            pod.unschedulable_reason = None
            self._state.pod_event(pod, now)
            for listener in self.on_bound:
                listener(pod)
        if p.phase == "Running" and uid not in self._running:
            self._running.add(uid)
            for running in self.on_running:
                running(pod, doc)

    def _follow_nomination(self, pod: Pod, p: StandalonePod) -> None:
        """Take a pending pod's ``status.nominatedNodeName`` as it is now: kube-scheduler
        sets it when it preempts for the pod and clears it when the pod binds or the
        nomination lapses. A nominated pod waits for its victims and is no demand
        (Karpenter ``pkg/utils/pod/scheduling.go`` ``IsPreempting``, part of
        ``IsProvisionable``; the provisioner's ``_demand`` leaves it out), so the reason a
        past pass gave for it no longer stands (``karpenter_scheduler_unschedulable_pods_count``
        counts the pods the last pass could not schedule), as on binding. When the
        nomination of an unbound pod lapses, it is demand again: ``on_pending`` hears of it,
        as Karpenter's pod controller triggers its batcher on a pod update."""
        nominated = p.nominated_node_name if p.node_name is None else None
        if nominated != pod.nominated_node_name:
            lapsed = nominated is None and p.node_name is None
            pod.nominated_node_name = nominated
            if nominated is not None:
                pod.unschedulable_reason = None
            self._state.touch()
            if lapsed:
                # demand again: the provisioner hears of it now, not at its next resync
                for listener in self.on_pending:
                    listener(pod)

    def _follow_annotations(self, pod: Pod, p: StandalonePod) -> None:
        """Take a running pod's ``karpenter.sh/do-not-disrupt`` and
        ``controller.kubernetes.io/pod-deletion-cost`` as they are now: both may be set or
        changed on a running pod, and Karpenter reads the pod as it is at each pass
        (``statenode.go`` ``ValidatePodsDisruptable``, ``disruption.go`` ``EvictionCost``)."""
        held = durations.do_not_disrupt(dict(p.annotations).get(labels.DO_NOT_DISRUPT))
        if held != (pod.do_not_disrupt, pod.do_not_disrupt_for_s):
            pod.do_not_disrupt, pod.do_not_disrupt_for_s = held
            self._state.touch()
        now = (p.template.deletion_cost, p.template.do_not_disrupt)
        if now != (pod.template.deletion_cost, pod.template.do_not_disrupt):
            old = pod.template
            pod.template = replace(old, deletion_cost=now[0], do_not_disrupt=now[1])
            if old in self._state.volume_terms:
                self._state.volume_terms[pod.template] = self._state.volume_terms[old]
            self._state.touch()

    # -- volumes --------------------------------------------------------------------------

    def _holds(self, uid: str, p: StandalonePod, doc: dict[str, Any]) -> bool:
        """Whether an unbound, provisionable pod seen for the first time is held (``held``)
        and not counted (``_hold_reason``). The reason is logged when it changes: at debug
        level while kube-scheduler has not found the pod unschedulable (every pod passes
        there), at info level for its volumes."""
        before = self.held.pop(uid, None)
        if p.node_name is not None or p.terminal or not p.provisionable:
            return False
        reason = self._hold_reason(p)
        if reason is None:
            return False
        if before is None or before[1] != reason:
            level = logging.DEBUG if reason == NOT_UNSCHEDULABLE_YET else logging.INFO
            log.log(level, "ignoring pod %s: %s", p.key, reason, extra=log_keys(Pod=p.key))
        self.held[uid] = (doc, reason)
        self._held_since.setdefault(uid, self._clock.now())
        return True

    def _hold_reason(self, p: StandalonePod) -> str | None:
        """Why unbound, provisionable ``p`` is no demand yet, in Karpenter's order: it has
        no ``PodScheduled`` condition with reason ``Unschedulable`` (Karpenter
        ``pkg/controllers/provisioning/provisioner.go`` ``Provisioner.GetPendingPods`` lists
        only pods ``pkg/utils/pod/scheduling.go`` ``IsProvisionable`` accepts, which
        requires ``FailedToSchedule`` whether or not the pod is nominated: a nomination
        alone never makes it demand, not even once it lapses), then its claims cannot be
        used yet (``Provisioner.Validate``, ``volumetopology.go``
        ``ValidatePersistentVolumeClaims``). None when it is demand."""
        if not p.failed_to_schedule:
            return NOT_UNSCHEDULABLE_YET
        try:
            self.volumes.terms(p.template)
        except MissingVolumeError as exc:
            return str(exc)
        return None

    def _note_volumes(self, t: PodTemplate) -> None:
        """Record ``t``'s volume topology in the state; a bound pod's volume that cannot
        be read leaves it without one."""
        if not t.volume_claims or t in self._state.volume_terms:
            return
        try:
            terms = self.volumes.terms(t)
        except MissingVolumeError:
            return
        if terms:
            self._state.volume_terms[t] = terms

    def _volumes_changed(self) -> None:
        """A claim, volume or StorageClass changed: every live pod's volume topology is
        read again (a pod's volume that went away keeps what it had), then each pod held
        for its volumes is tried again and joins the state once they can be used (a pod
        held because kube-scheduler has not refused it yet waits for a pod event, not for
        this: reading every such pod again on each volume event would cost as many reads
        as pods held)."""
        st = self._state
        kept = st.volume_terms
        fresh: dict[PodTemplate, tuple[Requirements, ...]] = {}
        for pod in st.live_pods():
            t = pod.template
            if not t.volume_claims or t in fresh:
                continue
            try:
                terms = self.volumes.terms(t)
            except MissingVolumeError:
                terms = kept.get(t, ())
            if terms:
                fresh[t] = terms
        if fresh != kept:
            st.volume_terms = fresh
            st.touch()
        for doc, reason in list(self.held.values()):
            if reason != NOT_UNSCHEDULABLE_YET:
                self._pod("MODIFIED", doc)

    def _gone(self, pod: Pod, now: float) -> None:
        self._state.pod_event(pod, now)
        pod.deleted_at_s = now
        self._running.discard(pod.uid)
        for listener in self.on_pod_gone:
            listener(pod)

    # -- nodes ----------------------------------------------------------------------------

    def claim_by_provider(self, provider_id: str | None) -> NodeClaim | None:
        """The live NodeClaim whose instance has ``provider_id``."""
        if not provider_id:
            return None
        for claim in self._state.nodeclaims.values():
            if (
                claim.deleted_at_s is None
                and claim.instance is not None
                and claim.instance.provider_id == provider_id
            ):
                return claim
        return None

    def _static_node(self, name: str, doc: dict[str, Any]) -> Node:
        """A Node no NodePool manages (managed node group, self-managed, Fargate): static
        capacity the provisioner counts, as Karpenter's cluster state counts every Node;
        nothing here launches, drains or deletes it."""
        try:
            (read,) = load_documents([doc], self.source).nodes
        except (InputError, ValueError) as exc:
            log.warning("node %s not read: %s; it is not capacity here", name, exc)
            read = None
        node = Node(
            name=name,
            nodeclaim=None,
            labels=dict(read.labels) if read is not None else {},
            taints=_static_taints(doc),
            capacity=dict(read.capacity) if read is not None else {},
            allocatable=dict(read.allocatable) if read is not None else {},
            created_at_s=self._clock.now(),
            ready=read is not None and node_ready(doc),
        )
        self._state.nodes[name] = node
        self._state.touch()
        return node

    def _node(self, event: str, doc: dict[str, Any]) -> None:
        """Follow one Node event: a deleted Node ends its claim and pods; a new one is
        registered to its NodeClaim (or read as static capacity); then its taints,
        conditions and readiness follow the API."""
        meta = doc.get("metadata") or {}
        name = str(meta.get("name"))
        now = self._clock.now()
        node = self._state.nodes.get(name)
        if event == "DELETED":
            if node is not None and node.deleted_at_s is None:
                self._node_deleted(node, name, now)
            return
        if name in self.unclaimed_nodes:
            return  # draining (module docstring): only its deletion is followed
        if node is None or node.deleted_at_s is not None:
            node = self._node_appeared(name, doc)
            if node is None:
                return
        claim = self._state.claim_of(node)
        if claim is None:
            if node.nodeclaim is None:  # static capacity: follow the API
                self._follow_static_node(node, doc)
            return
        self._follow_managed_node(node, claim, doc, now)

    def _node_deleted(self, node: Node, name: str, now: float) -> None:
        """A Node object is gone: its NodeClaim and its pods end with it (``on_node_gone``)."""
        st = self._state
        node.deleted_at_s = now
        claim = st.claim_of(node)
        if claim is not None and claim.deleted_at_s is None:
            claim.deleted_at_s = now
        for pod in st.pods_on(name):
            self._gone(pod, now)
        st.touch()
        for gone in self.on_node_gone:
            gone(node)

    def _node_appeared(self, name: str, doc: dict[str, Any]) -> Node | None:
        """A Node not (or no longer) in the state: registered to the live NodeClaim of its
        provider id (``on_registered``), static capacity when no NodePool labels it, or
        None when its claim already has a Node or it is a NodePool's node with no claim."""
        meta = doc.get("metadata") or {}
        claim = self.claim_by_provider((doc.get("spec") or {}).get("providerID"))
        if claim is None and not (meta.get("labels") or {}).get(labels.NODEPOOL):
            return self._static_node(name, doc)
        if claim is None or claim.node_name is not None:
            return None
        node = self._lifecycle.register(claim, name)
        self._state.touch()
        for registered in self.on_registered:
            registered(claim)
        return node

    def _follow_static_node(self, node: Node, doc: dict[str, Any]) -> None:
        """A static Node's taints, deletion and readiness, as the API gives them."""
        node.taints = _static_taints(doc)
        node.deleting = bool((doc.get("metadata") or {}).get("deletionTimestamp"))
        if node.ready != node_ready(doc):
            node.ready = node_ready(doc)
            self._state.touch()

    def _follow_managed_node(
        self, node: Node, claim: NodeClaim, doc: dict[str, Any], now: float
    ) -> None:
        """A NodeClaim's Node: the API's taints (keeping Joiner's own), a deletion by
        someone else (``on_claim_deleted``), condition changes (``on_conditions``) and
        readiness (initialization, ``on_ready``)."""
        meta = doc.get("metadata") or {}
        node.taints = _lifecycle_taints(
            doc,
            (
                *(t for t in api_taints(doc) if t.key not in MANAGED_TAINTS),
                *(t for t in node.taints if t.key == labels.TAINT_DISRUPTED),
            ),
        )
        if meta.get("deletionTimestamp") and claim.deleted_at_s is None and not node.draining:
            # Someone deleted the Node: drain it and terminate its NodeClaim (the finalizer
            # holds the Node until then). At start, once the pods are replayed.
            if not self._replaying:
                for deleted in self.on_claim_deleted:
                    deleted(claim)
            elif claim.name not in self.deleting_claims:
                self.deleting_claims.append(claim.name)
            node.deleting = True
        conditions = node_conditions(doc, now, self._wall_now())
        if {k: c.status for k, c in conditions.items()} != {
            k: c.status for k, c in node.conditions.items()
        }:
            node.conditions = conditions
            for changed in self.on_conditions:
                changed(node)
        ready = node_ready(doc)
        starting = any(labels.known_ephemeral_taint(t.key, t.effect) for t in api_taints(doc))
        if ready and claim.initialized_at_s is None and not starting:
            # Karpenter's initialization: Ready, and the known ephemeral taints gone (the
            # node lifecycle controller's ``not-ready``, which stays while it cannot reach
            # the API server): until then pods are placed on it as on a starting node.
            self._lifecycle.initialize(claim)
            self._state.touch()
            for ready_listener in self.on_ready:
                ready_listener(claim)
        elif claim.initialized_at_s is not None and node.ready != ready:
            node.ready = ready
            self._state.touch()


def _uid(doc: dict[str, Any]) -> object:
    """``metadata.uid``: a Pod deleted and created again under its name has a new one."""
    return (doc.get("metadata") or {}).get("uid")


def _static_taints(doc: dict[str, Any]) -> tuple[Taint, ...]:
    """A static node's taints as kube-scheduler sees them (``_lifecycle_taints``)."""
    return _lifecycle_taints(doc, api_taints(doc))


def _lifecycle_taints(doc: dict[str, Any], taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
    """``taints`` with the ``NoSchedule`` taints the node lifecycle controller keeps for the
    Node document's conditions (NotReady, unreachable, pressure) and a cordon
    (``spec.unschedulable``), where the API has not shown them yet
    (``objects.lifecycle_taints``)."""
    conditions = [
        (str(c.get("type")), str(c.get("status")))
        for c in (doc.get("status") or {}).get("conditions") or []
    ]
    unschedulable = bool((doc.get("spec") or {}).get("unschedulable"))
    return lifecycle_taints(taints, conditions, unschedulable=unschedulable)


#: NodeClaim annotation: hash of the NodePool template fields it was launched from (drift
#: after a restart; Karpenter keeps ``karpenter.sh/nodepool-hash`` for the same purpose).
HASH_ANNOTATION = "joiner.dev/nodepool-hash"


def pool_hash(fields: dict[str, object]) -> str:
    """A stable hash of ``NodePool.drift_fields()`` (sha256 of their repr, 16 hex digits)."""
    import hashlib

    return hashlib.sha256(repr(sorted(fields.items())).encode()).hexdigest()[:16]


__all__ = ["ClusterFeed"]
