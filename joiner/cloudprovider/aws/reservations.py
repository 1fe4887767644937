"""Capacity reservations on EC2: ``DescribeCapacityReservations`` as Karpenter-AWS queries it.

* ``describe_params``: one request per selector term (Karpenter-AWS
  ``capacityreservation.Query.DescribeCapacityReservationsInput``): always the filter
  ``state=active``; an ``id`` term asks for that id (no ``MaxResults``, which EC2 refuses
  with ids); a tag term filters ``tag:<key>=<value>`` (``tag-key=<key>`` for ``*``), plus
  ``owner-id`` and ``instance-match-criteria`` when given, ``MaxResults=1000``.
* ``ReservationSource``: the reservations a NodeClass selects, each query's answer cached
  for ``RESERVATION_POLL_S`` (Karpenter's NodeClass controller lists them every minute);
  every answer syncs the ``Availability`` counts (``cloudprovider.reservations``); an id
  EC2 does not know (``InvalidCapacityReservationId.NotFound``) selects nothing, as in
  Karpenter's ``List``. Expired reservations and duplicates are dropped
  (``reservations.select``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from joiner.api.objects import CapacityReservationSelectorTerm
from joiner.cloudprovider.aws.api import AWSError, aws_errors
from joiner.cloudprovider.reservations import Availability, CapacityReservation, select

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

#: How long one DescribeCapacityReservations answer is used (Karpenter polls every minute).
RESERVATION_POLL_S = 60.0


def describe_params(term: CapacityReservationSelectorTerm) -> dict[str, Any]:
    """The DescribeCapacityReservations parameters of one term (module docstring)."""
    filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["active"]}]
    if term.id:
        return {"Filters": filters, "CapacityReservationIds": [term.id]}
    if term.owner_id:
        filters.append({"Name": "owner-id", "Values": [term.owner_id]})
    for key, value in term.tags:
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    if term.instance_match_criteria:
        filters.append(
            {"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]}
        )
    return {"Filters": filters, "MaxResults": 1000}


def from_description(desc: Mapping[str, Any]) -> CapacityReservation:
    """One ``CapacityReservations[]`` entry as a ``CapacityReservation`` (end time in Unix
    seconds)."""
    end = desc.get("EndDate")
    return CapacityReservation(
        id=str(desc["CapacityReservationId"]),
        instance_type=str(desc.get("InstanceType", "")),
        zone=str(desc.get("AvailabilityZone", "")),
        owner_id=str(desc.get("OwnerId", "")),
        instance_count=int(desc.get("TotalInstanceCount", 0)),
        available_count=int(desc.get("AvailableInstanceCount", 0)),
        tags=tuple(sorted((str(t["Key"]), str(t["Value"])) for t in desc.get("Tags", []))),
        end_time_s=end.timestamp() if isinstance(end, datetime) else None,
        reservation_type=str(desc.get("ReservationType", "default")),
        instance_match_criteria=str(desc.get("InstanceMatchCriteria", "targeted")),
        state=str(desc.get("State", "active")),
    )


class ReservationSource:
    """The reservations NodeClasses select, with Karpenter's availability counts.

    ``now`` returns Unix seconds. Raises ``AWSError`` when a describe call fails for another
    reason than an unknown id.
    """

    def __init__(
        self, ec2: EC2Client, now: Callable[[], float], poll_s: float = RESERVATION_POLL_S
    ) -> None:
        self._ec2 = ec2
        self._now = now
        self._poll_s = poll_s
        self._cache: dict[CapacityReservationSelectorTerm, tuple[float, list[CapacityReservation]]]
        self._cache = {}
        self.availability = Availability()

    def selected(
        self, terms: Sequence[CapacityReservationSelectorTerm]
    ) -> list[CapacityReservation]:
        """The active, unexpired reservations ``terms`` select, by id."""
        now = self._now()
        found: list[CapacityReservation] = []
        for term in terms:
            hit = self._cache.get(term)
            if hit is None or now - hit[0] >= self._poll_s:
                hit = (now, self._describe(term))
                self._cache[term] = hit
                self.availability.sync(hit[1])
            found.extend(hit[1])
        return select(found, terms, now)

    def _describe(self, term: CapacityReservationSelectorTerm) -> list[CapacityReservation]:
        out: list[CapacityReservation] = []
        paginator = self._ec2.get_paginator("describe_capacity_reservations")
        try:
            with aws_errors():
                for page in paginator.paginate(**describe_params(term)):
                    out.extend(from_description(d) for d in page.get("CapacityReservations", []))
        except AWSError as exc:
            if term.id and "NotFound" in exc.code:
                return []
            raise
        return out
