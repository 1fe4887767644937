"""On-demand and spot prices, as Karpenter's pricing provider keeps them (karpenter-provider-aws
``pkg/providers/pricing/pricing.go`` ``UpdateOnDemandPricing``, ``UpdateSpotPricing``).

* On-demand: the packaged table for the region (or the us-east-1 table, flagged estimated,
  when the region has none), replaced type by type by a Pricing API ``GetProducts`` refresh:
  serviceCode AmazonEC2 with regionCode, operatingSystem Linux, preInstalledSw NA,
  capacitystatus Used, marketoption OnDemand and tenancy Shared / productFamily
  "Compute Instance"; a second query gets metal types (tenancy Dedicated, "Compute Instance
  (bare metal)"). A failed refresh keeps what was there.
* Spot: ``DescribeSpotPriceHistory`` for "Linux/UNIX" and "Linux/UNIX (Amazon VPC)" from
  ``StartTime`` = now, the newest price per (type, zone) merged over the old ones. Until the
  first successful spot refresh a spot offering costs the type's on-demand price; after it, a
  (type, zone) without a spot price has none (its offering is unavailable).

Both refresh at most every ``refresh_interval_s`` (Karpenter's pricing controller: 12 h) on
the injected clock. Prices are USD per instance-hour.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from joiner.cloudprovider.aws.api import AWSError, aws_errors
from joiner.cloudprovider.catalog import Catalog

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_pricing.type_defs import FilterTypeDef

log = logging.getLogger(__name__)

#: Karpenter's pricing controller period.
DEFAULT_PRICE_REFRESH_INTERVAL_S = 12 * 3600.0
SPOT_PRODUCT_DESCRIPTIONS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")


def _pricing_filters(region: str, tenancy: str, family: str) -> list[FilterTypeDef]:
    fields = (
        ("regionCode", region),
        ("serviceCode", "AmazonEC2"),
        ("preInstalledSw", "NA"),
        ("operatingSystem", "Linux"),
        ("capacitystatus", "Used"),
        ("marketoption", "OnDemand"),
        ("tenancy", tenancy),
        ("productFamily", family),
    )
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in fields]


def parse_price_list_item(item: str | dict[str, Any]) -> tuple[str, float] | None:
    """(instance type, USD per hour) from one ``GetProducts`` ``PriceList`` entry, or None when
    it has no instance type or no positive USD on-demand price."""
    doc = json.loads(item) if isinstance(item, str) else item
    name = doc.get("product", {}).get("attributes", {}).get("instanceType")
    if not name:
        return None
    for term in doc.get("terms", {}).get("OnDemand", {}).values():
        for dim in term.get("priceDimensions", {}).values():
            usd = dim.get("pricePerUnit", {}).get("USD")
            if usd is not None and float(usd) > 0:
                return str(name), float(usd)
    return None


class PriceSource:
    """On-demand and spot prices for one region; see the module docstring for the rules.

    ``now`` returns seconds since the Unix epoch (it also dates the spot-history query).
    """

    def __init__(
        self,
        ec2: EC2Client,
        pricing: PricingClient,
        region: str,
        now: Callable[[], float],
        *,
        packaged: Catalog,
        refresh_interval_s: float = DEFAULT_PRICE_REFRESH_INTERVAL_S,
        pricing_api: bool = True,
    ) -> None:
        self._ec2 = ec2
        self._pricing = pricing
        self.region = region
        self._now = now
        self._packaged = packaged
        self.refresh_interval_s = refresh_interval_s
        self.pricing_api = pricing_api
        self._on_demand: dict[str, float] = {}
        self._on_demand_estimated = False
        self._on_demand_at_s: float | None = None
        self._spot: dict[tuple[str, str], tuple[datetime, float]] = {}
        self._spot_at_s: float | None = None
        self._spot_attempt_s: float | None = None
        #: Bumped whenever any price changes, so callers can cache what they derive.
        self.version = 0
        self._load_static()

    def _load_static(self) -> None:
        table: dict[str, float] = {}
        estimated = False
        for name in self._packaged.type_names():
            quote = self._packaged.on_demand_price(self.region, name)
            if quote is not None:
                table[name] = quote.price_per_hour
                estimated = quote.estimated
        self._on_demand = table
        self._on_demand_estimated = estimated

    # -- reading ---------------------------------------------------------------------------

    def on_demand_prices(self) -> dict[str, float]:
        """Type -> on-demand USD/hour, refreshing first when due."""
        self.refresh()
        return dict(self._on_demand)

    def on_demand_price(self, instance_type: str) -> float | None:
        """On-demand USD/hour of one type from the prices held now (no refresh), or None."""
        return self._on_demand.get(instance_type)

    @property
    def on_demand_estimated(self) -> bool:
        """True while the on-demand prices are another region's table (no API refresh yet)."""
        return self._on_demand_estimated

    def spot_price(self, instance_type: str, zone: str) -> float | None:
        """Spot USD/hour for (type, zone): the newest history price; before any spot refresh
        the on-demand price; None when unknown."""
        if self._spot_at_s is None:
            return self._on_demand.get(instance_type)
        found = self._spot.get((instance_type, zone))
        return found[1] if found else None

    # -- refreshing ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Refresh on-demand and spot prices that are older than the refresh interval. A
        failure is logged and the old prices stay."""
        now = self._now()
        if self.pricing_api and (
            self._on_demand_at_s is None or now - self._on_demand_at_s >= self.refresh_interval_s
        ):
            self._on_demand_at_s = now
            try:
                self.refresh_on_demand()
            except AWSError as exc:
                log.warning("on-demand price refresh failed (%s); keeping the packaged table", exc)
        if self._spot_attempt_s is None or now - self._spot_attempt_s >= self.refresh_interval_s:
            self._spot_attempt_s = now
            try:
                self.refresh_spot()
            except AWSError as exc:
                log.warning("spot price refresh failed (%s); keeping the old prices", exc)

    def refresh_on_demand(self) -> int:
        """Fetch on-demand prices from the Pricing API now; returns the number of types priced.

        Raises:
            AWSError: a GetProducts page failed after botocore's retries.
        """
        found: dict[str, float] = {}
        paginator = self._pricing.get_paginator("get_products")
        for tenancy, family in (
            ("Shared", "Compute Instance"),
            ("Dedicated", "Compute Instance (bare metal)"),
        ):
            with aws_errors():
                for page in paginator.paginate(
                    ServiceCode="AmazonEC2",
                    Filters=_pricing_filters(self.region, tenancy, family),
                    PaginationConfig={"PageSize": 100},
                ):
                    for item in page.get("PriceList", []):
                        parsed = parse_price_list_item(item)
                        if parsed is not None:
                            found.setdefault(parsed[0], parsed[1])
        if found:
            self._on_demand.update(found)
            self._on_demand_estimated = False
            self.version += 1
        return len(found)

    def refresh_spot(self) -> int:
        """Fetch current spot prices now and merge them; returns the number of (type, zone)
        pairs seen.

        Raises:
            AWSError: a DescribeSpotPriceHistory page failed after botocore's retries.
        """
        start = datetime.fromtimestamp(self._now(), UTC)
        seen = 0
        pages = self._ec2.get_paginator("describe_spot_price_history").paginate(
            ProductDescriptions=list(SPOT_PRODUCT_DESCRIPTIONS),
            StartTime=start,
            PaginationConfig={"PageSize": 1000},
        )
        with aws_errors():
            for page in pages:
                for row in page.get("SpotPriceHistory", []):
                    self._merge_spot(row, start)
                    seen += 1
        self._spot_at_s = self._now()
        self.version += 1
        return seen

    def _merge_spot(self, row: Mapping[str, Any], start: datetime) -> None:
        """Keep one ``SpotPriceHistory`` row when it is the newest for its (type, zone)."""
        key = (str(row["InstanceType"]), str(row["AvailabilityZone"]))
        stamp = row.get("Timestamp") or start
        if isinstance(stamp, str):
            stamp = datetime.fromisoformat(stamp)
        old = self._spot.get(key)
        if old is None or stamp >= old[0]:
            self._spot[key] = (stamp, float(row["SpotPrice"]))
