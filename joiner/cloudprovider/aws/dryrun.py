"""What the AWS provider does in a dry run (``joiner run --dry-run --cloud aws``): it reads
EC2 as usual (subnets, security groups, AMIs, instance types, prices, instances) and writes
nothing. A launch is planned instead of sent: the cheapest pool the CreateFleet request
would have offered, as an instance with a ``i-dryrun...`` id that ``get`` and ``list``
return until a delete; a delete of a real instance is remembered instead of sent, and the
instance is reported gone from then on. The boto3 clients refuse every write as well
(``api.refuse_writes``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from joiner.api.logkeys import log_keys
from joiner.cloudprovider.types import (
    Allocation,
    Instance,
    InstanceType,
    NodeClaimNotFoundError,
    Offering,
)

log = logging.getLogger(__name__)

#: The prefix of the instance ids a dry run plans (real ids are ``i-`` and 17 hex digits).
PLANNED_PREFIX = "i-dryrun"


@dataclass(slots=True)
class DryRunLedger:
    """The instances a dry run planned (by provider id) and the real ones it would have
    terminated (by instance id)."""

    planned: dict[str, Instance] = field(default_factory=dict)
    terminated: set[str] = field(default_factory=set)
    _count: int = 0

    def plan(
        self,
        nodeclaim: str,
        chosen: Sequence[tuple[InstanceType, Offering]],
        subnet_of_zone: dict[str, str],
        provider_id_of: Callable[[str, str], str],
        now_s: float,
        tags: tuple[tuple[str, str], ...],
    ) -> Instance:
        """The planned instance: the cheapest of ``chosen`` (price, then type name and
        zone), in the subnet picked for its zone. ``chosen`` is not empty."""
        it, offering = min(chosen, key=lambda p: (p[1].price_per_hour, p[0].name, p[1].zone))
        self._count += 1
        iid = f"{PLANNED_PREFIX}{self._count:09d}"
        instance = Instance(
            provider_id=provider_id_of(offering.zone, iid),
            instance_id=iid,
            instance_type=it,
            offering=offering,
            subnet_id=subnet_of_zone.get(offering.zone, ""),
            launched_at_s=now_s,
            tags=tags,
            allocation=Allocation(
                strategy="dry-run",
                price_per_hour=offering.price_per_hour,
                capacity_score=None,
                pools=len(chosen),
                reason="dry run: the cheapest pool offered; CreateFleet was not sent",
            ),
        )
        self.planned[instance.provider_id] = instance
        log.info(
            "dry run: would launch %s %s in %s for nodeclaim %s (CreateFleet not sent)",
            offering.capacity_type,
            it.name,
            offering.zone,
            nodeclaim,
            extra=log_keys(NodeClaim=nodeclaim),
        )
        return instance

    def get(self, provider_id: str, instance_id: str) -> Instance | None:
        """A planned instance, or None for a real one.

        Raises:
            NodeClaimNotFoundError: the dry run deleted it.
        """
        if instance_id in self.terminated:
            raise NodeClaimNotFoundError(instance_id)
        return self.planned.get(provider_id)

    def delete(self, provider_id: str, instance_id: str) -> bool:
        """Forget a planned instance (True), or remember a real one as terminated (False:
        the caller checks first that it is live).

        Raises:
            NodeClaimNotFoundError: the dry run deleted it before.
        """
        if instance_id in self.terminated:
            raise NodeClaimNotFoundError(instance_id)
        self.terminated.add(instance_id)
        if self.planned.pop(provider_id, None) is not None:
            log.info("dry run: planned instance %s deleted", instance_id)
            return True
        return False

    def visible(self, live: Sequence[Instance]) -> list[Instance]:
        """``live`` without the instances the dry run terminated, plus the planned ones."""
        kept = [i for i in live if i.instance_id not in self.terminated]
        return kept + list(self.planned.values())
