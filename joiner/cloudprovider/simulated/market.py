"""The simulated Spot market: capacity pools with a price, a capacity score and reclaims.

A capacity pool is one instance type in one zone (AWS, "Spot Instance pools"). Every pool's
state is a pure function of the market seed, the pool and the time, so it does not depend
on which pools the simulation happens to look at, nor in which order (counter-based draws:
``_unit(seed, pool, purpose, index)`` hashes with BLAKE2b). Constants and their sources are
in ``docs/spot-market.md``.

1. **Price.** A user's DescribeSpotPriceHistory row for the pool, the latest at or before
   the instant, is used as given (earlier instants use the earliest row). Otherwise the
   regional Spot price (on-demand x (1 - Spot Advisor saving)) times a per-pool zone factor
   ``exp(N(0, ZONE_PRICE_SIGMA))`` times a slow drift: a mean-reverting AR(1) in log space,
   one step per ``PRICE_EPOCH_S``.
2. **Capacity score** (1-10, the scale of GetSpotPlacementScores). A user's
   ``SingleAvailabilityZone`` placement score for the pool is its base; otherwise
   ``BUCKET_BASE_SCORE`` of the type's Spot Advisor bucket plus a per-pool jitter in
   ``[-SCORE_JITTER, SCORE_JITTER]``. Each of our running instances in the pool takes
   ``OCCUPANCY_PENALTY`` off (our own demand drains it); a pool whose crunch is coming
   (from the event's rebalance time to its notice) scores 1 and a dry pool 0.
3. **Reclaims are pool events.** Each pool has capacity crunches at Poisson times with rate
   ``lambda = h / E[severity]`` per hour, where ``h`` is the per-instance hazard of the
   type's Spot Advisor bucket (``catalog.interruption_rate_per_hour``) times
   ``interruptionRateMultiplier``, or an ``interruptionRates`` override. A crunch has a
   severity ``s ~ U(SEVERITY_MIN, SEVERITY_MAX)``: each of our instances in the pool is
   reclaimed with probability ``s`` (so the per-instance hazard stays ``h`` and the monthly
   share reclaimed matches the bucket, while a concentrated fleet loses several instances at
   once). With probability ``rebalanceProbability`` the event is preceded by a rebalance
   recommendation to every instance in the pool, ``U(NOTICE_S, REBALANCE_MAX_LEAD_S)``
   before the reclaim; the victims get the 2-minute notice. From the notice the pool is dry
   (launches there get ICE) for ``Exp(DRY_MEAN_S)`` clamped to
   ``[DRY_MIN_S, DRY_HORIZON_S]``.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

from joiner.cloudprovider.types import Offering

#: AWS's Spot interruption notice (Amazon EC2 User Guide, "Spot Instance interruption
#: notices": two minutes).
NOTICE_S = 120.0
#: Price steps of the modelled drift (spot prices move slowly since the 2017 pricing change).
PRICE_EPOCH_S = 6 * 3600.0
#: Price factors kept for reuse (pool x epoch); a run of any length stays within it.
FACTOR_CACHE_SIZE = 100_000
#: Log-normal spread of a type's Spot price across zones around the regional price.
ZONE_PRICE_SIGMA = 0.08
#: AR(1) coefficient and innovation of the log-price drift per epoch (stationary sd ~0.069).
DRIFT_RHO = 0.9
DRIFT_SIGMA = 0.03
#: Base capacity score (1-10) per Spot Advisor bucket (<5% ... >20%).
BUCKET_BASE_SCORE = (8.0, 7.0, 6.0, 5.0, 4.0)
#: Uniform per-pool jitter of the modelled base score.
SCORE_JITTER = 1.5
#: Capacity score taken off per running instance of ours in the pool.
OCCUPANCY_PENALTY = 0.5
#: Severity of a crunch: the chance each of our instances in the pool is reclaimed.
SEVERITY_MIN = 0.5
SEVERITY_MAX = 1.0
MEAN_SEVERITY = (SEVERITY_MIN + SEVERITY_MAX) / 2
#: How long a crunched pool answers ICE: exponential with this mean, at least DRY_MIN_S.
DRY_MEAN_S = 2700.0
DRY_MIN_S = 300.0
#: The longest dry spell (the exponential is cut here; about 1e-7 of draws are longer).
DRY_HORIZON_S = 16 * DRY_MEAN_S
#: The latest a rebalance recommendation comes before the reclaim (the FIS action's PT15M).
REBALANCE_MAX_LEAD_S = 900.0
#: Hours in the Spot Advisor's trailing month.
HOURS_PER_MONTH = 720.0

_NORMAL = statistics.NormalDist()

Pool = tuple[str, str]
"""(instance type, zone)."""


@dataclass(frozen=True, slots=True)
class RateOverride:
    """A per-instance reclaim rate per hour for the Spot pools that match every given field."""

    rate_per_hour: float
    instance_type: str | None = None
    zone: str | None = None

    def matches(self, instance_type: str, zone: str) -> bool:
        return (self.instance_type in (None, instance_type)) and (self.zone in (None, zone))


@dataclass(frozen=True, slots=True)
class HazardModel:
    """The scenario's knobs on the market (``spec.cloud``).

    Attributes:
        multiplier: ``interruptionRateMultiplier``: scales every pool's crunch rate.
        overrides: ``interruptionRates``: the first match sets the pool's per-instance
            hazard (its crunch rate is that over the mean severity).
        rebalance_probability: ``rebalanceProbability``: the share of reclaim events
            preceded by a rebalance recommendation.
    """

    multiplier: float = 1.0
    overrides: tuple[RateOverride, ...] = ()
    rebalance_probability: float = 0.8
    rebalance_max_lead_s: float = REBALANCE_MAX_LEAD_S

    def rate(self, offering: Offering, instance_type: str) -> float:
        """Per-instance reclaim hazard per hour of a Spot pool."""
        for o in self.overrides:
            if o.matches(instance_type, offering.zone):
                return o.rate_per_hour
        return offering.interruption_rate_per_hour * self.multiplier


@dataclass(frozen=True)
class MarketInputs:
    """Real market data from the user (``spec.cloud.spotPriceHistory`` and
    ``spotPlacementScores``), already mapped to pools.

    Attributes:
        prices: per pool, ``(seconds from run start, USD per hour)`` sorted by time.
        scores: per pool, the placement score (1-10); a key with instance type ``"*"``
            applies to every type in that zone without a score of its own.
    """

    prices: Mapping[Pool, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    scores: Mapping[Pool, float] = field(default_factory=dict)

    def from_offset(self, offset_s: float) -> MarketInputs:
        """The same inputs with times counted from ``offset_s`` seconds after the run start
        (a dry run at that instant prices its time 0 as the run would at ``offset_s``)."""
        if not offset_s:
            return self
        prices = {
            pool: tuple((t - offset_s, price) for t, price in rows)
            for pool, rows in self.prices.items()
        }
        return MarketInputs(prices=prices, scores=self.scores)


@dataclass(frozen=True, slots=True)
class PoolEvent:
    """One capacity crunch of a pool. Times are seconds from the run start."""

    index: int
    reclaim_at_s: float
    severity: float
    dry_until_s: float
    rebalance: bool
    rebalance_at_s: float

    @property
    def notice_at_s(self) -> float:
        """When the victims get the 2-minute notice and the pool runs dry."""
        return self.reclaim_at_s - NOTICE_S


@dataclass(frozen=True, slots=True)
class ReclaimEvent:
    """A pool event that took ``nodes`` of our instances (``interruptions.reclaimEvents``)."""

    at_s: float
    instance_type: str
    zone: str
    nodes: int


def market_seed(scenario_seed: int) -> int:
    """The market's seed for a scenario seed: the simulation and ``joiner advise`` see the
    same market."""
    text = f"spot-market\x1f{scenario_seed}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def _unit(seed: int, *keys: object) -> float:
    """A uniform draw in (0, 1) fixed by ``seed`` and ``keys`` (BLAKE2b counter RNG)."""
    text = "\x1f".join([str(seed), *map(str, keys)]).encode()
    n = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")
    return (n + 0.5) / 2.0**64


def _time_of(row: tuple[float, float]) -> float:
    """A price history row's time (seconds from the run start)."""
    return row[0]


