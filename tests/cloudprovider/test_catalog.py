"""The packaged EC2 catalog and the Karpenter-style instance types built from it.

Expected numbers are Karpenter-AWS's formulas worked by hand with AL2023 defaults
(karpenter-provider-aws ``pkg/providers/instancetype/types.go``: ``computeCapacity``,
``ENILimitedPods``, ``kubeReservedResources``, ``evictionThreshold``), its pricing fallback
(``pkg/providers/pricing/pricing.go`` ``Reset``), the AWS Spot Instance Advisor rows, and
Joiner's spot price and interruption-hazard model (docs/spot-market.md).
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import statistics
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from joiner.api import labels
from joiner.api.objects import KubeletConfig
from joiner.api.quantity import GIB, MIB
from joiner.api.requirements import Requirement, Requirements
from joiner.cloudprovider.catalog import (
    Catalog,
    UnknownRegionError,
    interruption_rate_per_hour,
    spot_price,
)
from joiner.cloudprovider.instancetype import (
    DEFAULT_KUBELET,
    _build_cached,
    build_instance_types,
    kube_reserved_cpu_millis,
)
from joiner.cloudprovider.types import InstanceType

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT / ".." / "shared" / "data"
BUILDER = REPO_ROOT / "tools" / "build_catalog.py"
PACKAGED_FILES = (
    "instance_types.csv.gz",
    "offerings.csv.gz",
    "zones.csv.gz",
    "ondemand_prices.csv.gz",
    "spot_advisor.csv.gz",
)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load()


def _types(
    catalog: Catalog,
    region: str = "us-east-1",
    *,
    kubelet: KubeletConfig = DEFAULT_KUBELET,
    ami_family: str = "AL2023",
    root_volume_bytes: int | None = None,
) -> dict[str, InstanceType]:
    built = build_instance_types(
        catalog,
        region,
        catalog.zones(region),
        kubelet=kubelet,
        ami_family=ami_family,
        root_volume_bytes=root_volume_bytes,
    )
    return {it.name: it for it in built}


@pytest.fixture(scope="module")
def use1(catalog: Catalog) -> dict[str, InstanceType]:
    return _types(catalog)


# -- allocatable (Karpenter-AWS types.go formulas, worked by hand) -----------------------


@pytest.mark.parametrize(
    ("name", "capacity_mib", "allocatable_mib", "allocatable_cpu_m", "pods"),
    [
        ("m5.large", 7577, 6903, 1930, 29),
        ("c6g.large", 3729, 3055, 1930, 29),
        ("m5.4xlarge", 60620, 57691, 15890, 234),
    ],
)
def test_worked_allocatable_table(
    use1: dict[str, InstanceType],
    name: str,
    capacity_mib: int,
    allocatable_mib: int,
    allocatable_cpu_m: int,
    pods: int,
) -> None:
    it = use1[name]
    assert it.capacity["memory"] == capacity_mib * MIB
    assert it.allocatable["memory"] == allocatable_mib * MIB
    assert it.allocatable["cpu"] == allocatable_cpu_m
    assert it.capacity["pods"] == it.allocatable["pods"] == pods
    assert it.capacity["ephemeral-storage"] == 20 * GIB
    # 1 GiB kube-reserved + 10% eviction threshold of the 20 GiB root volume.
    assert it.overhead["ephemeral-storage"] == GIB + 2 * GIB


def test_kube_reserved_cpu_tiers() -> None:
    assert kube_reserved_cpu_millis(1000) == 60
    assert kube_reserved_cpu_millis(2000) == 70
    assert kube_reserved_cpu_millis(3000) == 75
    assert kube_reserved_cpu_millis(16000) == 110
    assert kube_reserved_cpu_millis(96000) == 310


def test_max_pods_override_keeps_eni_kube_reserved_on_al2023(catalog: Catalog) -> None:
    default = _types(catalog)["m5.large"]
    raised = _types(catalog, kubelet=KubeletConfig(max_pods=110))["m5.large"]
    assert raised.capacity["pods"] == 110
    # AL2023 reserves memory for the ENI-limited 29 pods regardless: 11 x 29 + 255 = 574 MiB.
    assert raised.overhead["memory"] == default.overhead["memory"] == (574 + 100) * MIB
    assert raised.allocatable["memory"] == 6903 * MIB


def test_max_pods_override_changes_kube_reserved_on_bottlerocket(catalog: Catalog) -> None:
    it = _types(catalog, kubelet=KubeletConfig(max_pods=110), ami_family="Bottlerocket")["m5.large"]
    assert it.overhead["memory"] == (11 * 110 + 255 + 100) * MIB


def test_pods_per_core_caps_pods_except_bottlerocket(catalog: Catalog) -> None:
    kubelet = KubeletConfig(pods_per_core=4)
    assert _types(catalog, kubelet=kubelet)["m5.large"].capacity["pods"] == 8
    assert (
        _types(catalog, kubelet=kubelet, ami_family="Bottlerocket")["m5.large"].capacity["pods"]
        == 29
    )


def test_reserved_and_eviction_overrides(catalog: Catalog) -> None:
    kubelet = KubeletConfig(
        kube_reserved=(("memory", GIB),),
        system_reserved=(("cpu", 100),),
        eviction_hard=(("memory.available", None, 5.0), ("nodefs.available", 512 * MIB, None)),
    )
    it = _types(catalog, kubelet=kubelet, root_volume_bytes=100 * GIB)["m5.large"]
    memory = 7577 * MIB
    assert it.overhead["memory"] == GIB + math.ceil(memory / 100 * 5)
    assert it.overhead["cpu"] == 70 + 100
    assert it.capacity["ephemeral-storage"] == 100 * GIB
    assert it.overhead["ephemeral-storage"] == GIB + 512 * MIB


def test_windows_family(catalog: Catalog) -> None:
    types = _types(catalog, ami_family="Windows2022")
    m5 = types["m5.large"]
    assert m5.capacity["pods"] == 110
    assert m5.label(labels.OS) == "windows"
    assert m5.label(labels.WINDOWS_BUILD) == "10.0.20348"
    assert m5.capacity["ephemeral-storage"] == 50 * GIB
    # Windows AMIs do not run on arm64: no OS value, so nothing asking for an OS matches.
    assert types["c6g.large"].label(labels.OS) is None


# -- labels --------------------------------------------------------------------------------


def test_well_known_labels(use1: dict[str, InstanceType]) -> None:
    m5 = use1["m5.large"]
    assert m5.label(labels.INSTANCE_TYPE) == "m5.large"
    assert m5.label(labels.ARCH) == "amd64"
    assert m5.label(labels.OS) == "linux"
    assert m5.label(labels.REGION) == "us-east-1"
    assert m5.label(labels.INSTANCE_FAMILY) == "m5"
    assert m5.label(labels.INSTANCE_CATEGORY) == "m"
    assert m5.label(labels.INSTANCE_GENERATION) == "5"
    assert m5.label(labels.INSTANCE_SIZE) == "large"
    assert m5.label(labels.INSTANCE_CPU) == "2"
    assert m5.label(labels.INSTANCE_MEMORY) == "8192"
    assert m5.label(labels.INSTANCE_CPU_MANUFACTURER) == "intel"
    assert m5.label(labels.INSTANCE_HYPERVISOR) == "nitro"
    assert m5.label(labels.INSTANCE_NETWORK_BANDWIDTH) == "750"
    assert m5.requirements[labels.CAPACITY_TYPE].values == {"on-demand", "spot"}
    assert use1["c6g.large"].label(labels.ARCH) == "arm64"
    assert use1["c6g.large"].label(labels.INSTANCE_CPU_MANUFACTURER) == "aws"


def test_gpu_labels_and_resources(use1: dict[str, InstanceType]) -> None:
    g4 = use1["g4dn.xlarge"]
    assert g4.capacity["nvidia.com/gpu"] == 1
    assert g4.label(labels.INSTANCE_GPU_NAME) == "t4"
    assert g4.label(labels.INSTANCE_GPU_MANUFACTURER) == "nvidia"
    assert g4.label(labels.INSTANCE_GPU_COUNT) == "1"
    assert g4.label(labels.INSTANCE_LOCAL_NVME) == "125"
    assert use1["inf2.xlarge"].capacity["aws.amazon.com/neuron"] == 1
    assert use1["m5.large"].capacity["vpc.amazonaws.com/pod-eni"] == 9
    assert "nvidia.com/gpu" not in use1["m5.large"].capacity
    # A type without a GPU has the GPU labels as DoesNotExist, so a GPU selector rejects it.
    wants_t4 = Requirements([Requirement.in_(labels.INSTANCE_GPU_NAME, "t4")])
    assert use1["m5.large"].requirements.compatible(wants_t4) is not None
    assert g4.requirements.compatible(wants_t4) is None


def test_zones_and_unoffered_zone(use1: dict[str, InstanceType]) -> None:
    m5 = use1["m5.large"]
    zones = [o.zone for o in m5.offerings]
    assert zones == sorted(zones)
    # m5.large is not offered in us-east-1e: the offering exists but is unavailable, and the
    # zone requirement lists only the zones that offer it.
    e = [o for o in m5.offerings if o.zone == "us-east-1e"]
    assert len(e) == 2 and not any(o.available for o in e)
    assert not m5.requirements[labels.ZONE].has("us-east-1e")
    assert m5.requirements[labels.ZONE].has("us-east-1a")
    assert m5.requirements[labels.ZONE_ID].has("use1-az6")


# -- prices --------------------------------------------------------------------------------


def test_on_demand_prices(catalog: Catalog) -> None:
    m5 = catalog.on_demand_price("us-east-1", "m5.large")
    c5 = catalog.on_demand_price("us-east-1", "c5.large")
    assert m5 is not None and m5.price_per_hour == pytest.approx(0.096) and not m5.estimated
    assert c5 is not None and c5.price_per_hour == pytest.approx(0.085)


def test_spot_price_from_advisor_row(catalog: Catalog, use1: dict[str, InstanceType]) -> None:
    quote = catalog.spot_quote("us-east-1", "m5.large")
    assert quote is not None
    assert (quote.savings_pct, quote.interruption_bucket, quote.estimated) == (66.0, 3, False)
    spot = [o for o in use1["m5.large"].offerings if o.capacity_type == "spot" and o.available]
    assert spot
    for o in spot:
        assert o.price_per_hour == pytest.approx(0.096 * (1 - 0.66))
        assert o.interruption_rate_per_hour == pytest.approx(interruption_rate_per_hour(3))
        assert not o.price_estimated
    on_demand = [o for o in use1["m5.large"].offerings if o.capacity_type == "on-demand"]
    assert all(o.interruption_rate_per_hour == 0.0 for o in on_demand)
    assert spot_price(0.096, 66) == pytest.approx(0.03264)


def test_spot_price_estimated_from_family_median(
    catalog: Catalog, use1: dict[str, InstanceType]
) -> None:
    name = "i8g.metal-48xl"  # offered in us-east-1, no Spot Advisor row, family i8g has rows
    family = catalog.info(name).family
    siblings = [
        q
        for n in catalog.type_names()
        if catalog.info(n).family == family
        and (q := catalog.spot_quote("us-east-1", n)) is not None
        and not q.estimated
    ]
    assert len(siblings) >= 2
    quote = catalog.spot_quote("us-east-1", name)
    assert quote is not None and quote.estimated
    assert quote.savings_pct == statistics.median(q.savings_pct for q in siblings)
    assert quote.interruption_bucket == statistics.median_low(
        q.interruption_bucket for q in siblings
    )
    od = catalog.on_demand_price("us-east-1", name)
    assert od is not None
    spot = [o for o in use1[name].offerings if o.capacity_type == "spot" and o.available]
    assert spot and all(o.price_estimated for o in spot)
    assert spot[0].price_per_hour == pytest.approx(
        od.price_per_hour * (1 - quote.savings_pct / 100)
    )


def test_region_without_on_demand_table_falls_back_to_us_east_1(catalog: Catalog) -> None:
    seoul = catalog.on_demand_price("ap-northeast-2", "m5.large")
    assert seoul is not None and seoul.estimated and "us-east-1" in seoul.note
    assert seoul.price_per_hour == pytest.approx(0.096)
    # Seoul has its own Spot Advisor row (68% / 5-10%).
    quote = catalog.spot_quote("ap-northeast-2", "m5.large")
    assert quote is not None and (quote.savings_pct, quote.interruption_bucket) == (68.0, 1)
    m5 = _types(catalog, "ap-northeast-2")["m5.large"]
    assert m5.offerings and all(o.price_estimated for o in m5.offerings)


def test_interruption_hazard_conversion() -> None:
    for bucket, p in enumerate((0.025, 0.075, 0.125, 0.175, 0.25)):
        assert interruption_rate_per_hour(bucket) == pytest.approx(-math.log(1 - p) / 720)
    assert interruption_rate_per_hour(0) == pytest.approx(3.5e-5, rel=0.01)
    assert interruption_rate_per_hour(4) == pytest.approx(4.0e-4, rel=0.01)
    with pytest.raises(ValueError):
        interruption_rate_per_hour(5)


# -- catalog API ---------------------------------------------------------------------------


def test_catalog_lookups(catalog: Catalog) -> None:
    assert Catalog.load() is catalog
    assert "us-east-1" in catalog.regions() and "ap-northeast-2" in catalog.regions()
    assert catalog.zones("ap-northeast-2") == [
        ("ap-northeast-2a", "apne2-az1"),
        ("ap-northeast-2b", "apne2-az2"),
        ("ap-northeast-2c", "apne2-az3"),
        ("ap-northeast-2d", "apne2-az4"),
    ]
    names = catalog.type_names()
    assert names == sorted(names) and "m5.large" in names
    assert not any(n.startswith("mac") for n in names)  # Karpenter never discovers Mac types
    info = catalog.info("c6g.large")
    assert (info.architecture, info.vcpu, info.memory_mib, info.max_pods_eni) == (
        "arm64",
        2,
        4096,
        29,
    )
    assert catalog.info("u-6tb1.56xlarge").generation == 1
    assert catalog.info("m7i.large").generation == 7
    assert "us-east-1e" not in catalog.offered_zones("us-east-1", "m5.large")
    with pytest.raises(KeyError, match=r"nope\.large"):
        catalog.info("nope.large")
    with pytest.raises(UnknownRegionError, match="us-east-1") as err:
        catalog.zones("xx-1")
    assert isinstance(err.value, ValueError)


def test_build_is_sorted_and_memoised(catalog: Catalog) -> None:
    # Speed is measured in benchmarks/, not asserted here.
    _build_cached.cache_clear()
    zones = catalog.zones("us-east-1")
    first = build_instance_types(catalog, "us-east-1", zones)
    assert [t.name for t in first] == sorted(t.name for t in first)
    assert len(first) > 900
    again = build_instance_types(catalog, "us-east-1", list(reversed(zones)))
    assert again == first and again is not first and again[0] is first[0]


# -- the packaged data is what tools/build_catalog.py produces -----------------------------


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_catalog", BUILDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _packaged(name: str) -> bytes:
    return resources.files("joiner.cloudprovider.data").joinpath(name).read_bytes()


@pytest.mark.skipif(
    not (SHARED_DATA / "ec2_instance_types.csv").is_file(),
    reason=f"shared raw data not present at {SHARED_DATA}",
)
def test_packaged_data_matches_builder(tmp_path: Path) -> None:
    builder = _builder()
    builder.main(["--shared", str(SHARED_DATA), "--out", str(tmp_path / "a")])
    builder.main(["--shared", str(SHARED_DATA), "--out", str(tmp_path / "b")])
    for name in PACKAGED_FILES:
        built = (tmp_path / "a" / name).read_bytes()
        assert built == (tmp_path / "b" / name).read_bytes(), f"{name} is not deterministic"
        assert built[4:8] == b"\0\0\0\0", f"{name} gzip mtime is not 0"
        packaged = _packaged(name)
        # Compare content; the compressed bytes also match unless zlib itself differs.
        assert gzip.decompress(packaged) == gzip.decompress(built), f"{name} is stale"
    assert _packaged("SOURCES.md") == (tmp_path / "a" / "SOURCES.md").read_bytes()
    total = sum(len(_packaged(n)) for n in PACKAGED_FILES)
    assert total < 1_000_000


def test_lazy_region_tables_equal_an_eager_parse_of_every_region() -> None:
    """The packaged catalog parses each region's rows on first use (``_RegionTables``); every
    region's offerings, on-demand prices and Spot Advisor rows equal a parse of the whole
    file row by row (the eager loader it replaced)."""
    from joiner.cloudprovider.catalog import _rows

    cat = Catalog.load()
    offered: dict[str, dict[str, tuple[str, ...]]] = {}
    for r in _rows("offerings.csv.gz"):
        offered.setdefault(r["region"], {})[r["instance_type"]] = tuple(
            sorted(z for z in r["zones"].split(";") if z)
        )
    on_demand: dict[str, dict[str, float]] = {}
    for r in _rows("ondemand_prices.csv.gz"):
        on_demand.setdefault(r["region"], {})[r["instance_type"]] = float(r["price_per_hour"])
    spot: dict[str, dict[str, tuple[float, int]]] = {}
    for r in _rows("spot_advisor.csv.gz"):
        spot.setdefault(r["region"], {})[r["instance_type"]] = (
            float(r["savings_pct"]),
            int(r["interruption_bucket"]),
        )
    assert len(offered) > 10 and len(spot) > 10
    assert dict(cat._offered.items()) == offered
    assert dict(cat._on_demand.items()) == on_demand
    assert dict(cat._spot.items()) == spot
    for region in cat.regions():
        assert cat.offered_types(region) == sorted(offered.get(region, {}))


def test_region_runs_split_a_grouped_body_and_refuse_a_region_seen_twice() -> None:
    """``_RegionTables`` finds each region's rows as one run of the text; a rebuilt file
    whose rows are not grouped by region fails loudly instead of losing rows."""
    from joiner.cloudprovider.catalog import _region_runs

    body = "eu-west-1,a,1\neu-west-1,b,2\nus-east-1,a,3\nus-east-10,a,4"
    assert _region_runs(body, "t.csv") == {
        "eu-west-1": "eu-west-1,a,1\neu-west-1,b,2",
        "us-east-1": "us-east-1,a,3",
        "us-east-10": "us-east-10,a,4",
    }
    with pytest.raises(ValueError, match="rows of eu-west-1 are not contiguous"):
        _region_runs("eu-west-1,a,1\nus-east-1,a,3\neu-west-1,b,2", "t.csv")
