"""Controller mode's clock and its fitting of NodeClasses to simulated capacity (split
from ``operator/controller.py``, the composition root that uses them)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

from joiner.api.errors import InputError
from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.simulated.vpc import status_vpc
from joiner.cloudprovider.types import SecurityGroup
from joiner.cluster.kube.fence import LeaseLostError

log = logging.getLogger(__name__)

DEFAULT_SECURITY_GROUP = SecurityGroup("sg-joiner-default", "joiner-default")


class WallClock:
    """The Clock port on an asyncio loop: ``now`` is seconds since construction
    (monotonic), ``after`` is ``loop.call_later``. Every callback is followed by
    ``after_turn`` (the actuator's sync); a callback that raises is logged with its
    traceback and counted (``joiner_reconcile_errors_total{where=label}``), and the loop
    goes on."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        after_turn: Callable[[], None],
        on_error: Callable[[str], None],
    ) -> None:
        self.loop = loop
        self._t0 = time.monotonic()
        self._after_turn = after_turn
        self._on_error = on_error

    def now(self) -> float:
        """Seconds since the controller started."""
        return time.monotonic() - self._t0

    def after(self, delay_s: float, callback: Callable[[], None], *, label: str = "") -> None:
        """Run ``callback`` on the loop ``delay_s`` seconds from now."""
        self.loop.call_later(max(0.0, delay_s), self.run, callback, label)

    def run(self, callback: Callable[[], None], label: str) -> None:
        """Run one callback now, then the after-turn hook."""
        try:
            callback()
        except LeaseLostError:
            log.debug("controller callback %r stopped by the fence", label)
        except Exception:
            log.exception("controller callback %r failed", label)
            self._on_error(label or "callback")
        self._after_turn()


def _fit_node_classes(cloud: SimulatedCloudProvider, classes: list[NodeClass]) -> list[NodeClass]:
    """The NodeClasses as the simulated cloud launches them.

    An EC2NodeClass with ``status.subnets`` (and ``status.securityGroups``) is pinned to
    what Karpenter resolved in the real cluster (``simulated.vpc.status_vpc``, as ``joiner
    plan`` and ``simulate`` read a dump): those subnets and groups join the simulated VPC,
    so launches go only to the cluster's zones. With simulated capacity there is no other
    VPC: a NodeClass whose selectors still match nothing gets every zone of the region and
    the default group (as ``joiner plan`` does), logged. A status subnet in a zone outside
    the cloud's region is logged and the NodeClass is fitted without its status.
    """
    out = []
    for nc in classes:
        fixed = _pin_to_status(cloud, nc)
        if not cloud.resolve_subnets(fixed):
            fixed = replace(
                fixed, subnet_selector_terms=tuple(SelectorTerm(id=s.id) for s in cloud.subnets)
            )
            log.info(
                "EC2NodeClass %s: subnets unknown to the simulated cloud; every zone of %s",
                nc.name,
                cloud.region,
            )
        if not cloud.resolve_security_groups(fixed):
            fixed = replace(
                fixed, security_group_selector_terms=(SelectorTerm(id=DEFAULT_SECURITY_GROUP.id),)
            )
        out.append(fixed)
    return out


def _pin_to_status(cloud: SimulatedCloudProvider, nc: NodeClass) -> NodeClass:
    """``nc`` pinned to its ``status.subnets`` and ``status.securityGroups``, which join the
    simulated cloud's VPC; ``nc`` unchanged without a status (or with one the region
    refuses, logged)."""
    if not nc.status_subnets and not nc.status_security_groups:
        return nc
    try:
        (pinned,), subnets, groups = status_vpc([nc], cloud.catalog, cloud.region)
    except InputError as exc:
        log.warning("%s; EC2NodeClass %s is fitted without its status", exc, nc.name)
        return nc
    known = {s.id for s in cloud.subnets}
    cloud.subnets += [s for s in subnets if s.id not in known]
    known_groups = {g.id for g in cloud.security_groups}
    cloud.security_groups += [g for g in groups if g.id not in known_groups]
    return pinned
