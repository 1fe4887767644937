"""Build scheduler-facing ``InstanceType`` objects from the catalog, as Karpenter-AWS does.

Every rule mirrors ``aws/karpenter-provider-aws`` ``pkg/providers/instancetype/types.go``
(``NewInstanceType``, ``computeCapacity``) and ``offering/base_resolver.go``
(``ResolveOfferings``). Units: cpu in millicores; memory, ephemeral-storage in bytes;
pods and extended resources as counts; prices in USD per hour.

* Capacity: cpu = vCPU x 1000 m. Memory = (MiB, minus 64 MiB on arm64 for the CMA
  reservation) minus ceil(that x ``vm_memory_overhead_percent``) MiB. Pods = kubelet
  ``maxPods``, else the ENI limit for ENI-limited AMI families (AL2, AL2023, Bottlerocket,
  Custom), else 110 (Windows); ``podsPerCore`` caps it except on Bottlerocket.
  Ephemeral storage = the instance store's total (decimal GB) under ``instanceStorePolicy:
  RAID0`` on a type that has one, else the root volume size, else the AMI family's default
  (20 GiB; 50 GiB on Windows). Extended resources: ``nvidia.com/gpu``, ``amd.com/gpu``,
  ``habana.ai/gaudi``, ``aws.amazon.com/neuron``, ``aws.amazon.com/neuroncore``,
  ``vpc.amazonaws.com/efa`` and ``vpc.amazonaws.com/pod-eni`` (branch ENIs when trunking
  compatible); only non-zero ones.
* Overhead = kube-reserved + system-reserved + eviction threshold. kube-reserved memory is
  (11 x pods + 255) MiB, where AL2/AL2023/Custom always use the ENI-limited pods; cpu is
  6% of the first core, 1% of the second, 0.5% of cores 3-4 and 0.25% above, each tier
  truncated to whole millicores; ephemeral-storage 1 GiB. ``kubeReserved`` and
  ``systemReserved`` entries override per resource. Eviction threshold: 100 MiB memory and
  10% of ephemeral storage, overridden by ``evictionHard`` ``memory.available`` /
  ``nodefs.available`` (absolute, or percent of capacity; 100% means disabled).
* Allocatable = capacity - overhead, per capacity resource, never below 0.
* Requirements: every well-known label; labels without a value are ``DoesNotExist`` (as in
  Karpenter, so a pod asking for a GPU label never matches a type without a GPU).
* Offerings: one per given zone x supported capacity type; available when the type is
  offered in that zone and priced. Spot price = on-demand x (1 - savings/100).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from joiner.api import labels
from joiner.api.objects import KubeletConfig
from joiner.api.quantity import CPU, EPHEMERAL_STORAGE, GIB, MEMORY, MIB, PODS, Resources
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import (
    Catalog,
    InstanceTypeInfo,
    interruption_rate_per_hour,
    spot_price,
)
from joiner.cloudprovider.types import InstanceType, Offering

NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_NEURON = "aws.amazon.com/neuron"
AWS_NEURON_CORE = "aws.amazon.com/neuroncore"
AWS_POD_ENI = "vpc.amazonaws.com/pod-eni"
AWS_EFA = "vpc.amazonaws.com/efa"
AWS_PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"

MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"

#: The EC2NodeClass kubelet block when none is given (every field unset).
DEFAULT_KUBELET = KubeletConfig()
#: EC2NodeClass ``instanceStorePolicy`` value: the instance store as RAID0 ephemeral storage.
RAID0 = "RAID0"
#: Karpenter's default ``VMMemoryOverheadPercent``.
DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.075
#: Default ephemeral (root) volume size for AL2/AL2023/Bottlerocket/Custom.
DEFAULT_EPHEMERAL_BYTES = 20 * GIB
#: Windows AMIs' default ``/dev/sda1`` size.
WINDOWS_EPHEMERAL_BYTES = 50 * GIB
#: Pods per node when the AMI family is not ENI-limited (Windows).
DEFAULT_MAX_PODS = 110

#: ``node.kubernetes.io/windows-build`` per Windows AMI family (Karpenter ``amifamily``).
WINDOWS_BUILDS = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}

#: kube-reserved cpu tiers (start m, end m, fraction), from Karpenter/Bottlerocket.
_CPU_TIERS = (
    (0, 1000, 0.06),
    (1000, 2000, 0.01),
    (2000, 4000, 0.005),
    (4000, 1 << 31, 0.0025),
)

#: Well-known labels an instance type leaves ``DoesNotExist`` when it has no value. The
#: NodePool label and zone id are not instance-type facts (Karpenter omits them); the
#: reservation labels belong to reserved offerings, which their own requirements decide.
_ABSENT_WHEN_EMPTY = tuple(
    sorted(
        labels.WELL_KNOWN_LABELS
        - {
            labels.NODEPOOL,
            labels.ZONE_ID,
            labels.ZONE,
            labels.CAPACITY_RESERVATION_ID,
            labels.CAPACITY_RESERVATION_TYPE,
        }
    )
)


def _family_flags(ami_family: str) -> tuple[bool, bool, bool, bool]:
    """(windows, ENI-limited pod density, ENI-limited kube-reserved memory, podsPerCore).

    Karpenter ``FeatureFlags``: AL2/AL2023/Custom (and unknown families, which Karpenter
    treats as AL2023) use all three; Bottlerocket is ENI-limited but reserves memory for the
    actual pods and ignores podsPerCore; Windows uses 110 pods and the actual pods.
    """
    if ami_family.lower().startswith("windows"):
        return True, False, False, True
    if ami_family.lower() == "bottlerocket":
        return False, True, False, False
    return False, True, True, True


def _memory_capacity_bytes(info: InstanceTypeInfo, overhead_percent: float) -> int:
    """Karpenter ``memory()``: MiB (minus 64 on arm64) minus ceil(MiB x overhead)."""
    mib = info.memory_mib - (64 if info.architecture == "arm64" else 0)
    overhead_mib = math.ceil(float(mib * MIB) * overhead_percent / 1024 / 1024)
    return (mib - overhead_mib) * MIB


def _pods(
    info: InstanceTypeInfo, kubelet: KubeletConfig, eni_limited: bool, pods_per_core: bool
) -> int:
    """Karpenter ``pods()``: maxPods, else ENI-limited pods, else 110; podsPerCore caps it."""
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif eni_limited:
        count = info.max_pods_eni
    else:
        count = DEFAULT_MAX_PODS
    if pods_per_core and kubelet.pods_per_core is not None and kubelet.pods_per_core > 0:
        count = min(count, kubelet.pods_per_core * info.vcpu)
    return count


def kube_reserved_cpu_millis(cpu_millis: int) -> int:
    """kube-reserved cpu in millicores (Karpenter ``kubeReservedResources``, Bottlerocket's
    tiers): 6% of the first 1000 m, 1% of the next 1000 m, 0.5% up to 4000 m, 0.25% above,
    each tier truncated to whole millicores."""
    total = 0
    for start, end, fraction in _CPU_TIERS:
        if cpu_millis >= start:
            span = float(min(cpu_millis, end) - start)
            total += int(span * fraction)
    return total


def _kube_reserved(cpu_millis: int, pods: int, overrides: Sequence[tuple[str, int]]) -> Resources:
    """kube-reserved: (11 x pods + 255) MiB, tiered cpu, 1 GiB ephemeral; user entries win."""
    out: Resources = {
        CPU: kube_reserved_cpu_millis(cpu_millis),
        MEMORY: (11 * pods + 255) * MIB,
        EPHEMERAL_STORAGE: GIB,
    }
    out.update(overrides)
    return out


def _eviction_signal(capacity: int, absolute: int | None, percent: float | None) -> int | None:
    """Karpenter ``computeEvictionSignal``: ceil(capacity / 100 x p) for a percentage (100%
    means disabled, i.e. 0), else the absolute amount."""
    if percent is not None:
        p = 0.0 if percent == 100 else percent
        return math.ceil(float(capacity) / 100 * p)
    return absolute


def _eviction_threshold(
    memory_bytes: int,
    storage_bytes: int,
    eviction_hard: Sequence[tuple[str, int | None, float | None]],
) -> Resources:
    """Eviction threshold: 100 MiB memory and 10% of ephemeral storage, or ``evictionHard``."""
    out: Resources = {
        MEMORY: 100 * MIB,
        EPHEMERAL_STORAGE: math.ceil(float(storage_bytes) / 100 * 10),
    }
    for signal, absolute, percent in eviction_hard:
        if signal == MEMORY_AVAILABLE:
            value = _eviction_signal(memory_bytes, absolute, percent)
            if value is not None:
                out[MEMORY] = value
        elif signal == NODEFS_AVAILABLE:
            value = _eviction_signal(storage_bytes, absolute, percent)
            if value is not None:
                out[EPHEMERAL_STORAGE] = value
    return out


def _sum(*parts: Resources) -> Resources:
    out: Resources = {}
    for part in parts:
        for key in sorted(part):
            out[key] = out.get(key, 0) + part[key]
    return out


def _kebab(value: str) -> str:
    """Karpenter ``lowerKabobCase``: lower case, spaces to dashes."""
    return value.replace(" ", "-").lower()


def _requirements(
    info: InstanceTypeInfo,
    region: str,
    zones: Sequence[tuple[str, str]],
    windows_build: str | None,
    windows: bool,
) -> Requirements:
    """Karpenter ``computeRequirements``: one ``In`` per known label, ``DoesNotExist`` else.

    ``zones`` are the (name, id) pairs where the type is offered and the NodeClass has a
    subnet; the zone-id requirement is omitted when there are none (as in Karpenter).
    """
    values: dict[str, tuple[str, ...]] = {
        labels.INSTANCE_TYPE: (info.name,),
        labels.ARCH: (info.architecture,),
        labels.REGION: (region,),
        labels.ZONE: tuple(name for name, _ in zones),
        labels.CAPACITY_TYPE: info.usage_classes,
        labels.INSTANCE_CPU: (str(info.vcpu),),
        labels.INSTANCE_MEMORY: (str(info.memory_mib),),
        labels.INSTANCE_FAMILY: (info.family,),
        labels.INSTANCE_SIZE: (info.size,),
    }
    if windows:
        # Karpenter: Windows AMIs only run amd64; arm64 types get no OS value at all.
        values[labels.OS] = ("windows",) if info.architecture == "amd64" else ()
        if windows_build:
            values[labels.WINDOWS_BUILD] = (windows_build,)
    else:
        values[labels.OS] = ("linux",)
    if info.generation is not None:
        values[labels.INSTANCE_CATEGORY] = (info.category,)
        values[labels.INSTANCE_GENERATION] = (str(info.generation),)
    if info.cpu_manufacturer:
        values[labels.INSTANCE_CPU_MANUFACTURER] = (_kebab(info.cpu_manufacturer),)
    if info.hypervisor:
        values[labels.INSTANCE_HYPERVISOR] = (info.hypervisor,)
    if info.network_bandwidth_mbps is not None:
        values[labels.INSTANCE_NETWORK_BANDWIDTH] = (str(info.network_bandwidth_mbps),)
    if info.ebs_bandwidth_mbps is not None:
        values[labels.INSTANCE_EBS_BANDWIDTH] = (str(info.ebs_bandwidth_mbps),)
    if info.gpu_name:
        values[labels.INSTANCE_GPU_NAME] = (_kebab(info.gpu_name),)
        values[labels.INSTANCE_GPU_MANUFACTURER] = (_kebab(info.gpu_manufacturer),)
        values[labels.INSTANCE_GPU_COUNT] = (str(info.gpu_count),)
        values[labels.INSTANCE_GPU_MEMORY] = (str(info.gpu_memory_mib),)
    if info.local_nvme and info.local_storage_gb > 0:
        values[labels.INSTANCE_LOCAL_NVME] = (str(info.local_storage_gb),)

    reqs = [_label_in(key, vals) for key, vals in values.items()]
    reqs.extend(_label_in(key, ()) for key in _ABSENT_WHEN_EMPTY if key not in values)
    zone_ids = tuple(zone_id for _, zone_id in zones)
    if zone_ids:
        reqs.append(_label_in(labels.ZONE_ID, zone_ids))
    return Requirements(reqs)


@functools.lru_cache(maxsize=16384)
def _label_in(key: str, values: tuple[str, ...]) -> Requirement:
    """``key In values`` (``DoesNotExist`` when empty), shared between the instance types
    that carry the same label value (a ``Requirement`` is immutable): most of a type's
    requirements (architecture, region, OS, zones, absent labels) repeat across types."""
    return Requirement(key, False, frozenset(values))


def _capacity(
    info: InstanceTypeInfo,
    memory_bytes: int,
    pods: int,
    storage_bytes: int,
    windows: bool,
) -> Resources:
    capacity: Resources = {
        CPU: info.vcpu * 1000,
        MEMORY: memory_bytes,
        PODS: pods,
        EPHEMERAL_STORAGE: storage_bytes,
    }
    extended: Resources = {}
    if info.gpu_manufacturer == "NVIDIA":
        extended[NVIDIA_GPU] = info.gpu_count
    elif info.gpu_manufacturer == "AMD":
        extended[AMD_GPU] = info.gpu_count
    elif info.gpu_manufacturer == "Habana":
        extended[HABANA_GAUDI] = info.gpu_count
    extended[AWS_NEURON] = info.neuron_devices
    extended[AWS_NEURON_CORE] = info.neuron_cores
    extended[AWS_EFA] = info.efa_interfaces
    if info.trunking_compatible:
        extended[AWS_POD_ENI] = info.branch_interfaces
    if windows and info.ipv4_per_eni is not None:
        extended[AWS_PRIVATE_IPV4] = info.ipv4_per_eni - 1
    capacity.update((k, v) for k, v in sorted(extended.items()) if v > 0)
    return capacity


def build_instance_type(
    catalog: Catalog,
    info: InstanceTypeInfo,
    region: str,
    zones: Sequence[tuple[str, str]],
    *,
    kubelet: KubeletConfig = DEFAULT_KUBELET,
    ami_family: str = "AL2023",
    root_volume_bytes: int | None = None,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    instance_store_policy: str | None = None,
) -> InstanceType:
    """One ``InstanceType`` for ``info`` in ``region`` with offerings in ``zones``.

    ``zones`` are the (zone name, zone id) pairs the NodeClass subnets resolve to. See the
    module docstring for every rule; not memoised (``build_instance_types`` is).
    """
    windows, eni_limited, eni_memory, pods_per_core = _family_flags(ami_family)
    offered = frozenset(catalog.offered_zones(region, info.name))
    ordered_zones = sorted(zones)
    usable = [(name, zone_id) for name, zone_id in ordered_zones if name in offered]

    memory_bytes = _memory_capacity_bytes(info, vm_memory_overhead_percent)
    pods = _pods(info, kubelet, eni_limited, pods_per_core)
    if instance_store_policy == RAID0 and info.local_storage_gb > 0:
        # Karpenter-AWS ``ephemeralStorage``: the instance store in RAID0 backs the node's
        # ephemeral storage, its total size in (decimal) GB.
        storage_bytes = info.local_storage_gb * 10**9
    elif root_volume_bytes is not None:
        storage_bytes = root_volume_bytes
    else:
        storage_bytes = WINDOWS_EPHEMERAL_BYTES if windows else DEFAULT_EPHEMERAL_BYTES
    capacity = _capacity(info, memory_bytes, pods, storage_bytes, windows)

    reserved_pods = info.max_pods_eni if eni_memory else pods
    overhead = _sum(
        _kube_reserved(info.vcpu * 1000, reserved_pods, kubelet.kube_reserved),
        dict(kubelet.system_reserved),
        _eviction_threshold(memory_bytes, storage_bytes, kubelet.eviction_hard),
    )
    allocatable = {k: max(0, v - overhead.get(k, 0)) for k, v in capacity.items()}

    requirements = _requirements(info, region, usable, WINDOWS_BUILDS.get(ami_family), windows)
    offerings = _offerings(catalog, info, region, ordered_zones, offered)
    return InstanceType(
        name=info.name,
        requirements=requirements,
        capacity=capacity,
        overhead=overhead,
        allocatable=allocatable,
        offerings=offerings,
    )


def _offerings(
    catalog: Catalog,
    info: InstanceTypeInfo,
    region: str,
    zones: Sequence[tuple[str, str]],
    offered: frozenset[str],
) -> tuple[Offering, ...]:
    """Every (zone, capacity type), ordered by zone then capacity type (karpenter-provider-aws
    ``pkg/providers/instancetype/offering/base_resolver.go`` ``ResolveOfferings``).

    Unpriced offerings carry price 0.0 and are unavailable.
    """
    od = catalog.on_demand_price(region, info.name)
    prices: dict[str, tuple[float | None, float, bool]] = {}
    for capacity_type in info.usage_classes:
        if capacity_type == labels.CAPACITY_TYPE_ON_DEMAND:
            prices[capacity_type] = (
                od.price_per_hour if od is not None else None,
                0.0,
                od.estimated if od is not None else False,
            )
        elif capacity_type == labels.CAPACITY_TYPE_SPOT:
            quote = catalog.spot_quote(region, info.name)
            if od is None or quote is None:
                prices[capacity_type] = (None, 0.0, False)
            else:
                prices[capacity_type] = (
                    spot_price(od.price_per_hour, quote.savings_pct),
                    interruption_rate_per_hour(quote.interruption_bucket),
                    od.estimated or quote.estimated,
                )
    # Offering's fields in order (zone, zone id, then these), built once per capacity type:
    # a broad NodeClass builds about 15,000 offerings.
    quotes = [
        (ct, price if price is not None else 0.0, price is not None, hazard, estimated)
        for ct, (price, hazard, estimated) in sorted(prices.items())
    ]
    return tuple(
        Offering(zone, zone_id, ct, price, priced and zone in offered, hazard, estimated)
        for zone, zone_id in zones
        for ct, price, priced, hazard, estimated in quotes
    )


def build_instance_types(
    catalog: Catalog,
    region: str,
    zones: Sequence[tuple[str, str]],
    *,
    kubelet: KubeletConfig = DEFAULT_KUBELET,
    ami_family: str = "AL2023",
    root_volume_bytes: int | None = None,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    instance_store_policy: str | None = None,
) -> list[InstanceType]:
    """Every catalog type offered in at least one zone of ``region``, sorted by name.

    ``zones`` are the (zone name, zone id) pairs the NodeClass subnets resolve to; each type
    gets one offering per zone and supported capacity type (unavailable where the type is
    not offered or has no price). Results are memoised per (catalog, region, zones,
    settings): the returned list is fresh, but the ``InstanceType`` objects are shared and
    must not be mutated.

    Raises:
        UnknownRegionError: the region has no zone data.
    """
    return list(
        _build_cached(
            catalog,
            region,
            tuple(sorted({(str(name), str(zone_id)) for name, zone_id in zones})),
            kubelet,
            ami_family,
            root_volume_bytes,
            float(vm_memory_overhead_percent),
            instance_store_policy,
        )
    )


@functools.lru_cache(maxsize=64)
def _build_cached(
    catalog: Catalog,
    region: str,
    zones: tuple[tuple[str, str], ...],
    kubelet: KubeletConfig,
    ami_family: str,
    root_volume_bytes: int | None,
    vm_memory_overhead_percent: float,
    instance_store_policy: str | None,
) -> tuple[InstanceType, ...]:
    return tuple(
        build_instance_type(
            catalog,
            catalog.info(name),
            region,
            zones,
            kubelet=kubelet,
            ami_family=ami_family,
            root_volume_bytes=root_volume_bytes,
            vm_memory_overhead_percent=vm_memory_overhead_percent,
            instance_store_policy=instance_store_policy,
        )
        for name in catalog.offered_types(region)
    )
