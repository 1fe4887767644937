"""Karpenter feature gates Joiner honours (``--feature-gates`` and ``settings.featureGates``).

``SpotToSpotConsolidation`` (off by default, as in Karpenter): consolidation may replace
spot nodes with cheaper spot nodes. ``CapacityBuffer`` (off by default): the provisioner
keeps room for CapacityBuffers' virtual pods (``api.manifests.capacitybuffer``).
``NodeRepair`` (off by default, as in Karpenter): nodes unhealthy past their cloud's
tolerations are replaced (``controllers/health``).
``ReservedCapacity`` (on by default, as in Karpenter since the gate went Beta in v1.6): the
on-demand capacity reservations an EC2NodeClass selects become ``reserved`` offerings that
launch first (``cloudprovider.reservations``); off, they are ignored.
``NodeOverlay`` (off by default, as in Karpenter, where it is alpha): NodeOverlays change
the prices and extended-resource capacities of the instance types they select
(``cloudprovider.overlay``); off, they are warned about and have no effect.
``StaticCapacity`` (off by default, as in Karpenter, where it is alpha): a NodePool with
``spec.replicas`` keeps that many nodes and takes no part in pods-driven provisioning or
consolidation (``scheduling.static``); off, such a pool is warned about and provisioned for
pending pods like any other.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.errors import InputError

#: Gate name -> settings key (Karpenter's Helm ``settings.featureGates`` spelling).
KNOWN = {
    "SpotToSpotConsolidation": "spotToSpotConsolidation",
    "CapacityBuffer": "capacityBuffer",
    "NodeRepair": "nodeRepair",
    "ReservedCapacity": "reservedCapacity",
    "NodeOverlay": "nodeOverlay",
    "StaticCapacity": "staticCapacity",
}

#: Go's ``strconv.ParseBool``: the only spellings it accepts, and what they mean.
PARSE_BOOL = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates in force."""

    spot_to_spot_consolidation: bool = False
    capacity_buffer: bool = False
    node_repair: bool = False
    reserved_capacity: bool = True
    node_overlay: bool = False
    static_capacity: bool = False


def parse(
    text: str, *, field: str = "--feature-gates", base: FeatureGates | None = None
) -> FeatureGates:
    """Parse ``Name=true,Other=false`` (Karpenter's ``--feature-gates`` flag form). A gate
    the text does not name keeps its value in ``base`` (a Scenario's
    ``settings.featureGates``), else Karpenter's default.

    Upstream (``pkg/operator/options`` ``ParseFeatureGates``) reads the flag, or its
    ``FEATURE_GATES`` environment variable, with component-base's ``MapStringBool``: pairs
    split at ``,`` and ``=``, blanks trimmed, and each value read by Go's
    ``strconv.ParseBool`` (``PARSE_BOOL``: ``true``/``false``, ``1``/``0``, ``t``/``f``,
    ``TRUE``, ``True``, ...; ``yes`` or ``tRuE`` is an error).

    Raises:
        InputError: an unknown gate, a missing ``=``, or a value ParseBool rejects.
    """
    values: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError(f"{part!r} must look like Name=true", field=field)
        if name not in KNOWN:
            raise InputError(
                f"unknown feature gate {name!r}; known: {', '.join(sorted(KNOWN))}", field=field
            )
        value = PARSE_BOOL.get(raw.strip())
        if value is None:
            raise InputError(
                f"{name}: {raw.strip()!r} is not a boolean (true, false, 1, 0, t, f)", field=field
            )
        values[name] = value
    was = base or FeatureGates()
    return FeatureGates(
        spot_to_spot_consolidation=values.get(
            "SpotToSpotConsolidation", was.spot_to_spot_consolidation
        ),
        capacity_buffer=values.get("CapacityBuffer", was.capacity_buffer),
        node_repair=values.get("NodeRepair", was.node_repair),
        reserved_capacity=values.get("ReservedCapacity", was.reserved_capacity),
        node_overlay=values.get("NodeOverlay", was.node_overlay),
        static_capacity=values.get("StaticCapacity", was.static_capacity),
    )
