"""The one place Joiner's controllers are built: ``new_controllers``.

As Karpenter's ``NewControllers`` (karpenter, ``pkg/controllers/controllers.go``,
``NewControllers``) builds every controller of the operator from the clock, the cloud
provider and the cluster, ``new_controllers`` builds the NodeClaim lifecycle, the
provisioner behind its batcher, termination, interruption, disruption, expiration,
liveness, garbage collection, node repair and static capacity, in that order (``ORDER``),
and hooks them to each other. Its callers supply only what differs between them:

* the simulation (``operator/wiring.py``): the virtual clock, the simulated cloud, the
  kube-scheduler and kubelet models as the cluster adapter, and its hooks;
* the live controller (``operator/controller.py``, ``joiner run``): the wall clock, the
  fenced and metered cloud, the informer feed and actuator (with the Eviction port) as the
  cluster adapter, and its hooks;
* ``joiner disrupt`` (``operator/disrupt.py``): a virtual clock that never runs and the
  planning cloud; it uses the lifecycle, provisioner, terminator and disruption controller;
* ``joiner plan`` (``operator/plan.py``) runs no controller: its one provisioning round
  solves with the provisioner's scheduler, from the same ``scheduling.costopt.scheduler_for``
  (``plan.py`` does not import this module, so a plan does not load the controllers).

Liveness and garbage collection act on what the simulation does not model (a node that
never registers, an instance without a NodeClaim), so the simulation leaves them off
(``Options.registration_timeout_s`` and ``Options.garbage_collection`` None), as it always
has; every other controller and hook is shared with the live controller.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Protocol

from joiner.api.clock import Clock
from joiner.api.timeline import Timeline
from joiner.cloudprovider.repair import RepairPolicy
from joiner.cloudprovider.types import CloudProvider, InstanceType
from joiner.controllers.disruption import DisruptionController
from joiner.controllers.expiration import ExpirationController
from joiner.controllers.health.controller import HealthController
from joiner.controllers.interruption.controller import InterruptionController, OfferingCache
from joiner.controllers.interruption.settings import InterruptionSettings
from joiner.controllers.nodeclaim.garbagecollection import GarbageCollector
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.nodeclaim.liveness import LivenessController
from joiner.controllers.provisioning.batcher import Batcher
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.controllers.static import StaticCapacityController
from joiner.controllers.termination.controller import Terminator
from joiner.scheduling.costopt import scheduler_for
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod

#: The controllers in the order ``new_controllers`` builds them (``Controllers``' fields;
#: ``gc``: garbage collection).
ORDER = (
    "lifecycle",
    "provisioner",
    "batcher",
    "terminator",
    "interruption",
    "disruption",
    "expiration",
    "liveness",
    "gc",
    "health",
    "static",
)

#: The Eviction port the Terminator drains through (``Terminator``'s ``evict``): the pod,
#: whether to delete it instead, and that deletion's grace period (seconds; None: the pod's).
Evict = Callable[[Pod, bool, int | None], bool]


class Cloud(CloudProvider, OfferingCache, Protocol):
    """The cloud port: a ``CloudProvider`` whose offerings interruption can mark
    unavailable."""


@dataclass(frozen=True)
class Ports:
    """What the controllers run against.

    Attributes:
        state: the cluster state every controller reads and writes.
        cloud: the cloud provider the controllers launch and terminate through.
        clock: virtual (the simulation) or wall (the live controller) time, in seconds.
        timeline: where the controllers record what they did.
        region: the AWS region (Lifecycle's NodeClaim labels).
        names: the random stream NodeClaim names are drawn from.
        instance_types: a NodeClass name -> its instance types (disruption's replacements);
            the live controller's reads bypass the write fence.
        cloud_drift: a provider id -> why its instance drifted ("" when it has not).
    """

    state: ClusterState
    cloud: Cloud
    clock: Clock
    timeline: Timeline
    region: str
    names: random.Random
    instance_types: Callable[[str], list[InstanceType]]
    cloud_drift: Callable[[str], str]


@dataclass(frozen=True)
class GarbageCollection:
    """Garbage collection's settings: seconds between passes, and how long an instance
    without a NodeClaim is left alone."""

    interval_s: float
    instance_grace_s: float


@dataclass(frozen=True)
class Options:
    """How the controllers are set up.

    Attributes:
        packing: the provisioner's packing (``scheduling.costopt.PACKINGS``).
        interruption: the interruption controller's settings.
        spot_to_spot: Karpenter's ``SpotToSpotConsolidation`` feature gate.
        epoch: the instant clock time 0 is (disruption budgets' cron schedules, UTC).
        batch_idle_s: the batcher's idle window (seconds).
        batch_max_s: the batcher's maximum window (seconds).
        event_flow: disruption and expiration are hooked to the event flow (False: the
            Cluster Autoscaler baseline, which scales down by itself, and ``joiner
            disrupt``, whose clock never runs).
        repair: node repair's policies (Karpenter's ``NodeRepair`` gate); None: off.
        registration_timeout_s: liveness's registration timeout; None: no liveness.
        garbage_collection: garbage collection's settings; None: none.
        static_capacity: Karpenter's ``StaticCapacity`` gate: static NodePools keep their
            ``replicas`` (``controllers/static``).
    """

    packing: str
    interruption: InterruptionSettings | None
    spot_to_spot: bool
    epoch: datetime
    batch_idle_s: float = 1.0
    batch_max_s: float = 10.0
    event_flow: bool = True
    repair: Sequence[RepairPolicy] | None = None
    registration_timeout_s: float | None = None
    garbage_collection: GarbageCollection | None = None
    static_capacity: bool = False


def _nothing(*_args: Any) -> None:
    """A hook that does nothing."""


@dataclass(frozen=True)
class Hooks:
    """What the caller does when the controllers report something.

    Attributes:
        flush: the batch window closed (provision, or wake the baseline).
        unschedulable: a provisioning pass left these pod uids unschedulable.
        launched: a NodeClaim was launched (after expiration and liveness saw it).
        changed: a node terminated: what disruption decisions read changed.
        cluster: the cluster adapter, built once the lifecycle exists (the simulation's
            kubelet watches launches before any controller); returns the Eviction port,
            or None for the Terminator's own evictions.
    """

    flush: Callable[[], None] = _nothing
    unschedulable: Callable[[Sequence[str]], None] | None = None
    launched: Callable[[NodeClaim], None] = _nothing
    changed: Callable[[], None] = _nothing
    cluster: Callable[[Lifecycle], Evict | None] = lambda _lifecycle: None


@dataclass
class Controllers:
    """The controllers ``new_controllers`` built (optional ones None when off)."""

    lifecycle: Lifecycle
    provisioner: Provisioner
    batcher: Batcher
    terminator: Terminator
    interruption: InterruptionController
    disruption: DisruptionController
    expiration: ExpirationController
    liveness: LivenessController | None
    gc: GarbageCollector | None
    health: HealthController | None
    static: StaticCapacityController | None = None

    def order(self) -> list[str]:
        """The names (``ORDER``, the fields) of the controllers built, in build order."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


class ControllerHost:
    """A runtime that runs the controllers ``new_controllers`` built (the simulation's, the
    live controller's); ``take`` keeps them as its attributes."""

    def take(self, built: Controllers) -> None:
        """Keep ``built`` and each of its controllers the simulation and the live
        controller share as attributes."""
        self.controllers = built
        self.lifecycle = built.lifecycle
        self.provisioner = built.provisioner
        self.batcher = built.batcher
        self.terminator = built.terminator
        self.interruption = built.interruption
        self.disruption = built.disruption
        self.expiration = built.expiration
        self.health = built.health
        self.static = built.static


def new_controllers(ports: Ports, options: Options, hooks: Hooks) -> Controllers:
    """Build the controllers in ``ORDER`` and hook them to each other (module docstring).

    Hooks, in the order added to each list: a launch is watched by expiration (when
    ``options.event_flow``), then liveness, then ``hooks.launched``; a deleted NodeClaim
    triggers the batcher; an eviction kicks disruption and a terminated node calls
    ``hooks.changed`` (when ``options.event_flow``). Callers append their own after.

    Raises:
        ValueError: an unknown packing, or non-positive liveness or collection intervals.
    """
    state, cloud, clock, timeline = ports.state, ports.cloud, ports.clock, ports.timeline
    lifecycle = Lifecycle(state, cloud, clock, ports.region)
    provisioner = Provisioner(
        state,
        cloud,
        lifecycle,
        clock,
        ports.names,
        scheduler=scheduler_for(options.packing),
        on_unschedulable=hooks.unschedulable,
        # Karpenter ``nominationWindow``: twice the batch's maximum, at least 10 s.
        nomination_window_s=max(2 * options.batch_max_s, 10.0),
    )
    batcher = Batcher(clock, hooks.flush, idle_s=options.batch_idle_s, max_s=options.batch_max_s)
    evict = hooks.cluster(lifecycle)
    terminator = Terminator(state, cloud, clock, timeline, evict=evict)
    kicks: list[Callable[[], None]] = []
    trigger = _fan_out(batcher.trigger, kicks) if options.static_capacity else batcher.trigger
    built = Controllers(
        lifecycle=lifecycle,
        provisioner=provisioner,
        batcher=batcher,
        terminator=terminator,
        interruption=InterruptionController(
            state, cloud, clock, timeline, terminator, trigger, options.interruption
        ),
        disruption=DisruptionController(
            state,
            provisioner,
            terminator,
            ports.instance_types,
            clock,
            timeline,
            trigger=trigger,
            spot_to_spot=options.spot_to_spot,
            cloud_drift=ports.cloud_drift,
            epoch=options.epoch,
        ),
        expiration=ExpirationController(state, terminator, clock, timeline, trigger=trigger),
        liveness=None,
        gc=None,
        health=None,
    )
    if options.registration_timeout_s is not None:
        built.liveness = LivenessController(
            state,
            terminator,
            clock,
            timeline,
            registration_timeout_s=options.registration_timeout_s,
            trigger=trigger,
        )
    if options.garbage_collection is not None:
        built.gc = GarbageCollector(
            state,
            cloud,
            clock,
            timeline,
            interval_s=options.garbage_collection.interval_s,
            instance_grace_s=options.garbage_collection.instance_grace_s,
            trigger=trigger,
        )
    if options.repair is not None:
        built.health = HealthController(
            state, terminator, clock, timeline, options.repair, trigger=trigger
        )
    if options.static_capacity:
        built.static = StaticCapacityController(
            state,
            provisioner,
            terminator,
            clock,
            timeline,
            pending_disruption=built.disruption.pending_disruption,
        )
        # Karpenter's static controllers watch NodeClaims being deleted.
        kicks.append(built.static.kick)
    _hook(built, options, hooks)
    return built


def _fan_out(first: Callable[[], None], then: list[Callable[[], None]]) -> Callable[[], None]:
    """A trigger calling ``first``, then each of ``then`` (filled after it is made)."""

    def trigger() -> None:
        first()
        for kick in then:
            kick()

    return trigger


def _hook(c: Controllers, options: Options, hooks: Hooks) -> None:
    """The event flow between the controllers (``new_controllers``)."""
    disruption = c.disruption

    def kick(_pod: Pod) -> None:
        disruption.kick()

    def changed(_node: Node) -> None:
        hooks.changed()

    if options.event_flow:
        c.lifecycle.launch_listeners.append(c.expiration.watch)
        c.terminator.on_evicted.append(kick)
        c.terminator.on_terminated.append(changed)
    if c.liveness is not None:
        c.lifecycle.launch_listeners.append(c.liveness.watch)
    c.lifecycle.launch_listeners.append(hooks.launched)
    trigger = c.batcher.trigger
    c.lifecycle.deleted_listeners.append(lambda _claim: trigger())
    if c.static is not None:
        static = c.static
        c.lifecycle.deleted_listeners.append(lambda _claim: static.kick())
