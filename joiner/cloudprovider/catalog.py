"""The packaged EC2 catalog: instance-type facts, zones, offerings, prices and Spot Advisor data.

Loaded once per process from the gzip CSVs in ``joiner.cloudprovider.data`` (built offline by
``tools/build_catalog.py``; provenance in that package's ``SOURCES.md``) through
``importlib.resources``. Nothing here reads the raw shared data at run time. The per-region
tables (offerings, on-demand prices, Spot Advisor rows) are split by region at load and each
region is parsed on first use (``_RegionTables``).

Units: memory in MiB, bandwidth in Mbps (megabits per second), local storage in GB, prices in
USD per instance-hour, savings in percent of the on-demand price, interruption buckets are
the Spot Advisor's indexes 0..4 (``<5%``, ``5-10%``, ``10-15%``, ``15-20%``, ``>20%`` of
instances reclaimed per month).

Price rules:

* On-demand: the region's own table; a region without any table uses the us-east-1 table,
  flagged as estimated (Karpenter's pricing provider does the same at start-up:
  karpenter-provider-aws ``pkg/providers/pricing/pricing.go`` ``Reset``).
* Spot: the Spot Advisor row for (region, type); a type without a row gets the median
  savings and median bucket of its family in that region (else of the whole region),
  flagged as estimated. Spot price = on-demand x (1 - savings/100), Joiner's model: the AWS
  Spot Instance Advisor gives savings against on-demand (its feed
  ``spot-advisor-data.json``, https://aws.amazon.com/ec2/spot/instance-advisor/).
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import math
import re
import statistics
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import TypeVar

#: Region whose on-demand table is used where a region has none (Karpenter's fallback).
FALLBACK_PRICE_REGION = "us-east-1"

#: Monthly share of instances reclaimed for each Spot Advisor bucket: the middle of each
#: bucket, and 25% for ">20%" (the calibration targets of docs/spot-market.md).
BUCKET_MONTHLY_PROBABILITY = (0.025, 0.075, 0.125, 0.175, 0.25)

#: Hours in the Spot Advisor's "trailing month".
HOURS_PER_MONTH = 720.0

_DATA_PACKAGE = "joiner.cloudprovider.data"

V = TypeVar("V")


class UnknownRegionError(ValueError):
    """A region the packaged catalog knows nothing about."""


def interruption_rate_per_hour(bucket: int) -> float:
    """Spot reclaim hazard per hour for a Spot Advisor bucket: ``-ln(1 - p) / 720``.

    ``p`` is the monthly reclaim probability of the bucket (2.5%, 7.5%, 12.5%, 17.5%, 25% for
    buckets 0..4), so bucket 0 is about 3.5e-5/h and bucket 4 about 4e-4/h.

    Raises:
        ValueError: ``bucket`` is not 0..4.
    """
    if not 0 <= bucket < len(BUCKET_MONTHLY_PROBABILITY):
        raise ValueError(f"interruption bucket must be 0..4, got {bucket}")
    return -math.log(1.0 - BUCKET_MONTHLY_PROBABILITY[bucket]) / HOURS_PER_MONTH


def spot_price(on_demand: float, savings_pct: float) -> float:
    """Spot price per hour from the on-demand price and a Spot Advisor saving (percent)."""
    return on_demand * (1.0 - savings_pct / 100.0)


@dataclass(frozen=True, slots=True)
class InstanceTypeInfo:
    """Raw facts about one EC2 instance type (DescribeInstanceTypes plus Karpenter's tables).

    Attributes:
        name: e.g. ``m5.large``.
        family: the part before the dot (``m5``, ``c7i-flex``).
        size: the part after the dot (``large``).
        category: Karpenter's category from the name (``m``, ``inf``, ``u``).
        generation: Karpenter's generation digits from the name (``m7i`` -> 7), or None.
        current_generation: EC2's current-generation flag.
        vcpu: default vCPUs.
        memory_mib: memory in MiB as EC2 reports it (before any overhead).
        architecture: ``amd64`` or ``arm64`` (amd64 when a type lists both).
        architectures: every supported Kubernetes architecture.
        cpu_manufacturer: lower case (``intel``, ``amd``, ``aws``).
        hypervisor: ``nitro``, ``xen`` or empty (bare metal).
        bare_metal: True for ``*.metal`` types.
        usage_classes: subset of (``on-demand``, ``spot``), sorted.
        gpu_count: GPUs (0 for none; fractional-GPU types report 0).
        gpu_name: GPU model as EC2 spells it (``T4``), empty when none.
        gpu_manufacturer: ``NVIDIA``, ``AMD``, ``Habana`` or empty.
        gpu_memory_mib: memory per GPU in MiB (what Karpenter's label carries), 0 when none.
        gpu_memory_mib_total: total GPU memory in MiB.
        neuron_devices: AWS Inferentia/Trainium devices.
        neuron_cores: Neuron cores over all devices.
        neuron_name: ``Inferentia2``, ``Trainium`` ... or empty.
        efa_interfaces: maximum EFA interfaces.
        local_storage_gb: instance-store total in GB (0 when none).
        local_nvme: True when the instance store is NVMe (Karpenter's local-nvme label).
        network_bandwidth_mbps: baseline network bandwidth (Karpenter's table), if known.
        ebs_bandwidth_mbps: maximum EBS bandwidth when EBS-optimised by default (the value of
            Karpenter's ``instance-ebs-bandwidth`` label), else None.
        ebs_baseline_mbps: baseline EBS bandwidth, if known.
        max_pods_eni: ENIs on the default card x (IPv4 per ENI - 1) + 2 (EKS/Karpenter).
        ipv4_per_eni: IPv4 addresses per ENI from Karpenter's VPC limits, if listed there.
        trunking_compatible: supports security groups for pods (branch ENIs).
        branch_interfaces: branch ENIs (``vpc.amazonaws.com/pod-eni``) when trunking.
    """

    name: str
    family: str
    size: str
    category: str
    generation: int | None
    current_generation: bool
    vcpu: int
    memory_mib: int
    architecture: str
    architectures: tuple[str, ...]
    cpu_manufacturer: str
    hypervisor: str
    bare_metal: bool
    usage_classes: tuple[str, ...]
    gpu_count: int
    gpu_name: str
    gpu_manufacturer: str
    gpu_memory_mib: int
    gpu_memory_mib_total: int
    neuron_devices: int
    neuron_cores: int
    neuron_name: str
    efa_interfaces: int
    local_storage_gb: int
    local_nvme: bool
    network_bandwidth_mbps: int | None
    ebs_bandwidth_mbps: int | None
    ebs_baseline_mbps: int | None
    max_pods_eni: int
    ipv4_per_eni: int | None
    trunking_compatible: bool
    branch_interfaces: int


@dataclass(frozen=True, slots=True)
class PriceQuote:
    """An on-demand price in USD per hour; ``estimated`` when borrowed from another region."""

    price_per_hour: float
    estimated: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class SpotQuote:
    """Spot Advisor facts for (region, type): savings % vs on-demand and interruption bucket.

    ``estimated`` is True when the type has no advisor row and the values are the median of
    its family (or of the region); ``note`` then says which.
    """

    savings_pct: float
    interruption_bucket: int
    estimated: bool
    note: str = ""


def _rows(filename: str) -> Iterator[dict[str, str]]:
    raw = resources.files(_DATA_PACKAGE).joinpath(filename).read_bytes()
    text = gzip.decompress(raw).decode("utf-8")
    yield from csv.DictReader(io.StringIO(text))


def _opt_int(value: str) -> int | None:
    return int(value) if value else None


def _info_from_row(r: dict[str, str]) -> InstanceTypeInfo:
    archs = tuple(r["architectures"].split(";"))
    return InstanceTypeInfo(
        name=r["name"],
        family=r["family"],
        size=r["size"],
        category=r["category"],
        generation=_opt_int(r["generation"]),
        current_generation=r["current_generation"] == "1",
        vcpu=int(r["vcpu"]),
        memory_mib=int(r["memory_mib"]),
        architecture="amd64" if "amd64" in archs else archs[0],
        architectures=archs,
        cpu_manufacturer=r["cpu_manufacturer"],
        hypervisor=r["hypervisor"],
        bare_metal=r["bare_metal"] == "1",
        usage_classes=tuple(u for u in r["usage_classes"].split(";") if u),
        gpu_count=int(r["gpu_count"]),
        gpu_name=r["gpu_name"],
        gpu_manufacturer=r["gpu_manufacturer"],
        gpu_memory_mib=int(r["gpu_memory_mib"] or 0),
        gpu_memory_mib_total=int(r["gpu_memory_mib_total"] or 0),
        neuron_devices=int(r["neuron_devices"]),
        neuron_cores=int(r["neuron_cores"]),
        neuron_name=r["neuron_name"],
        efa_interfaces=int(r["efa_interfaces"]),
        local_storage_gb=int(r["local_storage_gb"]),
        local_nvme=r["local_nvme"] == "1",
        network_bandwidth_mbps=_opt_int(r["network_bandwidth_mbps"]),
        ebs_bandwidth_mbps=_opt_int(r["ebs_max_mbps"]),
        ebs_baseline_mbps=_opt_int(r["ebs_baseline_mbps"]),
        max_pods_eni=int(r["max_pods_eni"]),
        ipv4_per_eni=_opt_int(r["ipv4_per_eni"]),
        trunking_compatible=r["trunking_compatible"] == "1",
        branch_interfaces=int(r["branch_interfaces"] or 0),
    )


def _median_quote(rows: list[tuple[float, int]], scope: str) -> SpotQuote:
    """The estimated quote of ``rows`` (savings %, interruption bucket): the median savings
    and the lower median bucket; ``scope`` says which rows they are."""
    savings = float(statistics.median(s for s, _ in rows))
    bucket = int(statistics.median_low(b for _, b in rows))
    return SpotQuote(savings, bucket, True, f"no Spot Advisor row; median of {scope}")


class Catalog:
    """Read-only view of the packaged catalog. Obtain it with ``Catalog.load()``."""

    __slots__ = (
        "_infos",
        "_known_regions",
        "_names",
        "_offered",
        "_on_demand",
        "_spot",
        "_spot_estimates",
        "_spot_families",
        "_spot_region",
        "_zones",
    )

    def __init__(
        self,
        infos: dict[str, InstanceTypeInfo],
        zones: dict[str, list[tuple[str, str]]],
        offered: Mapping[str, dict[str, tuple[str, ...]]],
        on_demand: Mapping[str, dict[str, float]],
        spot: Mapping[str, dict[str, tuple[float, int]]],
    ) -> None:
        self._infos = infos
        self._names = sorted(infos)
        self._zones = zones
        self._offered = offered
        self._on_demand = on_demand
        self._spot = spot
        self._known_regions = frozenset(zones) | frozenset(on_demand) | frozenset(spot)
        self._spot_estimates: dict[tuple[str, str], SpotQuote] = {}
        self._spot_families: dict[str, dict[str, list[tuple[float, int]]]] = {}
        self._spot_region: dict[str, SpotQuote] = {}

    @staticmethod
    def load() -> Catalog:
        """The packaged catalog, parsed on first use and shared for the rest of the process."""
        return _load_packaged()

    # -- regions and zones ---------------------------------------------------------------

    def regions(self) -> list[str]:
        """Regions with zone data (where instances can be launched), sorted."""
        return sorted(self._zones)

    def zones(self, region: str) -> list[tuple[str, str]]:
        """``(zone name, zone id)`` pairs of ``region``, sorted by name.

        Raises:
            UnknownRegionError: the region has no zone data.
        """
        found = self._zones.get(region)
        if found is None:
            raise UnknownRegionError(
                f"unknown region {region!r}; known regions: {', '.join(self.regions())}"
            )
        return list(found)

    # -- instance types ------------------------------------------------------------------

    def type_names(self) -> list[str]:
        """Every instance type name in the catalog, sorted."""
        return list(self._names)

    def info(self, name: str) -> InstanceTypeInfo:
        """Facts about instance type ``name``.

        Raises:
            KeyError: no such instance type in the catalog.
        """
        try:
            return self._infos[name]
        except KeyError:
            raise KeyError(f"unknown instance type {name!r}") from None

    def offered_types(self, region: str) -> list[str]:
        """Instance types offered in at least one zone of ``region``, sorted.

        Raises:
            UnknownRegionError: the region has no zone data.
        """
        self._check_zone_region(region)
        return sorted(self._offered.get(region, {}))

    def offered_zones(self, region: str, instance_type: str) -> tuple[str, ...]:
        """Zone names of ``region`` that offer ``instance_type``, sorted (empty when none).

        Raises:
            UnknownRegionError: the region has no zone data.
        """
        self._check_zone_region(region)
        return self._offered.get(region, {}).get(instance_type, ())

    # -- prices --------------------------------------------------------------------------

    def on_demand_price(self, region: str, instance_type: str) -> PriceQuote | None:
        """On-demand Linux price of ``instance_type`` in ``region``, or None when unpriced.

        A region with no table at all uses the us-east-1 table and the quote is marked
        estimated (Karpenter's static-pricing fallback). A region that has a table but no row
        for the type has no price (the offering is then unavailable, as in Karpenter).

        Raises:
            UnknownRegionError: the region appears nowhere in the catalog.
        """
        self._check_known_region(region)
        table = self._on_demand.get(region)
        if table is not None:
            price = table.get(instance_type)
            return PriceQuote(price, False) if price is not None else None
        price = self._on_demand.get(FALLBACK_PRICE_REGION, {}).get(instance_type)
        if price is None:
            return None
        return PriceQuote(
            price,
            True,
            f"no on-demand price table for {region}; using {FALLBACK_PRICE_REGION} prices "
            "(Karpenter's fallback)",
        )

    def spot_quote(self, region: str, instance_type: str) -> SpotQuote | None:
        """Spot Advisor savings and interruption bucket for ``instance_type`` in ``region``.

        Without an advisor row, the median savings and median bucket (lower median) of the
        type's family in the region are used, else those of the whole region; the quote is
        then marked estimated. None when the region has no advisor data or the type does not
        support Spot.

        Raises:
            UnknownRegionError: the region appears nowhere in the catalog.
        """
        self._check_known_region(region)
        table = self._spot.get(region)
        if not table:
            return None
        info = self._infos.get(instance_type)
        if info is not None and "spot" not in info.usage_classes:
            return None
        row = table.get(instance_type)
        if row is not None:
            return SpotQuote(row[0], row[1], False)
        family = info.family if info is not None else instance_type.split(".", 1)[0]
        key = (region, family)
        cached = self._spot_estimates.get(key)
        if cached is None:
            cached = self._estimate_spot(region, family, table)
            self._spot_estimates[key] = cached
        return cached

    def _estimate_spot(
        self, region: str, family: str, table: dict[str, tuple[float, int]]
    ) -> SpotQuote:
        by_family = self._spot_families.get(region)
        if by_family is None:
            by_family = {}
            for name in sorted(table):
                info = self._infos.get(name)
                fam = info.family if info is not None else name.split(".", 1)[0]
                by_family.setdefault(fam, []).append(table[name])
            self._spot_families[region] = by_family
        siblings = by_family.get(family)
        if siblings:
            scope = f"family {family} in {region} ({len(siblings)} advisor rows)"
            return _median_quote(siblings, scope)
        # Every family without advisor rows gets the region's median: computed once.
        quote = self._spot_region.get(region)
        if quote is None:
            rows = [table[name] for name in sorted(table)]
            quote = _median_quote(rows, f"all of {region} ({len(rows)} advisor rows)")
            self._spot_region[region] = quote
        return quote

    # -- helpers -------------------------------------------------------------------------

    def _check_zone_region(self, region: str) -> None:
        if region not in self._zones:
            raise UnknownRegionError(
                f"unknown region {region!r}; known regions: {', '.join(self.regions())}"
            )

    def _check_known_region(self, region: str) -> None:
        if region not in self._known_regions:
            raise UnknownRegionError(
                f"unknown region {region!r}; known regions: "
                f"{', '.join(sorted(self._known_regions))}"
            )


@functools.cache
def _load_packaged() -> Catalog:
    infos = {r["name"]: _info_from_row(r) for r in _rows("instance_types.csv.gz")}

    zones: dict[str, list[tuple[str, str]]] = {}
    for r in _rows("zones.csv.gz"):
        zones.setdefault(r["region"], []).append((r["zone_name"], r["zone_id"]))
    for pairs in zones.values():
        pairs.sort()

    def offered(rows: list[list[str]]) -> dict[str, tuple[str, ...]]:
        return {t: tuple(sorted(z for z in zs.split(";") if z)) for _, t, zs, _ids in rows}

    def on_demand(rows: list[list[str]]) -> dict[str, float]:
        return {t: float(price) for _, t, price in rows}

    def spot(rows: list[list[str]]) -> dict[str, tuple[float, int]]:
        return {t: (float(savings), int(bucket)) for _, t, savings, bucket in rows}

    return Catalog(
        infos,
        zones,
        _RegionTables(
            "offerings.csv.gz", ("region", "instance_type", "zones", "zone_ids"), offered
        ),
        _RegionTables(
            "ondemand_prices.csv.gz", ("region", "instance_type", "price_per_hour"), on_demand
        ),
        _RegionTables(
            "spot_advisor.csv.gz",
            ("region", "instance_type", "savings_pct", "interruption_bucket"),
            spot,
        ),
    )


class _RegionTables(Mapping[str, dict[str, V]]):
    """One packaged per-region CSV as ``{region: {instance type: value}}``, each region's
    rows parsed on first use: a run asks for one region, so the other regions' rows (nine
    tenths of the file) are never split into lines or parsed.

    The file's first column is the region; ``columns`` is its header (checked, so a rebuilt
    file with other columns fails loudly); ``parse`` turns one region's rows, in file order,
    into its table (as eager parsing of the whole file would, row by row). The rows are
    sorted (``tools/build_catalog.py``), so each region's rows are one run of the text
    (``_region_runs``); a file whose regions are not contiguous fails loudly too.
    """

    def __init__(
        self,
        filename: str,
        columns: tuple[str, ...],
        parse: Callable[[list[list[str]]], dict[str, V]],
    ) -> None:
        text = gzip.decompress(resources.files(_DATA_PACKAGE).joinpath(filename).read_bytes())
        header, _, body = text.decode("utf-8").partition("\n")
        if tuple(header.split(",")) != columns:
            raise ValueError(f"{filename}: header {header!r}, expected {','.join(columns)}")
        self._runs = _region_runs(body.rstrip("\n"), filename)
        self._parse = parse
        self._tables: dict[str, dict[str, V]] = {}

    def __getitem__(self, region: str) -> dict[str, V]:
        table = self._tables.get(region)
        if table is None:
            table = self._parse(list(csv.reader(self._runs[region].split("\n"))))
            self._tables[region] = table
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(self._runs)

    def __len__(self) -> int:
        return len(self._runs)


def _region_runs(body: str, filename: str) -> dict[str, str]:
    """``{region: its lines}`` of a CSV body (no header) whose first column is the region
    and whose rows are grouped by region; each value is one slice of ``body``, ended by the
    first line of another region (a regular-expression search, not a loop over lines).

    Raises:
        ValueError: a region's rows are not contiguous, or a line has no comma.
    """
    runs: dict[str, str] = {}
    start = 0
    while start < len(body):
        region = body[start : body.index(",", start)]
        if region in runs:
            raise ValueError(f"{filename}: the rows of {region} are not contiguous")
        other = re.compile(f"\n(?!{re.escape(region)},)").search(body, start)
        end = other.start() if other else len(body)
        runs[region] = body[start:end]
        start = end + 1
    return runs
