"""The instance types every differential case runs on, as Karpenter-kwok's JSON file.

Both sides read the same file: Karpenter through ``INSTANCE_TYPES_FILE_PATH``, Joiner through
``joiner.cloudprovider.kwok.load_instance_types``, so capacity, overhead, offerings and prices
are identical by construction. Prices avoid ties: every type has its own base price, spot is
40 % of on-demand, and each zone costs 1 % more than the previous one, so Karpenter-kwok's
random choice among equal-price offerings never comes into play.
"""

from __future__ import annotations

import json
from pathlib import Path

ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")

#: name -> (cpu, memory, on-demand price per hour in zone a, extra resources, arch)
TYPES: dict[str, tuple[str, str, float, dict[str, str], str]] = {
    "c-1x": ("1", "2Gi", 0.0400, {}, "amd64"),
    "c-2x": ("2", "4Gi", 0.0850, {}, "amd64"),
    "c-4x": ("4", "8Gi", 0.1700, {}, "amd64"),
    "c-8x": ("8", "16Gi", 0.3400, {}, "amd64"),
    "m-2x": ("2", "8Gi", 0.0960, {}, "amd64"),
    "m-4x": ("4", "16Gi", 0.1920, {}, "amd64"),
    "m-8x": ("8", "32Gi", 0.3840, {}, "amd64"),
    "r-2x": ("2", "16Gi", 0.1260, {}, "amd64"),
    "r-4x": ("4", "32Gi", 0.2520, {}, "amd64"),
    "a-2x": ("2", "4Gi", 0.0680, {}, "arm64"),
    "a-4x": ("4", "8Gi", 0.1360, {}, "arm64"),
    "g-4x": ("4", "16Gi", 0.5260, {"nvidia.com/gpu": "1"}, "amd64"),
    "p-4x": ("4", "8Gi", 0.1800, {"pods": "4"}, "amd64"),
}
SPOT_FRACTION = 0.4
ZONE_STEP = 0.01


def price(name: str, zone: str, capacity_type: str) -> float:
    """The price of one offering, USD per hour."""
    base = TYPES[name][2] * (1.0 + ZONE_STEP * ZONES.index(zone))
    return round(base * (SPOT_FRACTION if capacity_type == "spot" else 1.0), 6)


def instance_types() -> list[dict[str, object]]:
    """The file's content: Karpenter-kwok ``InstanceTypeOptions`` entries."""
    out: list[dict[str, object]] = []
    for name, (cpu, memory, _, extra, arch) in TYPES.items():
        offerings = [
            {
                "Price": price(name, zone, ct),
                "Available": True,
                "Requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
                ],
            }
            for zone in ZONES
            for ct in ("spot", "on-demand")
        ]
        out.append(
            {
                "name": name,
                "offerings": offerings,
                "architecture": arch,
                "operatingSystems": ["linux"],
                "resources": {"cpu": cpu, "memory": memory, **extra},
            }
        )
    return out


def write(path: Path) -> Path:
    """Write the file; returns ``path``."""
    path.write_text(json.dumps(instance_types(), indent=1))
    return path
