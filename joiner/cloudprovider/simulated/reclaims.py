"""Pool reclaims on the clock: the simulated cloud's side of ``market.SpotMarket`` events.

For every pool where we run Spot instances, the next crunch is put on the clock:

1. at ``rebalance_at_s`` (when the event has one): a rebalance recommendation to every
   instance then running in the pool (AWS: "elevated risk"; best effort);
2. at the notice: each running instance is a victim with the event's severity; victims get
   the Spot Interruption Warning and are reclaimed 2 minutes later; the event is recorded
   (``interruptions.reclaimEvents``) when it took any;
3. then the pool's next event is scheduled while instances remain there.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from joiner.api.clock import Clock
from joiner.cloudprovider.events import REBALANCE_RECOMMENDATION, SPOT_INTERRUPTION, CloudEvent
from joiner.cloudprovider.simulated.market import Pool, PoolEvent, ReclaimEvent, SpotMarket
from joiner.cloudprovider.types import Instance


class PoolReclaims:
    """Tracks our Spot instances per pool and plays each pool's crunches on ``clock``.

    ``emit`` delivers a cloud event; ``reclaim`` takes an instance back by provider id.
    """

    def __init__(
        self,
        market: SpotMarket,
        clock: Clock,
        emit: Callable[[CloudEvent], None],
        reclaim: Callable[[str], None],
    ) -> None:
        self.market = market
        self._clock = clock
        self._emit = emit
        self._reclaim = reclaim
        self._members: dict[Pool, dict[str, Instance]] = {}
        self._rates: dict[Pool, float] = {}
        self._watched: dict[Pool, int] = {}
        self.events: list[ReclaimEvent] = []

    def in_use(self, pool: Pool) -> int:
        """Our running instances in the pool."""
        return len(self._members.get(pool, {}))

    def rate(self, instance: Instance) -> float:
        """The per-instance hazard per hour of the instance's pool."""
        return self.market.settings.rate(instance.offering, instance.instance_type.name)

    def add(self, instance: Instance) -> None:
        """A Spot instance runs in its pool from now on."""
        pool = (instance.instance_type.name, instance.offering.zone)
        self._members.setdefault(pool, {})[instance.provider_id] = instance
        self._rates[pool] = self.rate(instance)
        if pool not in self._watched:
            self._watch(pool)

    def remove(self, instance: Instance) -> None:
        """The instance is gone (deleted or reclaimed)."""
        pool = (instance.instance_type.name, instance.offering.zone)
        self._members.get(pool, {}).pop(instance.provider_id, None)

    def _watch(self, pool: Pool) -> None:
        now = self._clock.now()
        ev = self.market.next_event(pool, self._rates[pool], now)
        if ev is None:
            return
        self._watched[pool] = ev.index
        if ev.rebalance and ev.rebalance_at_s < ev.notice_at_s:
            self._clock.after(
                max(0.0, ev.rebalance_at_s - now),
                partial(self._rebalance, pool, ev),
                label="pool-rebalance",
            )
        self._clock.after(
            ev.notice_at_s - now, partial(self._notice, pool, ev), label="pool-notice"
        )

    def _running(self, pool: Pool) -> list[Instance]:
        members = self._members.get(pool, {})
        return [members[k] for k in sorted(members)]

    def _rebalance(self, pool: Pool, ev: PoolEvent) -> None:
        for inst in self._running(pool):
            iid = inst.instance_id
            self._emit(CloudEvent(REBALANCE_RECOMMENDATION, (iid,), f"rebalance-{iid}-{ev.index}"))

    def _notice(self, pool: Pool, ev: PoolEvent) -> None:
        victims = [
            inst
            for inst in self._running(pool)
            if self.market.is_victim(pool, ev, inst.instance_id)
        ]
        if ev.rebalance and ev.rebalance_at_s >= ev.notice_at_s:
            self._rebalance(pool, ev)  # the recommendation came with the notice
        for inst in victims:
            iid = inst.instance_id
            self._emit(CloudEvent(SPOT_INTERRUPTION, (iid,), f"itn-{iid}", action="terminate"))
            self._clock.after(
                ev.reclaim_at_s - self._clock.now(),
                partial(self._reclaim, inst.provider_id),
                label="reclaim",
            )
        if victims:
            self.events.append(ReclaimEvent(ev.notice_at_s, pool[0], pool[1], len(victims)))
        del self._watched[pool]
        if self._members.get(pool):
            self._watch(pool)
