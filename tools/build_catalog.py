"""Build the packaged EC2 catalog (``joiner/cloudprovider/data``) from the shared raw data.

Developers run this offline; Joiner itself only reads the compact files it writes (via
``joiner.cloudprovider.catalog``), never the raw data. Usage::

    .venv/bin/python tools/build_catalog.py [--shared DIR] [--out DIR]

``--shared`` defaults to ``../shared/data`` next to the repository (``/work/shared/data``);
``--out`` defaults to ``joiner/cloudprovider/data``. The inputs are described in the raw
data's own ``SOURCES.md``. Outputs (gzip-compressed CSV, one header line each):

* ``instance_types.csv.gz``: one row per instance type Karpenter would discover (x86_64 or
  arm64; Mac types are dropped), with only the facts the instance-type model needs.
* ``offerings.csv.gz``: ``region, instance_type, zones, zone_ids`` (zones ``;``-separated,
  sorted by name, ids in the same order), every region.
* ``zones.csv.gz``: ``region, zone_name, zone_id``.
* ``ondemand_prices.csv.gz``: ``region, instance_type, price_per_hour`` (USD tables only).
* ``spot_advisor.csv.gz``: ``region, instance_type, savings_pct, interruption_bucket``
  (Linux rows only).
* ``SOURCES.md``: provenance and row counts.

Output is deterministic: rows are sorted and gzip is written with ``mtime=0`` and no file
name, so rebuilding from the same inputs gives identical bytes.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO_ROOT / ".." / "shared" / "data"
DEFAULT_OUT = REPO_ROOT / "joiner" / "cloudprovider" / "data"

#: EC2 architecture name -> Kubernetes ``kubernetes.io/arch`` value (Karpenter
#: ``AWSToKubeArchitectures``). Anything else (i386, *_mac) is not discovered by Karpenter.
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}

#: Karpenter's ``instanceTypeScheme``: category, optional ``-NNtb`` and generation digits.
INSTANCE_TYPE_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")

INSTANCE_TYPE_COLUMNS = (
    "name",
    "family",
    "size",
    "category",
    "generation",
    "current_generation",
    "vcpu",
    "memory_mib",
    "architectures",
    "cpu_manufacturer",
    "hypervisor",
    "bare_metal",
    "usage_classes",
    "gpu_count",
    "gpu_name",
    "gpu_manufacturer",
    "gpu_memory_mib",
    "gpu_memory_mib_total",
    "neuron_devices",
    "neuron_cores",
    "neuron_name",
    "efa_interfaces",
    "local_storage_gb",
    "local_nvme",
    "network_bandwidth_mbps",
    "ebs_baseline_mbps",
    "ebs_max_mbps",
    "max_pods_eni",
    "ipv4_per_eni",
    "trunking_compatible",
    "branch_interfaces",
)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _bool(value: str) -> str:
    """Normalise ``True``/``False`` to ``1``/``0`` (empty stays empty)."""
    if value == "":
        return ""
    if value not in ("True", "False"):
        raise ValueError(f"expected True/False, got {value!r}")
    return "1" if value == "True" else "0"


def _int(value: str) -> str:
    """Validate an integer column (empty allowed) and return it unchanged."""
    if value != "":
        int(value)
    return value


def _gzip_csv(header: Sequence[str], rows: Iterable[Sequence[str]]) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
        gz.write(text.getvalue().encode("utf-8"))
    return raw.getvalue()


def build_instance_types(shared: Path) -> list[list[str]]:
    """One row per discoverable instance type, sorted by name."""
    moto = _read_csv(shared / "ec2_instance_types.csv")
    vpc = {r["instance_type"]: r for r in _read_csv(shared / "karpenter_vpc_limits.csv")}
    bandwidth = {
        r["instance_type"]: r for r in _read_csv(shared / "karpenter_network_bandwidth.csv")
    }
    with (shared / "ec2_describe_instance_types.json").open(encoding="utf-8") as fh:
        described = {d["InstanceType"]: d for d in json.load(fh)["InstanceTypes"]}

    rows: list[list[str]] = []
    for r in sorted(moto, key=lambda x: x["instance_type"]):
        name = r["instance_type"]
        archs = [ARCHITECTURES[a] for a in r["architectures"].split(";") if a in ARCHITECTURES]
        if not archs:
            continue  # i386-only or Mac: Karpenter's DescribeInstanceTypes filter drops them
        desc = described[name]

        match = INSTANCE_TYPE_SCHEME.match(name)
        category = match.group(1) if match else r["category"]
        generation = match.group(3) if match else ""
        family, _, size = name.partition(".")

        # Per-GPU memory is what Karpenter's instance-gpu-memory label carries.
        gpus = desc.get("GpuInfo", {}).get("Gpus", [])
        gpu_memory = str(gpus[0]["MemoryInfo"]["SizeInMiB"]) if len(gpus) == 1 else ""

        # Karpenter labels EBS bandwidth with the maximum, only when EBS-optimised by default.
        ebs = desc.get("EbsInfo", {})
        ebs_max = ""
        if ebs.get("EbsOptimizedSupport") == "default" and "EbsOptimizedInfo" in ebs:
            ebs_max = str(ebs["EbsOptimizedInfo"]["MaximumBandwidthInMbps"])

        # Karpenter's instance-local-nvme label needs NVMe instance storage.
        storage = desc.get("InstanceStorageInfo", {})
        local_nvme = (
            "1"
            if storage.get("TotalSizeInGB") is not None
            and storage.get("NvmeSupport", "unsupported") != "unsupported"
            else "0"
        )

        # Prefer Karpenter's bandwidth table (the label source); fall back to moto's.
        bw_row = bandwidth.get(name)
        network = bw_row["baseline_bandwidth_mbps"] if bw_row else r["network_baseline_mbps"]

        limits = vpc.get(name)
        max_pods = limits["max_pods_eni"] if limits else r["max_pods_eni"]
        ipv4 = limits["ipv4_per_eni"] if limits else ""
        trunking = _bool(limits["trunking_compatible"]) if limits else "0"
        branch = limits["branch_interfaces"] if limits else "0"

        usage = sorted(u for u in r["usage_classes"].split(";") if u in ("on-demand", "spot"))

        rows.append(
            [
                name,
                family,
                size,
                category,
                generation,
                _bool(r["current_generation"]),
                _int(r["vcpu"]),
                _int(r["memory_mib"]),
                ";".join(archs),
                r["cpu_manufacturer"].lower(),
                r["hypervisor"],
                _bool(r["bare_metal"]),
                ";".join(usage),
                _int(r["gpu_count"]),
                r["gpu_name"],
                r["gpu_manufacturer"],
                _int(gpu_memory),
                _int(r["gpu_memory_mib_total"]),
                _int(r["neuron_device_count"]),
                _int(r["neuron_cores"]),
                r["neuron_name"],
                _int(r["efa_max_interfaces"]),
                _int(r["local_storage_gb"]),
                local_nvme,
                _int(network),
                _int(r["ebs_baseline_mbps"]),
                _int(ebs_max),
                _int(max_pods),
                _int(ipv4),
                trunking,
                _int(branch),
            ]
        )
    return rows


def build_zones(shared: Path) -> list[list[str]]:
    """``region, zone_name, zone_id`` sorted by region then zone name."""
    rows = [
        [r["region"], r["zone_name"], r["zone_id"]]
        for r in _read_csv(shared / "availability_zones.csv")
    ]
    return sorted(rows)


def build_offerings(shared: Path, types: set[str]) -> list[list[str]]:
    """Per-region zones offering each packaged type; zones sorted by name, ids aligned."""
    rows: list[list[str]] = []
    for r in _read_csv(shared / "ec2_instance_type_offerings.csv"):
        if r["instance_type"] not in types:
            continue
        zones = r["zones"].split(";")
        ids = r["zone_ids"].split(";")
        if len(zones) != len(ids):
            raise ValueError(f"zones/zone_ids mismatch for {r['region']} {r['instance_type']}")
        pairs = sorted(zip(zones, ids, strict=True))
        rows.append(
            [
                r["region"],
                r["instance_type"],
                ";".join(z for z, _ in pairs),
                ";".join(i for _, i in pairs),
            ]
        )
    return sorted(rows)


def build_ondemand_prices(shared: Path, types: set[str]) -> list[list[str]]:
    """USD on-demand Linux prices for packaged types (CNY rows are dropped)."""
    rows: list[list[str]] = []
    for r in _read_csv(shared / "ondemand_prices_karpenter.csv"):
        if r["currency"] != "USD" or r["instance_type"] not in types:
            continue
        float(r["price_per_hour"])
        rows.append([r["region"], r["instance_type"], r["price_per_hour"]])
    return sorted(rows)


def build_spot_advisor(shared: Path, types: set[str]) -> list[list[str]]:
    """Linux Spot Advisor rows for packaged types: savings % and interruption bucket 0..4."""
    rows: list[list[str]] = []
    for r in _read_csv(shared / "spot_advisor.csv"):
        if r["os"] != "Linux" or r["instance_type"] not in types:
            continue
        bucket = int(r["interruption_range_index"])
        if not 0 <= bucket <= 4:
            raise ValueError(f"bad interruption bucket {bucket} in {r}")
        rows.append(
            [
                r["region"],
                r["instance_type"],
                _int(r["savings_pct_vs_ondemand"]),
                str(bucket),
            ]
        )
    return sorted(rows)


SOURCES_TEMPLATE = """\
# Packaged EC2 catalog: provenance

