"""A real cluster's region and VPC, read from its objects (a dump or a live cluster).

* **Region**: the nodes' ``topology.kubernetes.io/region`` labels, the zones in their
  ``spec.providerID`` (``aws:///<zone>/<id>``) and zone labels, the NodeClaims' labels, and
  the zones of the EC2NodeClasses' ``status.subnets``. A region given on the command line
  or in a scenario must agree with them; two regions in one cluster are an input error.
* **VPC**: an EC2NodeClass's ``status.subnets`` and ``status.securityGroups`` are what
  Karpenter resolved its selector terms to (``pkg/controllers/nodeclass/subnet.go``
  writes them; launches use them), so the simulated cloud gets exactly those subnets, and
  the NodeClass selects them by id: launches go only to the cluster's zones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.manifests import ManifestSet
from joiner.api.objects import NodeClass, SelectorTerm
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.types import SecurityGroup, Subnet

#: Where no region is given or found.
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class _Evidence:
    region: str
    what: str


def _zone_regions(catalog: Catalog) -> dict[str, str]:
    return {zone: region for region in catalog.regions() for zone, _ in catalog.zones(region)}


def _provider_zone(provider_id: str | None) -> str | None:
    """The zone of ``aws:///us-east-1a/i-0123`` (also Fargate's longer form), or None."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    parts = [p for p in provider_id[len("aws://") :].split("/") if p]
    return parts[0] if len(parts) >= 2 else None


def _evidence(m: ManifestSet, catalog: Catalog) -> list[_Evidence]:
    zones = _zone_regions(catalog)
    known = set(catalog.regions())
    out: list[_Evidence] = []

    def region_label(value: str | None, what: str) -> None:
        if value is None:
            return
        if value not in known:
            raise InputError(
                f"the cluster is in region {value!r}, which Joiner's catalog does not have "
                f"(known: {', '.join(sorted(known))})",
                obj=what,
                field=f"metadata.labels[{labels.REGION}]",
            )
        out.append(_Evidence(value, f"{what} (label {labels.REGION}={value})"))

    def zone(value: str | None, what: str, how: str) -> None:
        if value is not None and value in zones:
            out.append(_Evidence(zones[value], f"{what} ({how} {value})"))

    placed = [
        *((f"Node/{n.name}", n.labels, n.provider_id) for n in m.nodes),
        *((f"NodeClaim/{c.name}", c.labels, c.provider_id) for c in m.nodeclaims),
    ]
    for what, object_labels, provider_id in placed:
        d = dict(object_labels)
        region_label(d.get(labels.REGION), what)
        zone(d.get(labels.ZONE), what, "zone")
        zone(_provider_zone(provider_id), what, "providerID zone")
    for nc in m.nodeclasses:
        for subnet_id, z in nc.status_subnets:
            what = f"{nc.source.kind}/{nc.name}"
            if z not in zones:
                raise InputError(
                    f"subnet {subnet_id} is in zone {z!r}, which is in no region of Joiner's "
                    "catalog",
                    file=nc.source.file,
                    obj=nc.source.ref,
                    field="status.subnets",
                )
            zone(z, what, f"status.subnets {subnet_id} in")
    return out


def cluster_region(m: ManifestSet, catalog: Catalog, given: str | None, given_by: str) -> str:
    """The region the cluster in ``m`` runs in.

    ``given`` is the region the user named (``--region``, ``spec.region``; None when not
    named) and ``given_by`` what named it, for messages. Returns ``given``, else the region
    the objects show, else ``DEFAULT_REGION``.

    Raises:
        InputError: the objects show two regions, a region the catalog lacks, or a region
            other than ``given`` (the message names both and the object that shows it).
    """
    found = _evidence(m, catalog)
    regions = sorted({e.region for e in found})
    if len(regions) > 1:
        first = {r: next(e for e in found if e.region == r) for r in regions}
        raise InputError(
            "the manifests describe more than one region: "
            + "; ".join(f"{r} ({first[r].what})" for r in regions)
        )
    if given is not None:
        if regions and regions[0] != given:
            raise InputError(
                f"{given_by} {given} contradicts the cluster, which is in {regions[0]}: "
                f"{found[0].what}; give {given_by} {regions[0]} or leave it out"
            )
        return given
    return regions[0] if regions else DEFAULT_REGION


def status_vpc(
    nodeclasses: list[NodeClass], catalog: Catalog, region: str
) -> tuple[list[NodeClass], list[Subnet], list[SecurityGroup]]:
    """The NodeClasses pinned to the subnets and security groups in their status, and those
    subnets and groups (empty lists when no NodeClass has a status).

    A NodeClass without ``status.subnets`` is returned unchanged (its selector terms are
    resolved against whatever VPC the caller has).

    Raises:
        InputError: a status subnet's zone is not in ``region``.
    """
    zone_ids = dict(catalog.zones(region))
    classes: list[NodeClass] = []
    subnets: dict[str, Subnet] = {}
    groups: dict[str, SecurityGroup] = {}
    for nc in nodeclasses:
        fixed = nc
        if nc.status_subnets:
            for subnet_id, zone in nc.status_subnets:
                if zone not in zone_ids:
                    raise InputError(
                        f"subnet {subnet_id} is in zone {zone!r}, not in region {region} "
                        f"(zones: {', '.join(sorted(zone_ids))})",
                        file=nc.source.file,
                        obj=nc.source.ref,
                        field="status.subnets",
                    )
                subnets.setdefault(subnet_id, Subnet(subnet_id, zone, zone_ids[zone]))
            fixed = replace(
                fixed,
                subnet_selector_terms=tuple(SelectorTerm(id=i) for i, _ in nc.status_subnets),
            )
        if nc.status_security_groups:
            for group_id, name in nc.status_security_groups:
                groups.setdefault(group_id, SecurityGroup(group_id, name))
            fixed = replace(
                fixed,
                security_group_selector_terms=tuple(
                    SelectorTerm(id=i) for i, _ in nc.status_security_groups
                ),
            )
        classes.append(fixed)
    return classes, list(subnets.values()), list(groups.values())
