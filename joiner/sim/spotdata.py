"""The user's own Spot market data, as the AWS CLI prints it, mapped to capacity pools.

* ``aws ec2 describe-spot-price-history`` (``spec.cloud.spotPriceHistory``): rows of
  ``SpotPriceHistory`` with ``AvailabilityZone``, ``InstanceType``, ``ProductDescription``,
  ``SpotPrice`` (a decimal string) and ``Timestamp`` (ISO 8601). Only Linux/UNIX rows are
  used, as Karpenter's pricing provider filters them (``pricing.go`` asks for
  ``Linux/UNIX`` and ``Linux/UNIX (Amazon VPC)``). Times become seconds from the run start
  (``spec.startTime``).
* ``aws ec2 get-spot-placement-scores --single-availability-zone``
  (``spec.cloud.spotPlacementScores``): ``SpotPlacementScores`` entries with ``Region``,
  ``AvailabilityZoneId`` and ``Score`` (1-10). The output does not repeat the request's
  instance types, so the scenario names them; a request's score applies to each of its
  types in that zone (without types: to every type there). Zone ids map to names through the
  scenario's subnets, else the packaged zone table.

Every malformed value is an ``InputError`` naming the file and the field. Rows and requests
that name an instance type the region does not offer, or a zone none of the scenario's
subnets is in, can never price or score a pool Joiner launches into: they are ignored with
one warning per file naming them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from joiner.api.decimals import MAX_PRICE_PER_HOUR, MIN_PRICE_PER_HOUR, price_per_hour
from joiner.api.errors import InputError
from joiner.api.grouping import grouped, plural
from joiner.api.jsontext import parse_json
from joiner.api.manifests.yamlio import read_text
from joiner.api.validation import shown
from joiner.cloudprovider.simulated.market import MarketInputs, Pool

#: ProductDescription values Karpenter reads prices from.
LINUX_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")

_Row = tuple[datetime, float]
"""A price history row: its ``Timestamp`` and its ``SpotPrice`` (USD per hour)."""


def _load_json(path: Path, what: str) -> Any:
    return parse_json(read_text(path, what=what), what=what, file=str(path))


def _list_of(doc: Any, key: str, path: Path, command: str) -> list[Any]:
    if not isinstance(doc, dict) or key not in doc:
        raise InputError(
            f"expected the JSON object `aws ec2 {command}` prints, with a {key!r} list",
            file=str(path),
            field=key,
        )
    items = doc[key]
    if not isinstance(items, list):
        raise InputError("must be a list", file=str(path), field=key)
    return items


def _warn_unused(
    path: Path,
    field: str,
    what: str,
    names: Collection[str],
    known: Collection[str] | None,
    warnings: list[str],
) -> None:
    """One warning naming ``names`` outside ``known`` (nothing when ``known`` is None);
    ``what`` holds ``{}`` for the counted noun (``instance type`` or ``zone``)."""
    unused = sorted(set(names) - set(known)) if known is not None else []
    if unused:
        noun = "zone" if "zone" in field.lower() else "instance type"
        head = what.format(plural(len(unused), noun))
        warnings.append(grouped(f"{path}: field {field}: {head}", unused))


def _row_price(text: str, path: Path, field: str) -> float:
    """A row's ``SpotPrice`` in USD per hour.

    Raises:
        InputError: not an ASCII decimal within ``api.decimals``' price range
            (``MIN_PRICE_PER_HOUR``..``MAX_PRICE_PER_HOUR``, at ``field`` of ``path``).
    """
    price = price_per_hour(text)
    if price is None:
        raise InputError(
            f"{text!r} is not a positive price in USD per hour (an ASCII decimal such as "
            f"0.0346, from {MIN_PRICE_PER_HOUR:.5f} to {MAX_PRICE_PER_HOUR:,.0f}: no EC2 price "
            "is outside that range)",
            file=str(path),
            field=field,
        )
    return price


def _row_time(text: str, path: Path, field: str) -> datetime:
    """A row's ``Timestamp``: ISO 8601 with a UTC offset (``Z`` accepted).

    Raises:
        InputError: not ISO 8601, a field or the UTC offset out of range (the offset must be
            within 23:59 of UTC), or without an offset (at ``field`` of ``path``).
    """
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{shown(text)} is not an ISO 8601 time such as 2025-01-07T21:00:00Z, or a field "
            "of it or its UTC offset (at most 23:59 from UTC) is out of range",
            file=str(path),
            field=field,
        ) from None
    if at.tzinfo is None:
        raise InputError("has no UTC offset", file=str(path), field=field)
    return at


def _history_rows(path: Path, zones: Sequence[str]) -> tuple[dict[Pool, list[_Row]], int]:
    """The file's Linux rows per pool as ``(time, USD per hour)``, and how many rows of
    other products were skipped.

    Raises:
        InputError: as ``load_price_history``.
    """
    rows = _list_of(
        _load_json(path, "spot price history"),
        "SpotPriceHistory",
        path,
        "describe-spot-price-history",
    )
    out: dict[Pool, list[_Row]] = {}
    skipped = 0
    for i, row in enumerate(rows):
        where = f"SpotPriceHistory[{i}]"
        if not isinstance(row, dict):
            raise InputError("must be an object", file=str(path), field=where)
        for key in ("AvailabilityZone", "InstanceType", "SpotPrice", "Timestamp"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise InputError("missing or not a string", file=str(path), field=f"{where}.{key}")
        if row.get("ProductDescription", LINUX_PRODUCTS[0]) not in LINUX_PRODUCTS:
            skipped += 1
            continue
        zone = row["AvailabilityZone"]
        if zone not in zones:
            raise InputError(
                f"zone {zone!r} is not in the scenario's region (zones: {', '.join(zones)})",
                file=str(path),
                field=f"{where}.AvailabilityZone",
            )
        price = _row_price(row["SpotPrice"], path, f"{where}.SpotPrice")
        at = _row_time(row["Timestamp"], path, f"{where}.Timestamp")
        out.setdefault((row["InstanceType"], zone), []).append((at, price))
    if not out:
        raise InputError(
            f"no Linux/UNIX rows ({skipped} rows for other products)",
            file=str(path),
            field="SpotPriceHistory",
        )
    return out, skipped


def _warn_conflicts(path: Path, rows: Mapping[Pool, Sequence[_Row]], warnings: list[str]) -> None:
    """One grouped warning naming each pool and instant that has rows of different prices
    (the series sorts by time then price, so the highest of them is the one looked up)."""
    conflicts: list[str] = []
    for (itype, zone), series in sorted(rows.items()):
        prices: dict[datetime, set[float]] = {}
        for at, price in series:
            prices.setdefault(at, set()).add(price)
        conflicts += [
            f"{itype} in {zone} at {at.isoformat()} ({' and '.join(f'{p:g}' for p in sorted(ps))})"
            for at, ps in sorted(prices.items())
            if len(ps) > 1
        ]
    if conflicts:
        head = plural(len(conflicts), "pool instant")
        warnings.append(
            grouped(
                f"{path}: field SpotPriceHistory: {head} with rows of different prices "
                "(the highest is used)",
                conflicts,
            )
        )


def load_price_history(
    path: Path,
    *,
    zones: Sequence[str],
    start: datetime,
    warnings: list[str],
    instance_types: Collection[str] | None = None,
    subnet_zones: Collection[str] | None = None,
    start_field: str = "spec.startTime",
) -> dict[Pool, tuple[tuple[float, float], ...]]:
    """Per pool, ``(seconds from start, USD per hour)`` sorted by time (module docstring).
    Rows for a type outside ``instance_types`` (the region's
    offered types) or a zone outside ``subnet_zones`` draw one warning naming them (None:
    no check); ``start_field`` names ``start`` in the warning for a history that begins
    after it.

    Raises:
        InputError: not the CLI's JSON, a row missing a field or with a bad price, time or a
            zone outside ``zones`` (naming ``SpotPriceHistory[i].<field>``), or no Linux row.
    """
    out, skipped = _history_rows(path, zones)
    _warn_conflicts(path, out, warnings)
    if skipped:
        warnings.append(
            f"{path}: {plural(skipped, 'row')} for products other than Linux/UNIX "
            f"{'is' if skipped == 1 else 'are'} ignored"
        )
    _warn_unused(
        path,
        "SpotPriceHistory[].InstanceType",
        "rows for {} the region does not offer are ignored",
        {t for t, _ in out},
        instance_types,
        warnings,
    )
    _warn_unused(
        path,
        "SpotPriceHistory[].AvailabilityZone",
        "rows for {} no subnet is in are ignored",
        {z for _, z in out},
        subnet_zones,
        warnings,
    )
    first_s = min((at - start).total_seconds() for series in out.values() for at, _ in series)
    if first_s > 0:
        warnings.append(
            f"{path}: field SpotPriceHistory: the first row is {first_s / 3600:.1f} h after "
            f"{start_field}, so every instant before it uses that row's price; set "
            f"{start_field} inside the history to replay it"
        )
    return {
        pool: tuple(sorted(((at - start).total_seconds(), price) for at, price in series))
        for pool, series in sorted(out.items())
    }


def _latest(rows: Mapping[Pool, Sequence[_Row]]) -> datetime:
    return max(at for series in rows.values() for at, _ in series)


def history_end(path: Path, *, zones: Sequence[str]) -> datetime:
    """The latest row's time of a price history file (its "now": the instant a dry run
    without another instant looks its prices up at).

    Raises:
        InputError: as ``load_price_history``.
    """
    return _latest(_history_rows(path, zones)[0])


def load_placement_scores(
    path: Path,
    *,
    region: str,
    zone_names: Mapping[str, str],
    instance_types: Sequence[str] | None,
    warnings: list[str],
    offered_types: Collection[str] | None = None,
    subnet_zones: Collection[str] | None = None,
) -> dict[Pool, float]:
    """Per pool (``("*", zone)`` without ``instance_types``), the placement score. Request
    types outside ``offered_types`` and zones outside ``subnet_zones`` draw one warning
    naming them (None: no check).

    Raises:
        InputError: not the CLI's JSON, an entry without ``AvailabilityZoneId`` (a regional
            score: run the command with ``--single-availability-zone``), an unknown zone id
            or a score outside 1-10.
    """
    entries = _list_of(
        _load_json(path, "spot placement scores"),
        "SpotPlacementScores",
        path,
        "get-spot-placement-scores",
    )
    out: dict[Pool, float] = {}
    other_regions: set[str] = set()
    for i, e in enumerate(entries):
        where = f"SpotPlacementScores[{i}]"
        if not isinstance(e, dict):
            raise InputError("must be an object", file=str(path), field=where)
        if e.get("Region", region) != region:
            other_regions.add(str(e.get("Region")))
            continue
        zone_id = e.get("AvailabilityZoneId")
        if not isinstance(zone_id, str) or not zone_id:
            raise InputError(
                "missing: Joiner needs per-zone scores (run get-spot-placement-scores with "
                "--single-availability-zone)",
                file=str(path),
                field=f"{where}.AvailabilityZoneId",
            )
        zone = zone_names.get(zone_id)
        if zone is None:
            raise InputError(
                f"zone id {zone_id!r} is not a zone of {region} "
                f"(ids: {', '.join(sorted(zone_names))})",
                file=str(path),
                field=f"{where}.AvailabilityZoneId",
            )
        score = e.get("Score")
        if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 10:
            raise InputError(
                f"{score!r} is not a score from 1 to 10", file=str(path), field=f"{where}.Score"
            )
        for name in instance_types or ("*",):
            out[(name, zone)] = float(score)
    _warn_unused(
        path,
        "instanceTypes",
        "scores for {} the region does not offer are ignored",
        instance_types or (),
        offered_types,
        warnings,
    )
    _warn_unused(
        path,
        "SpotPlacementScores[].AvailabilityZoneId",
        "scores for {} no subnet is in are ignored",
        {z for _, z in out},
        subnet_zones,
        warnings,
    )
    if other_regions:
        warnings.append(
            f"{path}: scores for {', '.join(sorted(other_regions))} are ignored (the scenario "
            f"runs in {region})"
        )
    return out


def _in_scenario(exc: InputError, field: str) -> InputError:
    """An error in a data file, located at the scenario field that names the file (as
    events and faults are): the scenario fills in its own file and object, and the message
    names the data file, which may not exist."""
    inner = f".{exc.field}" if exc.field else ""
    where = f"{exc.file}: " if exc.file else ""
    return InputError(f"{where}{exc.detail}", field=f"{field}{inner}")


def market_inputs(
    base: Path,
    *,
    price_history: str | None,
    placement_scores: Sequence[tuple[str, Sequence[str] | None]],
    region: str,
    zones: Mapping[str, str],
    start: datetime,
    warnings: list[str],
    field_prefix: str = "spec.cloud",
    offered_types: Collection[str] | None = None,
    subnet_zones: Collection[str] | None = None,
) -> MarketInputs:
    """Both inputs, paths relative to ``base``; ``zones`` maps zone names to ids;
    ``offered_types`` and ``subnet_zones`` as the loaders'.

    Raises:
        InputError: as the loaders, with the scenario field as the location prefix.
    """
    prices: dict[Pool, tuple[tuple[float, float], ...]] = {}
    if price_history is not None:
        try:
            prices = load_price_history(
                base / price_history,
                zones=sorted(zones),
                start=start,
                warnings=warnings,
                instance_types=offered_types,
                subnet_zones=subnet_zones,
            )
        except InputError as exc:
            raise _in_scenario(exc, f"{field_prefix}.spotPriceHistory") from exc
    scores: dict[Pool, float] = {}
    names = {zid: name for name, zid in zones.items()}
    for i, (file, types) in enumerate(placement_scores):
        try:
            got = load_placement_scores(
                base / file,
                region=region,
                zone_names=names,
                instance_types=types,
                warnings=warnings,
                offered_types=offered_types,
                subnet_zones=subnet_zones,
            )
        except InputError as exc:
            raise _in_scenario(exc, f"{field_prefix}.spotPlacementScores[{i}]") from exc
        for pool, score in got.items():
            # Several requests may cover a type: the best score is what a fleet would see.
            scores[pool] = max(score, scores.get(pool, 0.0))
    return MarketInputs(prices=prices, scores=scores)
