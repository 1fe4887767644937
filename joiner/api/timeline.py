"""The Timeline port: controllers report what they did, the runtime decides where it goes
(the simulation's ``summary.json`` timeline; logs and Kubernetes Events in controller mode)."""

from __future__ import annotations

from typing import Protocol

#: Timeline kinds (``summary.json`` ``timeline[].kind``).
NOTICE = "notice"
REBALANCE = "rebalanceRecommendation"
SCHEDULED_CHANGE = "scheduledChange"
STATE_CHANGE = "stateChange"
CORDON = "cordon"
REPLACEMENT_LAUNCHED = "replacementLaunched"
REPLACEMENT_READY = "replacementReady"
DRAIN_STARTED = "drainStarted"
EVICTION = "eviction"
EVICTION_BLOCKED = "evictionBlocked"
PREEMPTED = "preempted"
POD_REBOUND = "podRebound"
POD_LOST = "podLost"
DRAINED = "drained"
RECLAIMED = "reclaimed"
TERMINATED = "terminated"
DISRUPTION = "disruption"
EXPIRED = "expired"
#: Node repair replaced an unhealthy node (detail: the condition type first).
UNHEALTHY = "unhealthy"
#: Node repair is blocked: too many of the NodePool's nodes are unhealthy (Karpenter's
#: ``NodeRepairBlocked`` event).
NODE_REPAIR_BLOCKED = "nodeRepairBlocked"
#: A node of the as-run record started or ended (detail: ``instanceType/zone/capacityType``).
NODE_STARTED = "nodeStarted"
NODE_ENDED = "nodeEnded"


class Timeline(Protocol):
    """Receives timestamped facts about nodes and pods."""

    def record(
        self, kind: str, *, node: str | None = None, pod: str | None = None, detail: str = ""
    ) -> None:
        """Note that ``kind`` happened now to ``node``/``pod``."""
        ...
