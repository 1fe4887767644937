"""Per-pool Spot prices for ``joiner plan`` and ``joiner disrupt``, as ``joiner simulate``
prices them.

Both dry runs price Spot regionally (one estimate per instance type for every zone) unless
given a Spot price history: ``--spot-price-history FILE`` (``aws ec2
describe-spot-price-history`` output, read by ``sim.spotdata.load_price_history``) or a
Scenario's ``spec.cloud.spotPriceHistory`` (the flag replaces it). Then they read
``joiner simulate``'s Spot market (``market.SpotMarket`` from the Scenario's seed, the
default seed without one) at one instant: ``--at``, else a Scenario's ``spec.startTime``
(the instant of a simulation's first launch), else the history's latest row.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from joiner.api.errors import InputError

if TYPE_CHECKING:
    from joiner.cloudprovider.catalog import Catalog
    from joiner.operator.plan import SpotPrices
    from joiner.sim.scenario import Scenario

SpotPriceHistoryOption = Annotated[
    Path | None,
    typer.Option(
        "--spot-price-history",
        help="Price Spot per instance type and zone, as joiner simulate does, from this "
        "`aws ec2 describe-spot-price-history` JSON (replaces a Scenario's "
        "spec.cloud.spotPriceHistory); default: regional estimates.",
    ),
]


def parse_instant(text: str, field: str) -> datetime:
    """An ISO 8601 instant with a UTC offset given on the command line.

    Raises:
        InputError: not ISO 8601 or without an offset (naming ``field``).
    """
    from joiner.api import cron

    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InputError(
            f"{text!r} is not an ISO 8601 time such as 2025-01-06T09:30:00Z", field=field
        ) from exc
    return cron.check_instant(value, field=field)


def scenario_spot_prices(
    sc: Scenario,
    catalog: Catalog,
    history: Path | None,
    at: datetime | None,
    warnings: list[str],
) -> SpotPrices | None:
    """The Scenario's market read at ``at`` (default ``spec.startTime``), with ``history``
    in place of its ``spec.cloud.spotPriceHistory``; None (regional prices) when neither
    gives a price history. Load warnings go to ``warnings``.

    Raises:
        InputError: a bad ``history`` file (naming the file and the row's field).
    """
    from dataclasses import replace

    from joiner.cloudprovider.simulated.market import SpotMarket, market_seed
    from joiner.operator.plan import SpotPrices
    from joiner.sim.spotdata import load_price_history

    inputs = sc.market
    if history is not None:
        zones = {name for name, _ in catalog.zones(sc.region)} | {s.zone for s in sc.subnets}
        prices = load_price_history(
            history,
            zones=sorted(zones),
            start=sc.start_time,
            warnings=warnings,
            instance_types=catalog.offered_types(sc.region),
            subnet_zones={s.zone for s in sc.subnets},
        )
        inputs = replace(inputs, prices=prices)
    if not inputs.prices:
        return None
    when = at if at is not None else sc.start_time
    offset_s = (when - sc.start_time).total_seconds()
    market = SpotMarket(market_seed(sc.seed), sc.hazard, inputs.from_offset(offset_s))
    return SpotPrices(market=market, at=when, unmodelled_scores=bool(inputs.scores))


#: A price history ending longer than this before ``--at`` draws a warning.
STALE_AFTER = timedelta(days=1)


def file_spot_prices(
    catalog: Catalog,
    region: str,
    history: Path | None,
    at: datetime | None,
    warnings: list[str],
) -> SpotPrices | None:
    """The market of a Scenario with the default seed and ``history``, read at ``at``
    (default: the history's latest row); None without ``history``. Load warnings go to
    ``warnings``.

    Raises:
        InputError: a bad ``history`` file (naming the file and the row's field).
    """
    if history is None:
        return None
    from joiner.cloudprovider.simulated.market import MarketInputs, SpotMarket, market_seed
    from joiner.operator.plan import SpotPrices
    from joiner.sim.scenario_schema import ScenarioSpec
    from joiner.sim.spotdata import history_end, load_price_history

    zones = sorted(name for name, _ in catalog.zones(region))
    end = history_end(history, zones=zones)
    when = at if at is not None else end
    if when - end > STALE_AFTER:
        warnings.append(
            f"{history}: the Spot price history ends {end.isoformat()}, "
            f"{(when - end).days} days before --at {when.isoformat()}: its last prices are used"
        )
    prices = load_price_history(
        history,
        zones=zones,
        start=when,
        warnings=warnings,
        instance_types=catalog.offered_types(region),
        start_field="--at",
    )
    seed = ScenarioSpec.model_fields["seed"].default  # a Scenario without spec.seed
    market = SpotMarket(market_seed(seed), inputs=MarketInputs(prices=prices))
    return SpotPrices(market=market, at=when)


def check_not_kwok(history: Path | None, kwok: bool) -> None:
    """A price history prices EC2 Spot pools: not KWOKNodeClasses' instance types.

    Raises:
        InputError: both given (naming ``--spot-price-history``).
    """
    if history is not None and kwok:
        raise InputError(
            "prices EC2 Spot pools; KWOKNodeClasses launch Karpenter-kwok's instance types "
            "at their own prices (drop --spot-price-history or --kwok-instance-types)",
            field="--spot-price-history",
        )
