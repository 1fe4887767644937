"""The actuator: controller decisions (changes to ``ClusterState``) become API writes.

Controllers change the state (a NodeClaim created and launched, a node cordoned, a node and
its NodeClaim deleted); ``KubeActuator.sync`` runs after every controller turn and makes
the API match, keyed on what it already wrote, so each write happens once:

* a launched NodeClaim: the ``karpenter.sh/v1`` NodeClaim object, then its status
  (providerID, nodeName, capacity, allocatable, Launched/Registered/Initialized); with
  simulated capacity also its Node, as Karpenter's kwok provider makes it (reference
  kube-test-stack.md §8): annotation ``kwok.x-k8s.io/node: fake`` (kwok then makes it
  Ready), ``spec.providerID`` (the simulated instance's ``aws:///zone/i-...``), the
  well-known labels, the taint ``karpenter.sh/unregistered:NoExecute`` and
  capacity/allocatable. Registration (``feed``) removes the taint;
* Joiner's taints (``karpenter.sh/disrupted:NoSchedule``) added or removed, and the
  ``karpenter.sh/registered``/``initialized`` labels, patched on the Node;
* a deleted NodeClaim: its Node and the NodeClaim object deleted, each then released
  from the ``karpenter.sh/termination`` finalizer Joiner puts on both (on the NodeClaim
  at creation, on the Node at creation or registration). The finalizer is what makes
  someone else's ``kubectl delete`` of either a drain, and not a loss: the object waits,
  with its ``deletionTimestamp``, until the drain and the instance's termination are done,
  even across a controller restart;
* a NodePool's Node whose NodeClaim was gone at start (``feed.unclaimed_nodes``): deleted
  at start if nobody has yet, cordoned while it drains, and released from the finalizer
  once the drain has ended and the API shows no pod left on it.

``evict`` is the Terminator's Eviction port: a ``policy/v1`` Eviction; 429 (a PDB the API
server computes disallows it) is a refusal the drain retries, never forced.
``cluster/kube/timeline.py`` turns timeline records into Kubernetes Events.

In dry-run (shadow mode) nothing is written: every write is logged and handed to
``report`` as a dict (``{"action": "launch" | "delete" | "cordon" | "uncordon" |
"evict" | "event", ...}``) instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from joiner.api import labels, quantity
from joiner.api.logkeys import log_keys
from joiner.api.objects import Taint
from joiner.api.requirements import Requirements
from joiner.cloudprovider.overlay import overlay_annotations
from joiner.cluster.kube.client import NODE, NODECLAIM, PDB, POD, NodeClaimResource
from joiner.cluster.kube.feed import (
    HASH_ANNOTATION,
    KWOK_ANNOTATION,
    MANAGED_TAINTS,
    ClusterFeed,
    api_taints,
    pool_hash,
)
from joiner.cluster.kube.metrics import PROVISIONED, Metrics
from joiner.cluster.kube.timeline import Report, now_rfc3339
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.termination.controller import DISRUPTED_TAINT
from joiner.controllers.termination.pdb import selects
from joiner.state.cluster import ClusterState, NodeClaim
from joiner.state.cluster import Node as StateNode
from joiner.state.cluster import Pod as StatePod

log = logging.getLogger(__name__)


def quantities(res: Mapping[str, int]) -> dict[str, str]:
    """Resources (millicores for cpu, bytes, counts) as Kubernetes quantity strings."""
    return {k: (f"{v}m" if k == quantity.CPU else str(v)) for k, v in sorted(res.items()) if v >= 0}


def requirement_terms(reqs: Requirements) -> list[dict[str, Any]]:
    """Requirements as NodeSelectorRequirements (``{key, operator, values}``), by key; a
    range (``Gt`` and ``Lt`` together) becomes two terms."""
    out: list[dict[str, Any]] = []
    for key in sorted(reqs):
        r = reqs[key]
        term: dict[str, Any]
        if r.complement and not r.values and (r.greater_than is not None or r.less_than):
            if r.greater_than is not None:
                out.append({"key": key, "operator": "Gt", "values": [str(r.greater_than)]})
            if r.less_than is not None:
                out.append({"key": key, "operator": "Lt", "values": [str(r.less_than)]})
            continue
        term = {"key": key, "operator": r.operator, "values": sorted(r.values)}
        if r.min_values is not None:
            term["minValues"] = r.min_values
        out.append(term)
    return out


class KubeActuator:
    """Makes the API match the state's NodeClaims and Nodes (module docstring)."""

    def __init__(
        self,
        client: Client | None,
        state: ClusterState,
        feed: ClusterFeed,
        lifecycle: Lifecycle,
        metrics: Metrics,
        *,
        create_nodes: bool,
        dry_run: bool,
        report: Report | None = None,
    ) -> None:
        if client is None and not dry_run:
            raise ValueError("KubeActuator needs a client unless dry_run")
        self._client = client
        self._state = state
        self._feed = feed
        self._lifecycle = lifecycle
        self._metrics = metrics
        self.create_nodes = create_nodes
        self.dry_run = dry_run
        self._report = report
        self._claims_written: set[str] = set()
        self._nodes_written: set[str] = set()
        self._deleted: set[str] = set()
        self._status: dict[str, tuple[object, ...]] = {}
        self._reported_taints: dict[str, frozenset[str]] = {}
        #: Nodes Joiner added its finalizer to (once each; the cache catches up later).
        self._finalized: set[str] = set()
        #: Unclaimed Nodes released from the finalizer (``feed.unclaimed_nodes``).
        self._released: set[str] = set()
        #: Called with (namespace, pod name, node name) when an Eviction is accepted
        #: (``evicted_listeners``) or refused with 429, a PodDisruptionBudget
        #: (``refused_listeners``); in dry-run, as the API server would answer.
        self.evicted_listeners: list[Callable[[str, str, str | None], None]] = []
        self.refused_listeners: list[Callable[[str, str, str | None], None]] = []

    # -- helpers --------------------------------------------------------------------------

    def _dry(self, action: str, **fields: Any) -> None:
        entry = {"action": action, **fields}
        log.info("dry-run: would %s %s", action, fields)
        self._metrics.dry_run_actions.labels(action=action).inc()
        if self._report is not None:
            self._report(entry)

    def _api(self) -> Any:
        """The client, typed loosely: lightkube's overloads do not cover generic resources."""
        assert self._client is not None
        return self._client

    def _failed(self, where: str, what: str, exc: ApiError) -> None:
        self._metrics.reconcile_errors.labels(where=where).inc()
        log.warning("%s failed for %s: %s %s", where, what, exc.status.code, exc.status.message)

    # -- start ----------------------------------------------------------------------------

    def adopt(self) -> None:
        """After ``feed.start``: what already exists is written; orphans are deleted (a
        NodeClaim never launched, a Joiner-made Node no NodeClaim owns) and so are the
        unclaimed Nodes not yet deleting (their finalizer holds them for the drain)."""
        for claim in self._state.nodeclaims.values():
            self._claims_written.add(claim.name)
            if claim.name in self._feed.of(NODE):
                self._nodes_written.add(claim.name)
        for name in self._feed.orphan_claims:
            if self.dry_run:
                self._dry("delete", nodeclaim=name, reason="orphan")
                continue
            self._delete(NodeClaimResource, name, "orphan NodeClaim")
        for name in self._feed.orphan_nodes:
            if self.dry_run:
                self._dry("delete", node=name, reason="orphan")
                continue
            self._delete(Node, name, "orphan Node")
        for name in self._feed.unclaimed_nodes:
            if (self._feed.of(NODE).get(name, {}).get("metadata") or {}).get("deletionTimestamp"):
                continue
            if self.dry_run:
                self._dry("delete", node=name, reason="NodeClaim gone")
                continue
            try:
                self._api().delete(Node, name)
            except ApiError as exc:
                if exc.status.code != 404:
                    self._failed("delete unclaimed Node", name, exc)

    # -- the diff -------------------------------------------------------------------------

    def sync(self) -> None:
        """Write what the state holds and the API does not yet (module docstring)."""
        for name in sorted(self._state.nodeclaims):
            claim = self._state.nodeclaims[name]
            if claim.deleted_at_s is not None:
                if name not in self._deleted:
                    self._delete_claim(claim)
                continue
            if claim.instance is None:
                continue
            if name not in self._claims_written:
                self._create_claim(claim)
            if self.create_nodes and name not in self._nodes_written:
                self._create_node(claim)
            if not self.dry_run and name in self._feed.of(NODECLAIM):
                self._claim_status(claim)
        for node_name in sorted(self._state.nodes):
            node = self._state.nodes[node_name]
            if node.deleted_at_s is None and node.nodeclaim is not None:
                self._sync_node(node)
        for node_name in self._feed.unclaimed_nodes:
            node = self._state.nodes[node_name]
            if node.deleted_at_s is None:
                self._sync_node(node)
            elif node_name not in self._released:
                self._release_unclaimed(node_name)

    def _release_unclaimed(self, node_name: str) -> None:
        """An unclaimed Node's drain ended: its finalizer comes off, unless the API still
        shows pods on it (bound after the drain's last look), which are evicted first."""
        if self.dry_run:
            self._dry("delete", node=node_name, reason="drained")
            self._released.add(node_name)
            return
        if self._evict_left_over(node_name):
            return
        if self._delete(Node, node_name, "Node"):
            self._released.add(node_name)
            # Karpenter counts the Node terminated when its finalizer comes off
            # (``node/termination`` ``removeFinalizer``), NodeClaim or not.
            node_labels = self._state.nodes[node_name].labels
            self._metrics.nodes_terminated.labels(
                nodepool=node_labels.get(labels.NODEPOOL, ""),
                zone=node_labels.get(labels.ZONE, ""),
            ).inc()

    def _evict_left_over(self, node_name: str) -> bool:
        """Evict the pods the API still shows on a drained Node (True when there were any;
        its deletion waits for the next sync).

        The state lags the API: a pod bound after the drain's last look (before the taint
        reached the scheduler) is evicted first. The node is tainted first, or the
        scheduler binds the evicted pods' replacements right back to it (a node whose
        instance is gone is still Ready until its heartbeat grace passes; no drain tainted
        it)."""
        still = self._pods_bound_to(node_name)
        if not still:
            return False
        self._taint_disrupted(node_name)
        log.info("node %s still runs %s; evicting them before it goes", node_name, still)
        for ns, name in still:
            self._post_eviction(ns, name, node_name=node_name)
        return True

    def _claim_doc(self, claim: NodeClaim) -> dict[str, Any]:
        assert claim.instance is not None
        pool = self._state.nodepools.get(claim.nodepool)
        node_labels = self._lifecycle.labels_for(claim) if pool is not None else {}
        node_labels[labels.NODEPOOL] = claim.nodepool
        annotations = overlay_annotations(claim.instance_type_options, claim.requirements)
        if claim.launched_from is not None:
            annotations[HASH_ANNOTATION] = pool_hash(claim.launched_from)
        ref = pool.node_class_ref if pool is not None else None
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "name": claim.name,
                "labels": node_labels,
                "annotations": annotations,
                "finalizers": [labels.TERMINATION_FINALIZER],
            },
            "spec": {
                "requirements": requirement_terms(claim.requirements),
                "resources": {"requests": quantities(claim.requests)},
                "taints": [
                    {"key": t.key, "value": t.value, "effect": t.effect}
                    for t in (pool.taints if pool else ())
                ],
                "nodeClassRef": {
                    "group": ref.group if ref else "karpenter.k8s.aws",
                    "kind": ref.kind if ref else "EC2NodeClass",
                    "name": claim.node_class,
                },
            },
        }

    def _create_claim(self, claim: NodeClaim) -> None:
        assert claim.instance is not None
        inst = claim.instance
        if self.dry_run:
            self._dry(
                "launch",
                nodeclaim=claim.name,
                nodepool=claim.nodepool,
                instanceType=inst.instance_type.name,
                zone=inst.offering.zone,
                capacityType=inst.offering.capacity_type,
                pods=sorted(
                    f"{p.namespace}/{p.name}"
                    for uid in claim.nominated
                    if (p := self._state.pods.get(uid)) is not None
                ),
            )
            self._claims_written.add(claim.name)
            self._nodes_written.add(claim.name)
            return
        try:
            self._api().create(NodeClaimResource.from_dict(self._claim_doc(claim)))
        except ApiError as exc:
            if exc.status.code != 409:
                self._failed("create NodeClaim", claim.name, exc)
                return
        self._claims_written.add(claim.name)
        self._metrics.nodeclaims_created.labels(
            reason=self._created_reason(claim), nodepool=claim.nodepool, min_values_relaxed="false"
        ).inc()

    def _created_reason(self, claim: NodeClaim) -> str:
        """Karpenter's ``reason`` for a created NodeClaim: ``provisioned``, or for a
        replacement the lower-cased disruption reason of the node it replaces
        (``provisioner.CreateNodeClaims`` with ``WithReason``)."""
        for name in claim.replaces:
            node = self._state.nodes.get(name)
            old = self._state.claim_of(node) if node is not None else None
            if old is not None and old.disruption_reason:
                return old.disruption_reason.lower()
        return PROVISIONED

    def _create_node(self, claim: NodeClaim) -> None:
        assert claim.instance is not None
        it = claim.instance.instance_type
        pool = self._state.nodepools.get(claim.nodepool)
        node_labels = self._lifecycle.labels_for(claim) if pool is not None else {}
        node_labels[labels.HOSTNAME] = claim.name
        node_labels[labels.NODEPOOL] = claim.nodepool
        node_labels.setdefault("kubernetes.io/os", "linux")
        taints = [
            {"key": labels.TAINT_UNREGISTERED, "effect": "NoExecute"},
            *(
                {"key": t.key, "value": t.value, "effect": t.effect}
                for t in (*(pool.taints if pool else ()), *(pool.startup_taints if pool else ()))
            ),
        ]
        doc = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": claim.name,
                "labels": node_labels,
                "annotations": {KWOK_ANNOTATION: "fake"},
                "finalizers": [labels.TERMINATION_FINALIZER],
            },
            "spec": {"providerID": claim.instance.provider_id, "taints": taints},
            "status": {
                "capacity": quantities(it.capacity),
                "allocatable": quantities(it.allocatable),
                "phase": "Pending",
            },
        }
        try:
            self._api().create(Node.from_dict(doc))
        except ApiError as exc:
            if exc.status.code != 409:
                self._failed("create Node", claim.name, exc)
                return
        self._nodes_written.add(claim.name)
        self._metrics.nodes_created.labels(
            nodepool=claim.nodepool, zone=claim.instance.offering.zone
        ).inc()

    def _claim_status(self, claim: NodeClaim) -> None:
        assert claim.instance is not None
        key = (
            claim.instance.provider_id,
            claim.node_name,
            claim.registered_at_s is not None,
            claim.initialized_at_s is not None,
        )
        if self._status.get(claim.name) == key:
            return
        now = now_rfc3339()

        def cond(kind: str, ok: bool) -> dict[str, str]:
            return {
                "type": kind,
                "status": "True" if ok else "Unknown",
                "reason": kind if ok else "Pending",
                "lastTransitionTime": now,
            }

        it = claim.instance.instance_type
        status = {
            "providerID": claim.instance.provider_id,
            "nodeName": claim.node_name,
            "capacity": quantities(it.capacity),
            "allocatable": quantities(it.allocatable),
            "conditions": [
                cond("Launched", True),
                cond("Registered", claim.registered_at_s is not None),
                cond("Initialized", claim.initialized_at_s is not None),
                cond("Ready", claim.initialized_at_s is not None),
            ],
        }
        try:
            self._api().patch(
                NodeClaimResource.Status,
                claim.name,
                {"status": status},
                patch_type=PatchType.MERGE,
            )
        except ApiError as exc:
            self._failed("patch NodeClaim status", claim.name, exc)
            return
        self._status[claim.name] = key

    def _delete(self, res: Any, name: str, what: str) -> bool:
        """Delete ``name`` and release it from Joiner's finalizer; True when it is gone or
        going (404 counts as done)."""
        kind = NODE if res is Node else NODECLAIM
        doc = self._feed.of(kind).get(name)
        if doc is None or not (doc.get("metadata") or {}).get("deletionTimestamp"):
            try:
                self._api().delete(res, name)
            except ApiError as exc:
                if exc.status.code != 404:
                    self._failed(f"delete {what}", name, exc)
                    return False
                return True
        return self._release(res, name, what, doc)

    def _release(self, res: Any, name: str, what: str, doc: dict[str, Any] | None) -> bool:
        """Remove ``karpenter.sh/termination`` from the object's finalizers (others stay)."""
        finalizers = list(((doc or {}).get("metadata") or {}).get("finalizers") or [])
        if doc is not None and labels.TERMINATION_FINALIZER not in finalizers:
            return True
        rest = [f for f in finalizers if f != labels.TERMINATION_FINALIZER]
        try:
            self._api().patch(
                res, name, {"metadata": {"finalizers": rest or None}}, patch_type=PatchType.MERGE
            )
        except ApiError as exc:
            if exc.status.code != 404:
                self._failed(f"release {what}", name, exc)
                return False
        return True

    def _delete_claim(self, claim: NodeClaim) -> None:
        if claim.name not in self._claims_written and claim.name not in self._feed.of(NODECLAIM):
            self._deleted.add(claim.name)  # never written (a failed launch)
            return
        if self.dry_run:
            self._dry("delete", nodeclaim=claim.name, node=claim.node_name)
            self._deleted.add(claim.name)
            return
        node_name = claim.node_name or (claim.name if claim.name in self._nodes_written else None)
        if node_name is not None:
            if self._evict_left_over(node_name):
                return
            if not self._delete(Node, node_name, "Node"):
                return
        if not self._delete(NodeClaimResource, claim.name, "NodeClaim"):
            return
        self._deleted.add(claim.name)
        offering = claim.instance.offering if claim.instance is not None else None
        zone = offering.zone if offering is not None else ""
        self._metrics.nodeclaims_terminated.labels(
            nodepool=claim.nodepool,
            capacity_type=offering.capacity_type if offering is not None else "",
            zone=zone,
        ).inc()
        if node_name is not None:
            self._metrics.nodes_terminated.labels(nodepool=claim.nodepool, zone=zone).inc()

    def _taint_disrupted(self, node_name: str) -> None:
        """Add ``karpenter.sh/disrupted:NoSchedule`` to the Node (other taints kept) unless
        it has it: Karpenter's terminator taints a node before it evicts its pods
        (``node/termination/terminator`` Taint)."""
        doc = self._feed.of(NODE).get(node_name)
        if doc is None:
            return
        current = api_taints(doc)
        if any(t.key == DISRUPTED_TAINT.key for t in current):
            return
        self._patch_taints(node_name, (*current, DISRUPTED_TAINT))

    def _patch_taints(self, node_name: str, taints: tuple[Taint, ...]) -> None:
        patch = {
            "spec": {
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]
                or None
            }
        }
        try:
            self._api().patch(Node, node_name, patch, patch_type=PatchType.MERGE)
        except ApiError as exc:
            self._failed("patch Node taints", node_name, exc)

    def _sync_node(self, node: StateNode) -> None:
        doc = self._feed.of(NODE).get(node.name)
        if doc is None:
            return
        current = api_taints(doc)
        wanted = tuple(t for t in node.taints if t.key in MANAGED_TAINTS)
        desired = (*(t for t in current if t.key not in MANAGED_TAINTS), *wanted)
        disrupted = frozenset(t.key for t in wanted)
        if self.dry_run:
            before = self._reported_taints.get(node.name, frozenset())
            if before != disrupted:
                self._dry("cordon" if disrupted else "uncordon", node=node.name)
                self._reported_taints[node.name] = disrupted
            return
        if set(desired) != set(current):
            self._patch_taints(node.name, desired)
        meta = doc.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if (
            labels.TERMINATION_FINALIZER not in finalizers
            and not meta.get("deletionTimestamp")
            and node.name not in self._finalized
        ):
            self._finalized.add(node.name)
            try:
                self._api().patch(
                    Node,
                    node.name,
                    {"metadata": {"finalizers": [*finalizers, labels.TERMINATION_FINALIZER]}},
                    patch_type=PatchType.MERGE,
                )
            except ApiError as exc:
                self._failed("patch Node finalizer", node.name, exc)
        meta_labels = meta.get("labels") or {}
        missing = {
            k: v
            for k, v in node.labels.items()
            if k in (labels.REGISTERED, labels.INITIALIZED) and meta_labels.get(k) != v
        }
        if missing:
            try:
                self._api().patch(
                    Node, node.name, {"metadata": {"labels": missing}}, patch_type=PatchType.MERGE
                )
            except ApiError as exc:
                self._failed("patch Node labels", node.name, exc)

    def _pods_bound_to(self, node_name: str) -> list[tuple[str, str]]:
        """(namespace, name) of the workload pods the API has on ``node_name`` (not
        finished, not being deleted, not DaemonSet pods)."""
        out = []
        for doc in self._feed.of(POD).values():
            meta = doc.get("metadata") or {}
            if (doc.get("spec") or {}).get("nodeName") != node_name or meta.get(
                "deletionTimestamp"
            ):
                continue
            if (doc.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            owners = meta.get("ownerReferences") or []
            if any(o.get("kind") == "DaemonSet" for o in owners):
                continue
            out.append((str(meta.get("namespace")), str(meta.get("name"))))
        return sorted(out)

    # -- the Eviction port ----------------------------------------------------------------

    def evict(self, pod: StatePod, forced: bool, grace_s: int | None = None) -> bool:
        """Evict ``pod`` through ``policy/v1`` Eviction (``forced``: delete it, with
        ``grace_s`` as the deletion's ``gracePeriodSeconds``, None: the pod's own, as
        Karpenter's terminator ``DeleteExpiringPods`` does); False when the API server
        refuses (429 from a PodDisruptionBudget, or another error, logged), True when it is
        evicted or already gone (404)."""
        if self.dry_run:
            blocking = None if forced else self._blocking_pdb(pod)
            if blocking is not None:
                # The API server would answer 429: do not assume the eviction happened.
                entry = {"action": "evictBlocked", "pod": f"{pod.namespace}/{pod.name}"}
                entry["pdb"] = blocking
                log.info("dry-run: eviction of %s would be refused: %s", entry["pod"], blocking)
                if self._report is not None:
                    self._report(entry)
                self._tell(self.refused_listeners, pod.namespace, pod.name, pod.node_name)
                return False
            if forced and grace_s is not None:
                self._dry(
                    "evict",
                    pod=f"{pod.namespace}/{pod.name}",
                    forced=forced,
                    gracePeriodSeconds=grace_s,
                )
            else:
                self._dry("evict", pod=f"{pod.namespace}/{pod.name}", forced=forced)
            if not forced:
                self._tell(self.evicted_listeners, pod.namespace, pod.name, pod.node_name)
            return True
        # The node's taint goes out before its first eviction, so the replacement pod the
        # workload's controller makes cannot be scheduled back onto it.
        node = self._state.nodes.get(pod.node_name or "")
        if node is not None and node.deleted_at_s is None:
            self._sync_node(node)
        return self._post_eviction(
            pod.namespace, pod.name, forced=forced, grace_s=grace_s, node_name=pod.node_name
        )

    def _blocking_pdb(self, pod: StatePod) -> str | None:
        """``namespace/name`` of a PodDisruptionBudget selecting ``pod`` whose status (as
        the API server last reported it: ``status.disruptionsAllowed``) allows no
        disruption, or None. A budget the disruption controller has not observed yet
        (no status) blocks too, as the Eviction API refuses then."""
        docs = {
            (str(d["metadata"].get("namespace")), str(d["metadata"].get("name"))): d
            for d in self._feed.of(PDB).values()
        }
        for pdb in self._state.pdbs:
            if not selects(pdb, pod):
                continue
            status = docs.get((pdb.namespace, pdb.name), {}).get("status") or {}
            if int(status.get("disruptionsAllowed") or 0) < 1:
                return f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows no disruption"
        return None

    def _post_eviction(
        self,
        namespace: str,
        name: str,
        *,
        forced: bool = False,
        grace_s: int | None = None,
        node_name: str | None = None,
    ) -> bool:
        try:
            if forced:
                self._api().delete(Pod, name, namespace=namespace, grace_period=grace_s)
            else:
                self._api().create(
                    Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace)),
                    name=name,
                    namespace=namespace,
                )
        except ApiError as exc:
            if not forced:
                self._metrics.eviction_requests.labels(code=str(exc.status.code)).inc()
            if exc.status.code == 404:
                return True
            if exc.status.code == 429:
                log.info(
                    "eviction refused pod=%s/%s: %s",
                    namespace,
                    name,
                    exc.status.message,
                    extra=log_keys(Pod=f"{namespace}/{name}"),
                )
                if not forced:
                    self._tell(self.refused_listeners, namespace, name, node_name)
                return False
            self._failed("evict", f"pod {namespace}/{name}", exc)
            return False
        if not forced:
            self._metrics.eviction_requests.labels(code="200").inc()
            self._metrics.pods_drained.labels(reason=self._eviction_reason(node_name)).inc()
            self._tell(self.evicted_listeners, namespace, name, node_name)
        return True

    @staticmethod
    def _tell(
        listeners: list[Callable[[str, str, str | None], None]],
        namespace: str,
        name: str,
        node_name: str | None,
    ) -> None:
        for listener in listeners:
            listener(namespace, name, node_name)

    def _eviction_reason(self, node_name: str | None) -> str:
        """``karpenter_pods_drained_total``'s ``reason``: the disruption reason of the pod's
        node's NodeClaim, ``Forceful Termination`` without one, ``""`` for a node without a
        NodeClaim (Karpenter ``pkg/controllers/node/termination/terminator/eviction.go``
        ``evictionReason``)."""
        node = self._state.nodes.get(node_name or "")
        claim = self._state.claim_of(node) if node is not None else None
        if claim is None:
            return ""
        return claim.disruption_reason or "Forceful Termination"
