"""Karpenter feature gates Joiner honours (``--feature-gates`` and ``settings.featureGates``).

``SpotToSpotConsolidation`` (off by default, as in Karpenter): consolidation may replace
spot nodes with cheaper spot nodes. ``CapacityBuffer`` (off by default): the provisioner
keeps room for CapacityBuffers' virtual pods (``api.manifests.capacitybuffer``).
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.errors import InputError

#: Gate name -> settings key (Karpenter's Helm ``settings.featureGates`` spelling).
KNOWN = {
    "SpotToSpotConsolidation": "spotToSpotConsolidation",
    "CapacityBuffer": "capacityBuffer",
}


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates in force."""

    spot_to_spot_consolidation: bool = False
    capacity_buffer: bool = False


def parse(text: str, *, field: str = "--feature-gates") -> FeatureGates:
    """Parse ``Name=true,Other=false`` (Karpenter's ``--feature-gates`` flag form).

    Raises:
        InputError: an unknown gate, a missing ``=``, or a value other than true/false.
    """
    values: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if not sep:
            raise InputError(f"{part!r} must look like Name=true", field=field)
        if name not in KNOWN:
            raise InputError(
                f"unknown feature gate {name!r}; known: {', '.join(sorted(KNOWN))}", field=field
            )
        low = raw.strip().lower()
        if low not in ("true", "false"):
            raise InputError(f"{name}: {raw!r} is neither true nor false", field=field)
        values[name] = low == "true"
    return FeatureGates(
        spot_to_spot_consolidation=values.get("SpotToSpotConsolidation", False),
        capacity_buffer=values.get("CapacityBuffer", False),
    )
