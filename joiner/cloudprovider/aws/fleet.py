"""The CreateFleet request Karpenter-AWS sends and how it reads the answer
(``pkg/providers/instance``: ``launchInstance``, ``getOverrides``,
``updateUnavailableOfferingsCache``).

* **Request**: ``Type=instant``, ``TotalTargetCapacity=1``, ``DefaultTargetCapacityType``
  spot or on-demand (``on-demand`` for a reserved launch too: an ODCR is on-demand
  capacity); ``SpotOptions.AllocationStrategy=price-capacity-optimized`` or
  ``OnDemandOptions.AllocationStrategy=lowest-price`` (``capacity-optimized-prioritized`` and
  ``prioritized`` when a NodeOverlay priced an option); one ``LaunchTemplateConfigs`` entry
  per launch template (AMI; for a reserved launch, AMI x reservation, each template
  targeting its reservation and its overrides only that reservation's offerings), its
  overrides types x zones, each with ``InstanceType``, ``SubnetId``, ``AvailabilityZone``,
  ``ImageId`` and ``Priority`` = price; the instance, volume and fleet tags.
* **Errors**: each ``Errors[]`` entry with a capacity code marks (type, zone, capacity type)
  unavailable; ``AuthFailure.ServiceLinkedRoleCreationNotPermitted`` marks all spot. A
  reserved launch marks no offering: every error names a reservation that Karpenter then
  counts as full (``updateUnavailableOfferingsCache``; the caller's ``Availability``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels
from joiner.cloudprovider.aws.nodeclass import AMI, ResolvedNodeClass
from joiner.cloudprovider.launch import UnavailableOfferings
from joiner.cloudprovider.types import InstanceType, Offering, Subnet

log = logging.getLogger(__name__)

#: Fleet error codes that mean "no capacity here" (Karpenter ``isUnfulfillableCapacity`` and
#: friends); each marks the offering unavailable.
CAPACITY_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)
SPOT_ROLE_ERROR = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"

Chosen = Sequence[tuple[InstanceType, Offering]]


def launch_template_configs(
    chosen: Chosen,
    resolved: ResolvedNodeClass,
    per_zone: dict[str, Subnet],
    template_for: Callable[[AMI, str], str],
) -> list[dict[str, Any]]:
    """``LaunchTemplateConfigs``: one per AMI, each type with the image that serves it (its
    architecture and alias variant), so a config never mixes standard and GPU images, and per
    reservation of reserved offerings; types in the order given, zones sorted.
    ``template_for`` returns the launch template name for an AMI and a reservation id (``""``
    for none; it creates the template when needed and may raise ``AWSError``)."""
    names = list(dict.fromkeys(it.name for it, _ in chosen))
    by_name = {it.name: it for it, _ in chosen}
    ami_of = {name: resolved.ami_for(by_name[name]) for name in names}
    reservations = sorted({o.reservation_id for _, o in chosen})
    configs: list[dict[str, Any]] = []
    for ami, rid in ((a, r) for a in resolved.amis for r in reservations):
        overrides = [
            {
                "InstanceType": it.name,
                "SubnetId": per_zone[o.zone].id,
                "AvailabilityZone": o.zone,
                "ImageId": ami.id,
                "Priority": o.price_per_hour,
            }
            for name in names
            for it, o in sorted(chosen, key=lambda c: c[1].zone)
            if it.name == name and ami_of[name] == ami and o.reservation_id == rid
        ]
        if overrides:
            configs.append(
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": template_for(ami, rid),
                        "Version": "$Latest",
                    },
                    "Overrides": overrides,
                }
            )
    return configs


def fleet_request(
    configs: list[dict[str, Any]],
    capacity_type: str,
    tags: Sequence[tuple[str, str]],
    prioritized: bool = False,
) -> dict[str, Any]:
    """The CreateFleet parameters (module docstring). ``prioritized``: a NodeOverlay priced
    an option, so the overrides' priorities (their prices) rank them
    (karpenter-provider-aws ``pkg/providers/instance/types.go`` ``WithOverlay``)."""
    fleet: dict[str, Any] = {
        "Type": "instant",
        "LaunchTemplateConfigs": configs,
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": (
                labels.CAPACITY_TYPE_ON_DEMAND
                if capacity_type == labels.CAPACITY_TYPE_RESERVED
                else capacity_type
            ),
        },
        "TagSpecifications": [
            {"ResourceType": rt, "Tags": [{"Key": k, "Value": v} for k, v in tags]}
            for rt in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == labels.CAPACITY_TYPE_SPOT:
        spot = "capacity-optimized-prioritized" if prioritized else "price-capacity-optimized"
        fleet["SpotOptions"] = {"AllocationStrategy": spot}
    else:
        on_demand = "prioritized" if prioritized else "lowest-price"
        fleet["OnDemandOptions"] = {"AllocationStrategy": on_demand}
    return fleet


def override_of(entry: Mapping[str, Any], zone_of_subnet: dict[str, str]) -> tuple[str, str, str]:
    """(instance type, zone, subnet id) of a fleet ``Errors[]`` or ``Instances[]`` entry."""
    override = (entry.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
    itype = str(entry.get("InstanceType") or override.get("InstanceType") or "")
    subnet = str(override.get("SubnetId", ""))
    zone = str(override.get("AvailabilityZone") or zone_of_subnet.get(subnet, ""))
    return itype, zone, subnet


@dataclass
class FleetErrors:
    """The errors of one CreateFleet answer: offerings with no capacity and other codes."""

    ice: list[tuple[str, Offering]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    #: Reservations a reserved launch's errors name (Karpenter counts them full).
    full_reservations: list[str] = field(default_factory=list)


def read_errors(
    resp: Mapping[str, Any],
    chosen: Chosen,
    capacity_type: str,
    zone_of_subnet: dict[str, str],
    unavailable: UnavailableOfferings,
    ttl_s: float,
) -> FleetErrors:
    """Mark what the answer's ``Errors[]`` say is unavailable (module docstring) and sort
    them into capacity errors (with the offering) and other codes."""
    out = FleetErrors()
    for err in resp.get("Errors", []):
        code = str(err.get("ErrorCode", ""))
        itype, zone, _ = override_of(err, zone_of_subnet)
        if capacity_type == labels.CAPACITY_TYPE_RESERVED:
            offering = next((o for it, o in chosen if it.name == itype and o.zone == zone), None)
            if offering is not None:
                out.full_reservations.append(offering.reservation_id)
            if offering is not None and code in CAPACITY_ERROR_CODES:
                out.ice.append((itype, offering))
            else:
                out.other.append(code)
        elif code in CAPACITY_ERROR_CODES and itype and zone:
            unavailable.mark(itype, zone, capacity_type, ttl_s)
            offering = next((o for it, o in chosen if it.name == itype and o.zone == zone), None)
            if offering is not None:
                out.ice.append((itype, offering))
        elif code == SPOT_ROLE_ERROR:
            unavailable.mark("*", "*", labels.CAPACITY_TYPE_SPOT)
            out.other.append(code)
        else:
            out.other.append(code)
        log.info(
            "create fleet error %s for %s in %s: %s", code, itype, zone, err.get("ErrorMessage", "")
        )
    return out
