"""NodeClaim lifecycle: launch, registration, initialization (Karpenter ``nodeclaim/lifecycle``).

Transitions, each idempotent and keyed on the NodeClaim's timestamps:

* **launch**: ``CloudProvider.create``; on success the NodeClaim records the instance, its
  resolved type, zone and capacity type. On ``InsufficientCapacityError`` or
  ``NodeClassNotReadyError`` the NodeClaim is deleted so its pods are provisioned again.
* **registration**: the node appeared (kubelet joined): sync labels and taints from the
  NodeClaim, drop ``karpenter.sh/unregistered``, label ``karpenter.sh/registered``.
* **initialization**: the node is Ready and its startup taints are gone: label
  ``karpenter.sh/initialized``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api import labels
from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.cloudprovider.overlay import PRICE_OVERLAY_APPLIED, overlay_annotations
from joiner.cloudprovider.types import (
    ON_DEMAND_ALLOCATION_STRATEGIES,
    SPOT_ALLOCATION_STRATEGIES,
    CloudProvider,
    CloudProviderError,
    LaunchRequest,
)
from joiner.state.cluster import ClusterState, Node, NodeClaim, node_labels_for

log = logging.getLogger(__name__)

LaunchListener = Callable[[NodeClaim], None]


class Lifecycle:
    """Drives NodeClaims through their phases; ``listeners`` hear of each launch."""

    def __init__(
        self, state: ClusterState, cloud: CloudProvider, clock: Clock, region: str
    ) -> None:
        self._state = state
        self._cloud = cloud
        self._clock = clock
        self.region = region
        self.launch_listeners: list[LaunchListener] = []
        self.deleted_listeners: list[LaunchListener] = []
        #: Called with the NodeClaim and the CloudProvider's typed error when a launch
        #: fails (after ``deleted_listeners``).
        self.failed_listeners: list[Callable[[NodeClaim, CloudProviderError], None]] = []

    def labels_for(self, claim: NodeClaim) -> dict[str, str]:
        """Labels the NodeClaim's node will carry (its instance must be resolved)."""
        return node_labels_for(claim, self._state.nodepools[claim.nodepool], self.region)

    def launch(
        self,
        claim: NodeClaim,
        *,
        spot_allocation_strategy: str = SPOT_ALLOCATION_STRATEGIES[0],
        on_demand_allocation_strategy: str = ON_DEMAND_ALLOCATION_STRATEGIES[0],
    ) -> None:
        """Create the instance. Raises the CloudProvider's typed error after deleting the claim.

        The allocation strategies are the fleet request's: Karpenter's (price-capacity-
        optimized, lowest-price) by default; an ASG passes its MixedInstancesPolicy's.
        """
        if claim.instance is not None:
            return
        pool = self._state.nodepools[claim.nodepool]
        # Karpenter-AWS (pkg/providers/instance/types.go CreateFleetInputBuilder.WithOverlay):
        # a NodeClaim with the price-overlay annotation asks for the prioritized strategies,
        # each override's priority being its overlaid price.
        by_price = PRICE_OVERLAY_APPLIED in overlay_annotations(
            claim.instance_type_options, claim.requirements
        )
        if by_price:
            spot_allocation_strategy = "capacity-optimized-prioritized"
            on_demand_allocation_strategy = "prioritized"
        request = LaunchRequest(
            nodeclaim_name=claim.name,
            nodepool=pool.name,
            node_class=claim.node_class,
            requirements=claim.requirements,
            instance_types=claim.instance_type_options,
            tags=(("karpenter.sh/nodeclaim", claim.name), ("karpenter.sh/nodepool", pool.name)),
            spot_allocation_strategy=spot_allocation_strategy,
            on_demand_allocation_strategy=on_demand_allocation_strategy,
            priority_by_price=by_price,
        )
        try:
            instance = self._cloud.create(request)
        except CloudProviderError as exc:
            claim.deleted_at_s = self._clock.now()
            for listener in self.deleted_listeners:
                listener(claim)
            for failed in self.failed_listeners:
                failed(claim, exc)
            raise
        claim.instance = instance
        claim.launched_at_s = self._clock.now()
        log.info(
            "launched nodeclaim=%s instance-type=%s zone=%s capacity-type=%s",
            claim.name,
            instance.instance_type.name,
            instance.offering.zone,
            instance.offering.capacity_type,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool),
        )
        for listener in self.launch_listeners:
            listener(claim)

    def register(self, claim: NodeClaim, node_name: str) -> Node:
        """The kubelet joined: create/sync the Node and mark the NodeClaim registered."""
        pool = self._state.nodepools[claim.nodepool]
        node_labels = self.labels_for(claim)
        node_labels[labels.HOSTNAME] = node_name
        node_labels[labels.REGISTERED] = "true"
        assert claim.instance is not None
        it = claim.instance.instance_type
        node = Node(
            name=node_name,
            nodeclaim=claim.name,
            labels=node_labels,
            taints=(*pool.taints, *pool.startup_taints),
            capacity=dict(it.capacity),
            allocatable=dict(it.allocatable),
            created_at_s=self._clock.now(),
            # The template's annotations go on the node (as Karpenter's and an ASG's do).
            scale_down_disabled=dict(pool.annotations).get(labels.CA_SCALE_DOWN_DISABLED) == "true",
        )
        self._state.nodes[node_name] = node
        claim.node_name = node_name
        claim.registered_at_s = self._clock.now()
        # Karpenter pkg/controllers/nodeclaim/lifecycle/registration.go Registration.Reconcile
        log.info(
            "registered nodeclaim=%s node=%s",
            claim.name,
            node_name,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool, Node=node_name),
        )
        return node

    def initialize(self, claim: NodeClaim) -> None:
        """The node is Ready: startup taints are gone (the agent removed them); mark initialized."""
        if claim.node_name is None or claim.initialized_at_s is not None:
            return
        node = self._state.nodes[claim.node_name]
        pool = self._state.nodepools[claim.nodepool]
        node.ready = True
        node.taints = tuple(t for t in node.taints if t not in pool.startup_taints)
        node.labels[labels.INITIALIZED] = "true"
        claim.initialized_at_s = self._clock.now()
        # Karpenter pkg/controllers/nodeclaim/lifecycle/initialization.go Initialization.Reconcile
        log.info(
            "initialized nodeclaim=%s node=%s",
            claim.name,
            node.name,
            extra=log_keys(NodeClaim=claim.name, NodePool=claim.nodepool, Node=node.name),
        )


__all__ = ["CloudProviderError", "Lifecycle"]
