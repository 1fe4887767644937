"""Karpenter feature gates Joiner honours (``--feature-gates`` and ``settings.featureGates``).

Only ``SpotToSpotConsolidation`` changes behaviour here (off by default, as in Karpenter):
with it, consolidation may replace spot nodes with cheaper spot nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.errors import InputError

#: Gate name -> settings key (Karpenter's Helm ``settings.featureGates`` spelling).
KNOWN = {"SpotToSpotConsolidation": "spotToSpotConsolidation"}


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates in force."""

    spot_to_spot_consolidation: bool = False


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
    return FeatureGates(spot_to_spot_consolidation=values.get("SpotToSpotConsolidation", False))
