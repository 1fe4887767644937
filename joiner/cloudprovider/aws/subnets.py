"""Which subnet a launch uses in each zone, with the IPs of launches in flight counted, as
Karpenter-AWS's subnet provider does (``pkg/providers/subnet/subnet.go``).

* ``ZonalSubnetsForLaunch``: per zone, the subnet with the most free IPv4 addresses, where a
  subnet a recent launch drew from counts what is left after that launch's deduction (ties:
  the lowest subnet id, Joiner's deterministic order). Each chosen subnet is then charged the
  IPs the launch will use: the smallest ``pods`` capacity among the launch's instance types
  with an available offering in that zone and capacity type (every pod takes an IP).
* ``UpdateInflightIPs``: after CreateFleet, the subnets the request offered but the fleet did
  not launch into get their charge back (all of them when the call failed).
* A fresh ``DescribeSubnets`` (a new NodeClass resolution) replaces what was tracked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from joiner.api.quantity import PODS
from joiner.cloudprovider.aws.nodeclass import ResolvedNodeClass
from joiner.cloudprovider.types import InstanceType, Subnet


def _min_pods(instance_types: Sequence[InstanceType], zone: str, capacity_type: str) -> int:
    pods = [
        it.capacity.get(PODS, 0)
        for it in instance_types
        if any(
            o.available and o.zone == zone and o.capacity_type == capacity_type
            for o in it.offerings
        )
    ]
    return min(pods) if pods else 0


class InflightIPs:
    """Free IPs per subnet as launches in flight leave them (module docstring).

    Tracked counts belong to one NodeClass resolution (its ``resolved_at_s``): a newer one
    brings EC2's own counts, which already include those launches.
    """

    def __init__(self) -> None:
        #: subnet id -> (resolved_at_s of the resolution it was charged against, free IPs).
        self._tracked: dict[str, tuple[float, int]] = {}

    def free(self, resolved: ResolvedNodeClass, subnet_id: str) -> int:
        """The subnet's free IPs: the tracked count for this resolution, else EC2's."""
        tracked = self._tracked.get(subnet_id)
        if tracked is not None and tracked[0] == resolved.resolved_at_s:
            return tracked[1]
        return dict(resolved.free_ips).get(subnet_id, 0)

    def zonal_subnets(
        self,
        resolved: ResolvedNodeClass,
        instance_types: Sequence[InstanceType],
        capacity_type: str,
    ) -> dict[str, Subnet]:
        """Zone -> the subnet to launch into, each charged the launch's IPs."""
        chosen: dict[str, Subnet] = {}
        for s in sorted(resolved.subnets, key=lambda s: (-self.free(resolved, s.id), s.id)):
            chosen.setdefault(s.zone, s)
        for zone, s in chosen.items():
            used = _min_pods(instance_types, zone, capacity_type)
            self._tracked[s.id] = (resolved.resolved_at_s, self.free(resolved, s.id) - used)
        return chosen

    def release(
        self,
        resolved: ResolvedNodeClass,
        fleet_request: dict[str, Any],
        fleet_response: Mapping[str, Any] | None,
        instance_types: Sequence[InstanceType],
        zonal: dict[str, Subnet],
        capacity_type: str,
    ) -> None:
        """Give back the charge of the subnets the request offered and the fleet did not
        launch into (``fleet_response`` None: the call failed, so all of them)."""
        requested = {
            str(o.get("SubnetId", ""))
            for c in fleet_request.get("LaunchTemplateConfigs", [])
            for o in c.get("Overrides", [])
        }
        launched = {
            str(
                ((i.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}).get("SubnetId")
            )
            for i in (fleet_response or {}).get("Instances", [])
        }
        for s in zonal.values():
            tracked = self._tracked.get(s.id)
            if s.id not in requested or s.id in launched or tracked is None:
                continue
            if tracked[0] != resolved.resolved_at_s:
                continue  # EC2's count was refreshed since the charge
            used = _min_pods(instance_types, s.zone, capacity_type)
            self._tracked[s.id] = (tracked[0], tracked[1] + used)
