"""Controller mode's clock and its fitting of NodeClasses to simulated capacity (split
from ``operator/controller.py``, the composition root that uses them)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace

from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider.simulated import SimulatedCloudProvider
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
    """With simulated capacity there is no VPC: a NodeClass whose subnet or security group
    selectors match nothing gets every zone of the region and the default group (as
    ``joiner plan`` does), with a warning."""
    out = []
    for nc in classes:
        fixed = nc
        if not cloud.resolve_subnets(nc):
            fixed = replace(
                fixed, subnet_selector_terms=tuple(SelectorTerm(id=s.id) for s in cloud.subnets)
            )
            log.info(
                "EC2NodeClass %s: subnets unknown to the simulated cloud; every zone of %s",
                nc.name,
                cloud.region,
            )
        if not cloud.resolve_security_groups(nc):
            fixed = replace(
                fixed, security_group_selector_terms=(SelectorTerm(id=DEFAULT_SECURITY_GROUP.id),)
            )
        out.append(fixed)
    return out
