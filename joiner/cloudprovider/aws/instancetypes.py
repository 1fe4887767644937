"""Instance types and zonal offerings from the EC2 API, as Karpenter's instance-type provider
discovers them (karpenter-provider-aws ``pkg/providers/instancetype/instancetype.go``
``UpdateInstanceTypes``, ``UpdateInstanceTypeOfferings``).

DescribeInstanceTypes with ``supported-virtualization-type=hvm`` and
``processor-info.supported-architecture`` in {x86_64, arm64}, 100 per page;
DescribeInstanceTypeOfferings with ``LocationType=availability-zone``, 1,000 per page;
DescribeAvailabilityZones for zone ids. The result is a ``Catalog`` (the same model the
packaged data gives the simulated cloud), so ``build_instance_types`` applies Karpenter's
capacity and overhead formulas unchanged. Facts DescribeInstanceTypes lacks (branch ENIs,
trunking, Karpenter's bandwidth table) come from the packaged catalog when it lists the type.

The data is kept for ``refresh_interval_s`` (Karpenter's ``InstanceTypesZonesAndOfferingsTTL``,
5 minutes) on the injected clock, then fetched again on the next use.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from joiner.cloudprovider.aws.api import aws_errors
from joiner.cloudprovider.catalog import Catalog, InstanceTypeInfo

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

log = logging.getLogger(__name__)

#: EC2 architecture -> ``kubernetes.io/arch`` (Karpenter ``AWSToKubeArchitectures``).
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
#: Karpenter's ``instanceTypeScheme``: category, optional ``-NNtb``, generation digits.
_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")
#: Karpenter's InstanceTypesZonesAndOfferingsTTL.
DEFAULT_REFRESH_INTERVAL_S = 300.0


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def info_from_description(desc: Mapping[str, Any], packaged: Catalog | None) -> InstanceTypeInfo:
    """One DescribeInstanceTypes item as ``InstanceTypeInfo`` (units as in the catalog).

    Max pods = ENIs on the default network card x (IPv4 per ENI - 1) + 2; a type the packaged
    catalog knows takes its Karpenter-table values for pods, branch ENIs and bandwidth.

    Raises:
        KeyError: the item lacks ``InstanceType``, ``VCpuInfo`` or ``MemoryInfo``.
    """
    name = str(desc["InstanceType"])
    family, _, size = name.partition(".")
    match = _SCHEME.match(name)
    processor = desc.get("ProcessorInfo", {})
    archs = tuple(
        ARCHITECTURES[a] for a in processor.get("SupportedArchitectures", []) if a in ARCHITECTURES
    )
    gpu_info = desc.get("GpuInfo") or {}
    gpus = gpu_info.get("Gpus") or []
    gpu = gpus[0] if gpus else {}
    neuron = desc.get("NeuronInfo") or {}
    devices = neuron.get("NeuronDevices") or []
    device = devices[0] if devices else {}
    network = desc.get("NetworkInfo") or {}
    default_card = network.get("DefaultNetworkCardIndex", 0)
    enis = network.get("MaximumNetworkInterfaces", 0)
    for card in network.get("NetworkCards") or []:
        if card.get("NetworkCardIndex") == default_card:
            enis = card.get("MaximumNetworkInterfaces", enis)
    ipv4 = network.get("Ipv4AddressesPerInterface")
    ebs = desc.get("EbsInfo") or {}
    ebs_opt = ebs.get("EbsOptimizedInfo") or {}
    storage = desc.get("InstanceStorageInfo") or {}
    known = None
    if packaged is not None:
        try:
            known = packaged.info(name)
        except KeyError:
            known = None
    max_pods = _int(enis) * (_int(ipv4) - 1) + 2 if ipv4 else 0
    return InstanceTypeInfo(
        name=name,
        family=family,
        size=size,
        category=match.group(1) if match else family,
        generation=int(match.group(3)) if match else None,
        current_generation=bool(desc.get("CurrentGeneration", False)),
        vcpu=_int(desc["VCpuInfo"]["DefaultVCpus"]),
        memory_mib=_int(desc["MemoryInfo"]["SizeInMiB"]),
        architecture="amd64" if "amd64" in archs else (archs[0] if archs else ""),
        architectures=archs,
        cpu_manufacturer=str(processor.get("Manufacturer", "")).lower(),
        hypervisor=str(desc.get("Hypervisor", "")),
        bare_metal=bool(desc.get("BareMetal", False)),
        usage_classes=tuple(
            sorted(u for u in desc.get("SupportedUsageClasses", []) if u in ("on-demand", "spot"))
        ),
        gpu_count=_int(gpu.get("Count")),
        gpu_name=str(gpu.get("Name", "")),
        gpu_manufacturer=str(gpu.get("Manufacturer", "")),
        gpu_memory_mib=_int((gpu.get("MemoryInfo") or {}).get("SizeInMiB"))
        if len(gpus) == 1
        else 0,
        gpu_memory_mib_total=_int(gpu_info.get("TotalGpuMemoryInMiB")),
        neuron_devices=_int(device.get("Count")),
        neuron_cores=_int(device.get("Count")) * _int((device.get("CoreInfo") or {}).get("Count")),
        neuron_name=str(device.get("Name", "")),
        efa_interfaces=_int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces")),
        local_storage_gb=_int(storage.get("TotalSizeInGB")),
        local_nvme=storage.get("TotalSizeInGB") is not None
        and storage.get("NvmeSupport", "unsupported") != "unsupported",
        network_bandwidth_mbps=known.network_bandwidth_mbps if known else None,
        ebs_bandwidth_mbps=(
            _int(ebs_opt.get("MaximumBandwidthInMbps"))
            if ebs.get("EbsOptimizedSupport") == "default" and ebs_opt
            else None
        ),
        ebs_baseline_mbps=_int(ebs_opt["BaselineBandwidthInMbps"])
        if "BaselineBandwidthInMbps" in ebs_opt
        else None,
        max_pods_eni=known.max_pods_eni if known else max_pods,
        ipv4_per_eni=known.ipv4_per_eni if known else (_int(ipv4) or None),
        trunking_compatible=known.trunking_compatible if known else False,
        branch_interfaces=known.branch_interfaces if known else 0,
    )


@dataclass(frozen=True, slots=True)
class Discovery:
    """One snapshot of the EC2 API: type facts, (zone, zone id) pairs and where each type is
    offered (zone names, sorted), taken at ``fetched_at_s``."""

    infos: dict[str, InstanceTypeInfo]
    zones: list[tuple[str, str]]
    offered: dict[str, tuple[str, ...]]
    fetched_at_s: float


class InstanceTypeSource:
    """Discovers instance types and offerings for one region and keeps them fresh.

    ``now`` returns seconds; ``discovery()`` refetches once ``refresh_interval_s`` has passed
    since the last fetch. One source may be shared by several providers of the same region.
    """

    def __init__(
        self,
        ec2: EC2Client,
        region: str,
        now: Callable[[], float],
        *,
        packaged: Catalog | None = None,
        refresh_interval_s: float = DEFAULT_REFRESH_INTERVAL_S,
    ) -> None:
        self._ec2 = ec2
        self.region = region
        self._now = now
        self._packaged = packaged
        self.refresh_interval_s = refresh_interval_s
        self._current: Discovery | None = None
        self._catalog: tuple[object, Catalog] | None = None
        self.fetches = 0

    def discovery(self) -> Discovery:
        """The current snapshot, fetched when missing or older than the refresh interval.

        Raises:
            AWSError: a describe call failed (after botocore's retries) and there is no
                snapshot yet.
        """
        now = self._now()
        current = self._current
        if current is not None and now - current.fetched_at_s < self.refresh_interval_s:
            return current
        try:
            self._current = self._fetch(now)
        except Exception:
            if current is None:
                raise
            log.warning(
                "instance-type refresh failed; keeping the data from %.0f s ago",
                now - current.fetched_at_s,
                exc_info=True,
            )
            return current
        return self._current

    def prime(self, discovery: Discovery) -> None:
        """Use ``discovery`` as the current snapshot (a warm start, or a test's fixed data);
        it is refreshed like a fetched one once ``refresh_interval_s`` has passed."""
        self._current = discovery

    def _fetch(self, now: float) -> Discovery:
        with aws_errors():
            infos = self._infos()
            offered = self._offered()
            zones_resp = self._ec2.describe_availability_zones()
        zones = sorted(
            (str(z["ZoneName"]), str(z["ZoneId"]))
            for z in zones_resp.get("AvailabilityZones", [])
            if z.get("ZoneType", "availability-zone") == "availability-zone"
        )
        self.fetches += 1
        return Discovery(
            infos=infos,
            zones=zones,
            offered={k: tuple(sorted(v)) for k, v in sorted(offered.items()) if k in infos},
            fetched_at_s=now,
        )

    def _infos(self) -> dict[str, InstanceTypeInfo]:
        """Every hvm x86_64/arm64 type DescribeInstanceTypes lists, over all its pages."""
        infos: dict[str, InstanceTypeInfo] = {}
        for page in self._ec2.get_paginator("describe_instance_types").paginate(
            Filters=[
                {"Name": "supported-virtualization-type", "Values": ["hvm"]},
                {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
            ],
            PaginationConfig={"PageSize": 100},
        ):
            for desc in page.get("InstanceTypes", []):
                info = info_from_description(desc, self._packaged)
                if info.architectures:
                    infos[info.name] = info
        return infos

    def _offered(self) -> dict[str, set[str]]:
        """Type -> the zones DescribeInstanceTypeOfferings lists it in, over all its pages."""
        offered: dict[str, set[str]] = {}
        for page in self._ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", PaginationConfig={"PageSize": 1000}
        ):
            for o in page.get("InstanceTypeOfferings", []):
                offered.setdefault(str(o["InstanceType"]), set()).add(str(o["Location"]))
        return offered

    def catalog(
        self,
        on_demand: Mapping[str, float],
        spot: Mapping[str, tuple[float, int]],
        *,
        prices_key: object = None,
    ) -> Catalog:
        """A ``Catalog`` for this region from the current snapshot, with ``on_demand`` prices
        (USD/hour by type) and Spot Advisor rows ``spot`` (savings %, bucket by type).

        With a ``prices_key`` (anything that changes when the prices do), the catalog is
        reused while the snapshot and the key stay the same, so providers sharing this source
        share the memoised instance types built from it.
        """
        d = self.discovery()
        key = (d.fetched_at_s, prices_key)
        if prices_key is not None and self._catalog is not None and self._catalog[0] == key:
            return self._catalog[1]
        catalog = Catalog(
            dict(d.infos),
            {self.region: list(d.zones)},
            {self.region: dict(d.offered)},
            {self.region: dict(on_demand)},
            {self.region: dict(spot)},
        )
        self._catalog = (key, catalog)
        return catalog
