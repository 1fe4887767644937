"""How controller mode's controllers react to the cluster: the event flow of ``joiner run``.

``ControllerReactions`` is the half of ``operator/controller.py``'s ``ControllerRuntime``
that the wiring (``ControllerRuntime._build``) hooks to the feed's, lifecycle's and
controllers' listeners, as ``operator/wiring.py`` does for the simulation:

* pod events trigger the batcher (``_pod_pending``) and wake disruption; a pass runs the
  provisioner (``_provision``, metered as Karpenter's scheduling duration); pods it cannot
  place are retried ``RETRY_UNSCHEDULABLE_S`` later;
* a NodeClaim launched, registered or initialized posts Karpenter's Events; a NodeClaim
  deleted by someone is drained (``_claim_deleted``), as Karpenter's finalizer does, and
  so is a NodePool's Node whose NodeClaim was gone at start (``_unclaimed_node``);
* configuration changes (NodePools, NodeClasses) reach the cloud provider (``_config``),
  and NodeOverlays the provisioner (``_overlays``);
* after every loop turn that changed something, ``_sync`` runs the actuator once, then
  the NodePool and EC2NodeClass status writer (``cluster/kube/configstatus.py``); a
  ``RESYNC_S`` resync retries failed writes and re-triggers provisioning for pods still
  pending;
* an instance read back from the API at start-up is re-adopted by the cloud provider
  (``_adopt_instance``).

Everything here runs on the asyncio loop's thread.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from joiner.api import timeline as tl
from joiner.api.manifests import ManifestSet
from joiner.cloudprovider.kwok import KwokCloudProvider
from joiner.cloudprovider.overlay import Overlays
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import (
    CloudProvider,
    CloudProviderError,
    CreateError,
    Instance,
    NodeClaimNotFoundError,
)
from joiner.cluster.kube.actuator import KubeActuator
from joiner.cluster.kube.configstatus import ConfigStatus
from joiner.cluster.kube.events import KarpenterEvents
from joiner.cluster.kube.feed import ClusterFeed
from joiner.cluster.kube.fence import Fence, LeaseLostError
from joiner.cluster.kube.metrics import Metrics
from joiner.cluster.kube.metrics import controller as metered_as
from joiner.cluster.kube.timeline import KubeTimeline
from joiner.controllers.disruption import DisruptionController
from joiner.controllers.interruption.controller import InterruptionController
from joiner.controllers.provisioning.batcher import Batcher
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.controllers.static import StaticCapacityController
from joiner.controllers.termination.controller import Terminator, cordon, lose
from joiner.operator.kube_metrics import MetricsWiring
from joiner.operator.wallclock import WallClock, _fit_node_classes
from joiner.state.cluster import ClusterState, Node, NodeClaim

log = logging.getLogger(__name__)

#: The resync: failed writes retried, provisioning re-triggered for pods still pending.
RESYNC_S = 5.0
#: Pods the provisioner could not place are retried this often (as the simulation does).
RETRY_UNSCHEDULABLE_S = 30.0


class ControllerReactions:
    """The reactions (module docstring); ``ControllerRuntime`` inherits them and sets the
    attributes below in ``_build``."""

    cloud: CloudProvider
    clock: WallClock
    state: ClusterState
    metrics: Metrics
    feed: ClusterFeed
    actuator: KubeActuator
    config_status: ConfigStatus
    timeline: KubeTimeline
    events: KarpenterEvents
    wiring: MetricsWiring
    batcher: Batcher
    provisioner: Provisioner
    terminator: Terminator
    interruption: InterruptionController
    disruption: DisruptionController
    static: StaticCapacityController | None
    fence: Fence
    _sync_scheduled: bool

    def _adopt_instance(
        self, type_name: str, node_class: str, zone: str, capacity_type: str, provider_id: str
    ) -> Instance:
        cloud = self.cloud
        if isinstance(cloud, SimulatedCloudProvider):
            types = {t.name: t for t in cloud.get_instance_types(node_class)}
            it = types.get(type_name)
            if it is None:
                raise CreateError("NoOffering", f"instance type {type_name!r} is not offered")
            return cloud.adopt(it, zone, capacity_type, provider_id.rsplit("/", 1)[-1])
        return cloud.get(provider_id)

    def _schedule_sync(self) -> None:
        if not self._sync_scheduled:
            self._sync_scheduled = True
            self.clock.loop.call_soon(self._sync)

    def _sync(self) -> None:
        self._sync_scheduled = False
        if not self.feed.started:
            return
        try:
            self.actuator.sync()
            self.config_status.sync()
            self.wiring.refresh(synced=True)
        except LeaseLostError:
            log.debug("actuator sync stopped by the fence")
        except Exception:
            log.exception("actuator sync failed")
            self.metrics.reconcile_errors.labels(where="sync").inc()

    def _resync(self) -> None:
        self._schedule_sync()
        if self.state.pending_pods() and not self.batcher.open:
            self.batcher.trigger()
        self.clock.after(RESYNC_S, self._resync, label="resync")

    def _provision(self) -> None:
        started = time.monotonic()
        with metered_as("provisioner"):
            self.provisioner.reconcile()
        self.metrics.scheduling_duration.labels(controller="provisioner").observe(
            time.monotonic() - started
        )
        self.wiring.provisioned()
        if self.provisioner.overlays is not None:  # no run summary here: the log says it
            for warning in self.provisioner.overlays.unreported_warnings():
                log.warning("%s", warning)

    def _retry_later(self, _uids: Any) -> None:
        self.clock.after(
            RETRY_UNSCHEDULABLE_S,
            lambda: self.batcher.trigger() if self.state.pending_pods() else None,
            label="retry-unschedulable",
        )

    def _config(self, ms: ManifestSet) -> None:
        if isinstance(self.cloud, KwokCloudProvider):
            if {n.name: n for n in ms.nodeclasses} != self.cloud.node_classes:
                self.cloud.set_node_classes(list(ms.nodeclasses))
        elif isinstance(self.cloud, SimulatedCloudProvider):
            fitted = _fit_node_classes(self.cloud, list(ms.nodeclasses))
            if {n.name: n for n in fitted} != self.cloud.node_classes:
                self.cloud.set_node_classes(fitted)
        elif {n.name: n for n in ms.nodeclasses} != self.cloud.node_classes:  # type: ignore[attr-defined]
            if set(self.cloud.node_classes) - {n.name for n in ms.nodeclasses}:  # type: ignore[attr-defined]
                # A NodeClass is gone: its launch templates are deleted (a cloud write).
                self.fence.check("delete the launch templates of a deleted EC2NodeClass")
            self.cloud.set_node_classes(list(ms.nodeclasses))  # type: ignore[attr-defined]
        self._overlays(ms)
        for w in ms.warnings:
            log.info("%s", w)
        if self.feed.started:
            self.batcher.trigger()
            self.disruption.kick()
            if self.static is not None:  # Karpenter's static controllers: replicas changed
                self.static.kick()

    def _overlays(self, ms: ManifestSet) -> None:
        """The NodeOverlays the API holds reach the provisioner (watched only with the
        ``NodeOverlay`` gate on); they are evaluated again on the next pass, as Karpenter's
        nodeoverlay controller re-evaluates on an overlay, NodePool or NodeClass change
        (``pkg/controllers/nodeoverlay/controller.go`` ``Reconcile``)."""
        self.provisioner.overlays = Overlays(ms.nodeoverlays) if ms.nodeoverlays else None

    def _changed(self) -> None:
        self.state.touch()
        self.disruption.kick()

    def _pod_pending(self) -> None:
        self.state.touch()
        self.batcher.trigger()

    def _node_ready(self, claim: NodeClaim) -> None:
        self.events.condition(claim, "Initialized")
        self._changed()
        for node in claim.replaces:
            self.timeline.record(tl.REPLACEMENT_READY, node=node, detail=claim.name)
        self.interruption.node_ready()

    def _claim_deleted(self, claim: NodeClaim) -> None:
        """Someone deleted a live NodeClaim: drain and terminate its node (Karpenter's
        finalizer does the same), or drop the instance if it never registered."""
        node = self.state.node_of_claim(claim)
        if node is not None and node.draining:
            return  # already draining (another event about the same deletion)
        self.timeline.record("nodeClaimDeleted", node=node.name if node else claim.name)
        if node is None:
            self.terminator.delete_unregistered(claim, "NodeClaim deleted")
        elif not node.draining:
            node.deleting = True
            cordon(node)
            self.terminator.drain(node, "NodeClaim deleted")
        self.batcher.trigger()

    def _unclaimed_node(self, node: Node, provider_id: str) -> None:
        """A NodePool's Node whose NodeClaim was gone at start (``feed.unclaimed_nodes``):
        drained within its pods' PodDisruptionBudgets, after which the actuator releases
        it. As Karpenter's node termination ``finalize`` with no NodeClaim (karpenter
        ``pkg/controllers/node/termination/controller.go``), a Node not Ready whose
        instance the cloud no longer has (``NodeClaimNotFoundError``) is let go at once:
        nothing runs there to drain, its pods are lost and replaced."""
        self.timeline.record("nodeClaimGone", node=node.name)
        if not node.ready:
            try:
                self.cloud.get(provider_id)
            except NodeClaimNotFoundError:
                log.info("node %s: not Ready and its instance is gone; releasing it", node.name)
                self._let_go(node)
                return
            except CloudProviderError as exc:
                log.warning(
                    "node %s: its instance %s: %s; draining it", node.name, provider_id, exc
                )
        node.deleting = True
        self.terminator.drain(node, "NodeClaim gone")
        self.batcher.trigger()

    def _let_go(self, node: Node) -> None:
        """``node`` ends with its pods lost (their replacements are provisioned)."""
        lose(self.state, node, self.clock.now())
        self.state.touch()
        self.batcher.trigger()

    def _node_gone(self) -> None:
        self._changed()
        self.batcher.trigger()

    def _launched(self, claim: NodeClaim) -> None:
        self.events.condition(claim, "Launched")
        for node in claim.replaces:
            self.timeline.record(tl.REPLACEMENT_LAUNCHED, node=node, detail=claim.name)

    def _running(self, _pod: Any, doc: dict[str, Any]) -> None:
        created = (doc.get("metadata") or {}).get("creationTimestamp")
        if created:
            started = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
            self.metrics.pod_startup.observe(
                max(0.0, (datetime.now(UTC) - started).total_seconds())
            )