Generated by `tools/build_catalog.py` from the project's shared raw data (`shared/data`,
documented in its own `SOURCES.md`). Do not edit these files by hand; rerun the script.
Joiner reads only these files at run time. They are realistic fixtures, not current
market quotes. Every file is a gzip-compressed CSV with one header line; rows are sorted.

## `instance_types.csv.gz` ({instance_types} rows)

One row per instance type that Karpenter's discovery would return (x86_64 or arm64; the
Mac and i386-only types are dropped): family, size, category and generation (parsed from
the name with Karpenter's `instanceTypeScheme`), vCPU, memory MiB, Kubernetes
architecture, CPU maker, hypervisor, bare metal, usage classes (spot and on-demand only),
GPU count, name, maker, per-GPU and total memory, Neuron devices and cores, EFA
interfaces, local storage GB and NVMe flag, network bandwidth Mbps, EBS baseline and
maximum Mbps, ENI-limited max pods, IPv4 per ENI, trunking and branch ENIs.

- Base facts: `ec2_instance_types.csv` and `ec2_describe_instance_types.json`, i.e. EC2
  DescribeInstanceTypes data shipped in the moto 5.2.1 wheel (built 2026-05), plus 14
  older types (p2, some p3, f1, i3.metal, u-*tb1) from the moto 5.0.28 wheel (2025-01).
  Per-GPU memory, the EBS maximum bandwidth (used only when EBS optimisation is on by
  default) and NVMe support are read from the DescribeInstanceTypes-shaped JSON.
- ENIs, IPv4 per ENI, trunking and branch ENIs: Karpenter's
  `pkg/providers/instancetype/zz_generated.vpclimits.go` (file dated 2026-08-06).
- Network bandwidth: Karpenter's `zz_generated.bandwidth.go` (2026-08), falling back to
  moto's baseline figure where Karpenter has no row.
- Karpenter files are from aws/karpenter-provider-aws@1d927085dd81a9df9301e613f371dac5b4d16bfe.

## `offerings.csv.gz` ({offerings} rows)

Which availability zones offer each packaged type, per region (30 commercial regions);
zones sorted by name, zone ids in the same order. From moto 5.2.1's
DescribeInstanceTypeOfferings (availability-zone) data, with zone ids joined from moto's
DescribeAvailabilityZones (moto 5.2.1, 2026-05).

## `zones.csv.gz` ({zones} rows)

Zone name to zone id for the same 30 regions, from moto 5.2.1's
DescribeAvailabilityZones (2026-05). In real AWS the name-to-id mapping differs per
account; the ids are the stable key.

## `ondemand_prices.csv.gz` ({ondemand_prices} rows)

On-demand Linux, shared-tenancy prices in USD per hour for us-east-1, us-gov-east-1 and
us-gov-west-1, generated 2026-07-20. These are Karpenter's compiled-in fallback tables
(`pkg/providers/pricing/zz_generated.pricing_aws.go` and `..._aws_us_gov.go` at the
commit above). The cn-north-1 table (CNY, generated 2024-11-06) was dropped. Other
regions have no table: Joiner, like Karpenter, then uses the us-east-1 prices and marks
them estimated.

## `spot_advisor.csv.gz` ({spot_advisor} rows)

AWS Spot Instance Advisor, Linux rows only, 33 regions: savings in percent against
on-demand (a 30-day average across zones; a few rows are negative) and the
interruption-frequency bucket 0..4 (`<5%`, `5-10%`, `10-15%`, `15-20%`, `>20%` of
instances reclaimed over the trailing month). The feed is AWS's public
spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json, as embedded in
alexei-led/spotinfo@05e933139449b888c78795b28af8e9370429a031
(`internal/spot/data/spot-advisor-data.json`, committed 2025-06-28).

## Known gaps

No real on-demand price table for regions other than us-east-1 and GovCloud (for
example Seoul, ap-northeast-2), and no per-zone spot price snapshot. Spot prices are
synthesised as on-demand x (1 - savings/100).
"""


def build(shared: Path, out: Path) -> dict[str, int]:
    """Write every packaged file into ``out``; return the row count of each CSV."""
    if not (shared / "ec2_instance_types.csv").is_file():
        raise FileNotFoundError(f"{shared} does not contain the shared EC2 data")
    out.mkdir(parents=True, exist_ok=True)
    instance_rows = build_instance_types(shared)
    names = {row[0] for row in instance_rows}
    tables: dict[str, tuple[Sequence[str], list[list[str]]]] = {
        "instance_types": (INSTANCE_TYPE_COLUMNS, instance_rows),
        "offerings": (
            ("region", "instance_type", "zones", "zone_ids"),
            build_offerings(shared, names),
        ),
        "zones": (("region", "zone_name", "zone_id"), build_zones(shared)),
        "ondemand_prices": (
            ("region", "instance_type", "price_per_hour"),
            build_ondemand_prices(shared, names),
        ),
        "spot_advisor": (
            ("region", "instance_type", "savings_pct", "interruption_bucket"),
            build_spot_advisor(shared, names),
        ),
    }
    counts: dict[str, int] = {}
    for stem, (header, rows) in tables.items():
        (out / f"{stem}.csv.gz").write_bytes(_gzip_csv(header, rows))
        counts[stem] = len(rows)
    (out / "SOURCES.md").write_text(
        SOURCES_TEMPLATE.format(**{k: f"{v:,}" for k, v in counts.items()}), encoding="utf-8"
    )
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="raw data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    counts = build(args.shared, args.out)
    for stem, n in counts.items():
        size = (args.out / f"{stem}.csv.gz").stat().st_size
        print(f"{stem}.csv.gz: {n} rows, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
