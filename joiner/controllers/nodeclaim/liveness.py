"""Liveness: a NodeClaim whose node has not registered within the registration timeout
is deleted, and its pods are provisioned again (Karpenter ``nodeclaim/lifecycle/
liveness.go``: ``registrationTimeout`` 15 minutes from the NodeClaim's creation).

The instance is terminated through the Terminator (nothing runs on an unregistered node,
so there is nothing to drain) and the provisioner is triggered. The timeout is a setting
(``registration_timeout_s``) so tests run in seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from joiner.api.clock import Clock
from joiner.api.logkeys import log_keys
from joiner.api.timeline import Timeline
from joiner.controllers.termination.controller import Terminator
from joiner.state.cluster import ClusterState, NodeClaim

log = logging.getLogger(__name__)

#: Karpenter's ``registrationTimeout``.
REGISTRATION_TIMEOUT_S = 15 * 60.0
#: Timeline kind (an Event ``RegistrationTimeout`` in controller mode).
REGISTRATION_TIMEOUT = "registrationTimeout"


class LivenessController:
    """Arms a registration deadline per launched NodeClaim (``watch``) and deletes the
    NodeClaim if its node has not registered by then. ``timed_out`` counts them."""

    def __init__(
        self,
        state: ClusterState,
        terminator: Terminator,
        clock: Clock,
        timeline_: Timeline,
        *,
        registration_timeout_s: float = REGISTRATION_TIMEOUT_S,
        trigger: Callable[[], None] | None = None,
    ) -> None:
        if registration_timeout_s <= 0:
            raise ValueError(f"registration timeout must be positive, got {registration_timeout_s}")
        self._state = state
        self._terminator = terminator
        self._clock = clock
        self._timeline = timeline_
        self.registration_timeout_s = registration_timeout_s
        self._trigger = trigger
        self.timed_out = 0

    def watch(self, claim: NodeClaim) -> None:
        """Arm ``claim``'s deadline (creation + the registration timeout); a registered
        or deleted NodeClaim needs none."""
        if claim.registered_at_s is not None or claim.deleted_at_s is not None:
            return
        name = claim.name
        at = claim.created_at_s + self.registration_timeout_s

        def fire() -> None:
            self.check(name)

        self._clock.after(max(at - self._clock.now(), 0.0), fire, label="registration")

    def check(self, claim_name: str) -> bool:
        """Delete the NodeClaim now if it is live and still unregistered; True if it was."""
        claim = self._state.nodeclaims.get(claim_name)
        if claim is None or claim.deleted_at_s is not None or claim.registered_at_s is not None:
            return False
        waited = self._clock.now() - claim.created_at_s
        log.warning(
            "nodeclaim %s did not register within %.0f s; deleting it",
            claim_name,
            waited,
            extra=log_keys(NodeClaim=claim_name, NodePool=claim.nodepool),
        )
        self.timed_out += 1
        self._timeline.record(
            REGISTRATION_TIMEOUT,
            node=claim_name,
            detail=f"node did not register within {self.registration_timeout_s:g} s",
        )
        self._terminator.delete_unregistered(claim, "registration timeout")
        if self._trigger is not None:
            self._trigger()
        return True