class SpotMarket:
    """Every Spot pool's price, capacity score and crunch events (module docstring).

    ``seed`` comes from the composition root's seeded stream; nothing here reads a clock:
    callers pass times (seconds from the run start).
    """

    def __init__(
        self,
        seed: int,
        settings: HazardModel | None = None,
        inputs: MarketInputs | None = None,
    ) -> None:
        self.seed = seed
        self.settings = settings or HazardModel()
        self.inputs = inputs or MarketInputs()
        self._events: dict[Pool, list[PoolEvent]] = {}
        self._clock_h: dict[Pool, float] = {}
        #: Per pool, the last price epoch its drift was computed for and the drift there (the
        #: AR(1) walk is computed forward from it; an earlier epoch walks again from 0), so
        #: memory does not grow with the run's length.
        self._drift: dict[Pool, tuple[int, float]] = {}
        #: Per pool, its fixed log price offset (``ZONE_PRICE_SIGMA`` x a normal draw).
        self._zone_factor: dict[Pool, float] = {}
        #: Per (pool, price epoch), its price factor ``exp(_log_factor)`` (fixed once drawn);
        #: emptied when it holds ``FACTOR_CACHE_SIZE`` entries (any entry can be drawn again).
        self._factor: dict[tuple[Pool, int], float] = {}

    # -- price ----------------------------------------------------------------------------

    def price(self, pool: Pool, regional_price: float, at_s: float) -> tuple[float, bool]:
        """The pool's Spot price per hour at ``at_s`` and whether it is the user's (True)."""
        history = self.inputs.prices.get(pool)
        if history:
            i = bisect_right(history, at_s, key=_time_of) - 1
            return history[max(i, 0)][1], True
        epoch = max(0, int(at_s // PRICE_EPOCH_S))
        key = (pool, epoch)
        factor = self._factor.get(key)
        if factor is None:
            if len(self._factor) >= FACTOR_CACHE_SIZE:
                self._factor.clear()
            factor = self._factor[key] = math.exp(self._log_factor(pool, epoch))
        return regional_price * factor, False

    def _log_factor(self, pool: Pool, epoch: int) -> float:
        k, drift = self._drift.get(pool, (0, 0.0))
        if k > epoch:  # an epoch before the last one asked: walk again from the start
            k, drift = 0, 0.0
        while k < epoch:
            k += 1
            eps = _NORMAL.inv_cdf(_unit(self.seed, *pool, "drift", k))
            drift = DRIFT_RHO * drift + DRIFT_SIGMA * eps
        self._drift[pool] = (k, drift)
        zone = self._zone_factor.get(pool)
        if zone is None:  # fixed per pool: drawn once
            zone = ZONE_PRICE_SIGMA * _NORMAL.inv_cdf(_unit(self.seed, *pool, "zone"))
            self._zone_factor[pool] = zone
        return zone + drift

    # -- capacity -------------------------------------------------------------------------

    def base_score(self, pool: Pool, bucket: int) -> tuple[float, bool]:
        """The pool's capacity score before our own instances and dry spells, and whether it
        is the user's placement score (True)."""
        given = self.inputs.scores.get(pool)
        if given is None:
            given = self.inputs.scores.get(("*", pool[1]))
        if given is not None:
            return float(given), True
        jitter = (2.0 * _unit(self.seed, *pool, "score") - 1.0) * SCORE_JITTER
        base = BUCKET_BASE_SCORE[min(max(bucket, 0), len(BUCKET_BASE_SCORE) - 1)]
        return min(10.0, max(1.0, base + jitter)), False

    def capacity_score(
        self, pool: Pool, bucket: int, rate_per_hour: float, at_s: float, in_use: int
    ) -> float:
        """Capacity score now: 0 when dry; 1 while a crunch is coming (from its rebalance
        time to its notice, recommendation sent or not); else the base minus our
        occupancy, at least 1."""
        if self.is_dry(pool, rate_per_hour, at_s):
            return 0.0
        coming = self.next_event(pool, rate_per_hour, at_s)
        if coming is not None and coming.rebalance_at_s <= at_s:
            return 1.0
        base, _ = self.base_score(pool, bucket)
        return max(1.0, base - OCCUPANCY_PENALTY * in_use)

    # -- crunches -------------------------------------------------------------------------

    def crunch_rate_per_hour(self, rate_per_hour: float) -> float:
        """Pool events per hour for a per-instance hazard (``h / E[severity]``)."""
        return rate_per_hour / MEAN_SEVERITY

    def events_until(self, pool: Pool, rate_per_hour: float, until_s: float) -> list[PoolEvent]:
        """The pool's events with a notice at or before ``until_s``, in time order, plus the
        first one after it (so callers can see what comes next). A new list."""
        return list(self._generate(pool, rate_per_hour, until_s))

    def _generate(self, pool: Pool, rate_per_hour: float, until_s: float) -> list[PoolEvent]:
        lam = self.crunch_rate_per_hour(rate_per_hour)
        events = self._events.setdefault(pool, [])
        if lam <= 0:
            return events
        while not events or events[-1].notice_at_s <= until_s:
            k = len(events)
            hours = self._clock_h.get(pool, 0.0) - math.log(_unit(self.seed, *pool, "gap", k)) / lam
            self._clock_h[pool] = hours
            reclaim = hours * 3600.0
            sev = SEVERITY_MIN + (SEVERITY_MAX - SEVERITY_MIN) * _unit(self.seed, *pool, "sev", k)
            dry = -DRY_MEAN_S * math.log(_unit(self.seed, *pool, "dry", k))
            dry = min(DRY_HORIZON_S, max(DRY_MIN_S, dry))
            rebalance = (
                _unit(self.seed, *pool, "rebalance", k) < self.settings.rebalance_probability
            )
            lead_max = max(NOTICE_S, self.settings.rebalance_max_lead_s)
            lead = NOTICE_S + (lead_max - NOTICE_S) * _unit(self.seed, *pool, "lead", k)
            events.append(
                PoolEvent(
                    index=k,
                    reclaim_at_s=reclaim,
                    severity=sev,
                    dry_until_s=reclaim - NOTICE_S + dry,
                    rebalance=rebalance,
                    rebalance_at_s=reclaim - lead,
                )
            )
        return events

    def next_event(self, pool: Pool, rate_per_hour: float, after_s: float) -> PoolEvent | None:
        """The pool's first event whose notice comes after ``after_s``, or None (no hazard)."""
        for ev in self._generate(pool, rate_per_hour, after_s):
            if ev.notice_at_s > after_s:
                return ev
        return None

    def is_dry(self, pool: Pool, rate_per_hour: float, at_s: float) -> bool:
        """True while a crunch keeps the pool out of capacity (launches get ICE)."""
        events = self._generate(pool, rate_per_hour, at_s)
        # No dry spell outlasts DRY_HORIZON_S, so only the latest events can cover now.
        for ev in reversed(events):
            if ev.notice_at_s <= at_s < ev.dry_until_s:
                return True
            if ev.notice_at_s <= at_s - DRY_HORIZON_S:
                return False
        return False

    def is_victim(self, pool: Pool, event: PoolEvent, instance_id: str) -> bool:
        """Whether ``event`` reclaims this instance (a draw fixed per event and instance)."""
        return _unit(self.seed, *pool, "victim", event.index, instance_id) < event.severity

    def tiebreak(self, pool: Pool, capacity_type: str) -> float:
        """A seeded order among otherwise equal pools (EC2 does not document one; never the
        zone's name)."""
        return _unit(self.seed, *pool, capacity_type, "tie")


def monthly_reclaim_share(rate_per_hour: float) -> float:
    """The share of instances a per-instance hazard reclaims in a 720-hour month."""
    return 1.0 - math.exp(-rate_per_hour * HOURS_PER_MONTH)
