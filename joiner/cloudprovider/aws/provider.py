"""``AWSCloudProvider``: the CloudProvider port on real EC2, launching as Karpenter does.

Launch (karpenter-provider-aws ``pkg/providers/instance/instance.go`` ``Create``,
``launchInstance``, ``getOverrides``):

1. Candidates are the request's (instance type, offering) pairs that are available, allowed
   by the requirements and not in the unavailable-offerings cache; the shared launch rules
   (``launch.launch_candidates``) drop exotic types and Spot types dearer than the cheapest
   on-demand offering (neither when a requirement has ``minValues``) and cut the list to the
   60 cheapest types, which must still meet ``minValues``.
2. The capacity type is the first of reserved, spot, on-demand that the request allows and
   has a candidate (a reserved offering counts while Karpenter's count for its reservation,
   ``aws.reservations``, is above 0). Each zone gets one subnet: the most free IPs,
   counting the launches in flight (``subnets.InflightIPs``, Karpenter's subnet provider).
3. One launch template per AMI (and per reservation, which it targets): each type goes with
   the newest image that serves it (its architecture and, for alias images, its
   standard/NVIDIA/Neuron variant); overrides are
   types x zones, each with ``InstanceType``, ``SubnetId``, ``AvailabilityZone``,
   ``ImageId`` and ``Priority`` = price (``fleet.launch_template_configs``).
4. ``CreateFleet`` ``Type=instant`` for capacity 1 (``fleet.fleet_request``).
5. Each ``Errors[]`` entry with a capacity code marks (type, zone, capacity type) unavailable
   for 3 minutes (``fleet.read_errors``). No instance back: ``InsufficientCapacityError``
   when any error was a capacity error, else ``CreateError`` with the first error's code.
   These per-instance errors are the fleet's answer, not a failed call, so botocore does not
   retry them and neither does Joiner: the next provisioning pass launches again. A failing
   call (after botocore's retries, ``api.RetrySettings``) raises ``CreateError`` with the
   AWS code.

Instances are tagged ``karpenter.sh/nodepool``, ``karpenter.sh/nodeclaim``,
``karpenter.k8s.aws/ec2nodeclass``, ``kubernetes.io/cluster/<cluster>=owned`` and
``eks:eks-cluster-name`` (Karpenter's tags), plus the NodeClass's ``tags``; ``list`` finds
them by the NodePool tag key and the cluster tag.

Dry run (``AWSSettings.dry_run``, ``joiner run --dry-run``): every read as above, no write;
launches are planned, deletes remembered (``aws.dryrun``), NodeClasses that go keep their
launch templates, and the clients refuse any write (``api.refuse_writes``).
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from joiner.api import labels
from joiner.api.objects import NodeClass, Source
from joiner.cloudprovider.aws.api import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_MODE,
    AWSClients,
    AWSError,
    RetryMode,
    RetrySettings,
    aws_errors,
    new_clients,
)
from joiner.cloudprovider.aws.drift import instance_drift
from joiner.cloudprovider.aws.dryrun import DryRunLedger
from joiner.cloudprovider.aws.fleet import (
    FleetErrors,
    fleet_request,
    launch_template_configs,
    override_of,
    read_errors,
)
from joiner.cloudprovider.aws.instancetypes import DEFAULT_REFRESH_INTERVAL_S, InstanceTypeSource
from joiner.cloudprovider.aws.launchtemplates import LaunchTemplates, is_template_not_found
from joiner.cloudprovider.aws.nodeclass import (
    AMI,
    DEFAULT_RESOLUTION_TTL_S,
    ClusterInfo,
    NodeClassResolver,
    ResolvedNodeClass,
    launch_template_data,
)
from joiner.cloudprovider.aws.pricing import DEFAULT_PRICE_REFRESH_INTERVAL_S, PriceSource
from joiner.cloudprovider.aws.reservations import ReservationSource
from joiner.cloudprovider.aws.subnets import InflightIPs
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_type, build_instance_types
from joiner.cloudprovider.launch import (
    UNAVAILABLE_OFFERING_TTL_S,
    UnavailableOfferings,
    choose_capacity_type,
    launch_candidates,
)
from joiner.cloudprovider.launchtemplates import LAUNCH_TEMPLATE_TTL_S
from joiner.cloudprovider.nodeclass_drift import NODECLASS_HASH_TAG, nodeclass_hash
from joiner.cloudprovider.nodeclass_status import NodeClassStatus
from joiner.cloudprovider.reservations import reserved_like, with_reserved_offerings
from joiner.cloudprovider.types import (
    CreateError,
    Instance,
    InstanceType,
    InsufficientCapacityError,
    LaunchRequest,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    Offering,
    Subnet,
)

if TYPE_CHECKING:
    from mypy_boto3_ec2.type_defs import CreateFleetResultTypeDef

log = logging.getLogger(__name__)

NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
EKS_CLUSTER_TAG = "eks:eks-cluster-name"
#: Instance states that still count as a live instance (Karpenter's List filter).
LIVE_STATES = ("pending", "running", "stopping", "stopped")


def cluster_tag(cluster_name: str) -> str:
    """``kubernetes.io/cluster/<name>``, valued ``owned`` on every instance Joiner launches."""
    return f"kubernetes.io/cluster/{cluster_name}"


def provider_id(zone: str, instance_id: str) -> str:
    """``aws:///<zone>/<instance id>``, the Node ``spec.providerID`` form."""
    return f"aws:///{zone}/{instance_id}"


def instance_id_of(provider_id_: str) -> str:
    """The instance id: the last path segment of a provider id (or the id itself)."""
    return provider_id_.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class AWSSettings:
    """Settings of the AWS provider. Durations in seconds.

    ``pricing_api`` False keeps the packaged on-demand table (Karpenter's ``isolatedVPC``).
    ``retry_mode`` and ``max_attempts`` (every attempt of one request, the first included)
    are botocore's retry policy for the clients ``new_aws_provider`` builds
    (``api.RetrySettings``).
    """

    region: str
    cluster: ClusterInfo
    instance_type_refresh_s: float = DEFAULT_REFRESH_INTERVAL_S
    price_refresh_s: float = DEFAULT_PRICE_REFRESH_INTERVAL_S
    resolution_ttl_s: float = DEFAULT_RESOLUTION_TTL_S
    unavailable_offering_ttl_s: float = UNAVAILABLE_OFFERING_TTL_S
    launch_template_ttl_s: float = LAUNCH_TEMPLATE_TTL_S
    pricing_api: bool = True
    #: The ReservedCapacity feature gate: capacity reservations become reserved offerings.
    reserved_capacity: bool = True
    retry_mode: RetryMode = DEFAULT_RETRY_MODE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    #: Read only: plan launches and remember deletes instead of calling EC2 (``aws.dryrun``).
    dry_run: bool = False


@dataclass(slots=True)
class _Launch:
    """One CreateFleet launch being put together: the request, its NodeClass as resolved,
    the capacity type and (type, offering) pairs chosen, the subnet of each zone, the
    instance tags, and the launch templates it used (filled in as they are ensured)."""

    request: LaunchRequest
    node_class: NodeClass
    resolved: ResolvedNodeClass
    capacity_type: str
    chosen: list[tuple[InstanceType, Offering]]
    per_zone: dict[str, Subnet]
    tags: tuple[tuple[str, str], ...]
    templates: list[str] = field(default_factory=list)

    @property
    def zone_of_subnet(self) -> dict[str, str]:
        """Subnet id -> zone, over the resolved subnets."""
        return {s.id: s.zone for s in self.resolved.subnets}

    def types(self) -> list[InstanceType]:
        """The chosen instance types, each once, in the order chosen."""
        return list({it.name: it for it, _ in self.chosen}.values())


class AWSCloudProvider:
    """CloudProvider on EC2 through boto3 (module docstring: launch rules and tags).

    ``now`` returns seconds since the Unix epoch, injected (``time.time`` in
    ``new_aws_provider``), so tests control time; retries and their waits are botocore's,
    configured on ``clients``.
    ``instance_types`` and ``prices`` may be shared between providers of one region.
    """

    def __init__(
        self,
        clients: AWSClients,
        settings: AWSSettings,
        node_classes: Sequence[NodeClass],
        *,
        now: Callable[[], float],
        packaged: Catalog | None = None,
        instance_types: InstanceTypeSource | None = None,
        prices: PriceSource | None = None,
    ) -> None:
        self.clients = clients
        self.settings = settings
        self.region = settings.region
        self._now = now
        packaged = packaged or Catalog.load()
        self._packaged = packaged
        self.node_classes = {n.name: n for n in node_classes}
        self.instance_types = instance_types or InstanceTypeSource(
            clients.ec2,
            settings.region,
            now,
            packaged=packaged,
            refresh_interval_s=settings.instance_type_refresh_s,
        )
        self.prices = prices or PriceSource(
            clients.ec2,
            clients.pricing,
            settings.region,
            now,
            packaged=packaged,
            refresh_interval_s=settings.price_refresh_s,
            pricing_api=settings.pricing_api,
        )
        self.resolver = NodeClassResolver(
            clients.ec2,
            clients.ssm,
            settings.cluster,
            now,
            ttl_s=settings.resolution_ttl_s,
        )
        self.launch_templates = LaunchTemplates(
            clients.ec2,
            settings.cluster.name,
            now,
            ttl_s=settings.launch_template_ttl_s,
        )
        self.unavailable = UnavailableOfferings(now)
        self.reservations = ReservationSource(clients.ec2, now)
        self.inflight_ips = InflightIPs()
        self._catalog_key: tuple[float, int] | None = None
        self._catalog: Catalog | None = None
        #: The last CreateFleet request sent (for logs and tests).
        self.last_fleet_request: dict[str, Any] | None = None
        #: A dry run's planned and deleted instances (None: not a dry run).
        self.dry_run = DryRunLedger() if settings.dry_run else None

    # -- NodeClasses and instance types -----------------------------------------------------

    def set_node_classes(self, node_classes: Sequence[NodeClass]) -> None:
        """Replace the NodeClasses (controller mode: the EC2NodeClasses changed). A NodeClass
        that is gone has its launch templates deleted (Karpenter-AWS's EC2NodeClass
        termination controller calls ``DeleteAll``); a failed deletion is logged, and the
        templates are left to the cache's TTL or an operator."""
        new = {n.name: n for n in node_classes}
        for name in sorted(set(self.node_classes) - set(new)):
            if self.dry_run is not None:
                log.info("dry run: launch templates of EC2NodeClass %s not deleted", name)
                continue
            try:
                self.launch_templates.delete_all(name)
            except AWSError as exc:
                log.error("deleting launch templates of EC2NodeClass %s: %s", name, exc)
        self.node_classes = new

    def _node_class(self, name: str) -> NodeClass:
        nc = self.node_classes.get(name)
        if nc is None:
            raise NodeClassNotReadyError(f"NodeClass {name!r} does not exist")
        return nc

    def resolve(self, node_class: str) -> ResolvedNodeClass:
        """Subnets, security groups and AMIs of a NodeClass (cached for a minute).

        Raises:
            NodeClassNotReadyError: unknown NodeClass, or it selects nothing.
        """
        return self.resolver.resolve(self._node_class(node_class))

    def node_class_status(self, name: str) -> NodeClassStatus | None:
        """The NodeClass's status parts as resolved in EC2 and SSM
        (``NodeClassResolver.status``), or None for a NodeClass not loaded."""
        nc = self.node_classes.get(name)
        return self.resolver.status(nc) if nc is not None else None

    def _api_catalog(self) -> Catalog:
        on_demand = self.prices.on_demand_prices()
        discovery = self.instance_types.discovery()
        key = (discovery.fetched_at_s, self.prices.version)
        if self._catalog is None or self._catalog_key != key:
            spot: dict[str, tuple[float, int]] = {}
            for name in discovery.infos:
                quote = (
                    self._packaged.spot_quote(self.region, name) if self._has_advisor() else None
                )
                if quote is not None:
                    spot[name] = (quote.savings_pct, quote.interruption_bucket)
            self._catalog = self.instance_types.catalog(
                on_demand, spot, prices_key=(id(self.prices), self.prices.version)
            )
            self._catalog_key = key
        return self._catalog

    def _has_advisor(self) -> bool:
        try:
            self._packaged.spot_quote(self.region, "m5.large")
        except ValueError:
            return False
        return True

    def get_instance_types(self, node_class: str) -> builtins.list[InstanceType]:
        """Every discovered type with offerings in the NodeClass's subnet zones, by name.

        Offerings are priced from ``PriceSource`` (spot per zone), and unavailable where the
        type is not offered, has no price, or is in the unavailable-offerings cache.

        Raises:
            NodeClassNotReadyError: the NodeClass does not resolve.
            AWSError: instance-type discovery failed.
        """
        nc = self._node_class(node_class)
        resolved = self.resolver.resolve(nc)
        return self._types_for(nc, resolved.zones())

    def _types_for(self, nc: NodeClass, zones: Sequence[tuple[str, str]]) -> list[InstanceType]:
        catalog = self._api_catalog()
        types = build_instance_types(
            catalog,
            self.region,
            zones,
            kubelet=nc.kubelet,
            ami_family=nc.ami_family,
            root_volume_bytes=nc.root_volume_bytes,
            instance_store_policy=nc.instance_store_policy,
        )
        types = [self._priced(it) for it in types]
        if not (self.settings.reserved_capacity and nc.capacity_reservation_selector_terms):
            return types
        chosen = self.reservations.selected(nc.capacity_reservation_selector_terms)
        counts = self.reservations.availability.counts()
        return with_reserved_offerings(types, chosen, dict(zones), counts)

    def _priced(self, it: InstanceType) -> InstanceType:
        offerings = []
        for o in it.offerings:
            if o.capacity_type == labels.CAPACITY_TYPE_SPOT:
                price = self.prices.spot_price(it.name, o.zone)
            else:
                price = self.prices.on_demand_price(it.name)
            available = (
                o.available
                and price is not None
                and not self.unavailable.is_unavailable(it.name, o.zone, o.capacity_type)
            )
            offerings.append(
                replace(
                    o,
                    price_per_hour=price if price is not None else 0.0,
                    available=available,
                    price_estimated=self.prices.on_demand_estimated,
                )
            )
        return replace(it, offerings=tuple(offerings))

    def mark_unavailable(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        ttl_s: float = UNAVAILABLE_OFFERING_TTL_S,
    ) -> None:
        """Skip this offering for ``ttl_s`` (the interruption controller's ``OfferingCache``)."""
        self.unavailable.mark(instance_type, zone, capacity_type, ttl_s)

    # -- launch -----------------------------------------------------------------------------

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance with CreateFleet (module docstring).

        Raises:
            NodeClassNotReadyError: the NodeClass does not resolve.
            InsufficientCapacityError: nothing allowed is available, or the fleet returned
                capacity errors only (those offerings are then skipped for 3 minutes).
            CreateError: any other failure; ``reason`` is the AWS error code.
        """
        nc = self._node_class(request.node_class)
        resolved = self.resolver.resolve(nc)
        candidates = launch_candidates(self._launchable(request, resolved), request.requirements)
        capacity_type = choose_capacity_type(candidates, request.requirements)
        if capacity_type is None:
            raise InsufficientCapacityError(
                f"no available offering for nodeclaim {request.nodeclaim_name} "
                f"({len(request.instance_types)} instance types)"
            )
        chosen = [(it, o) for it, o in candidates if o.capacity_type == capacity_type]
        types = list({it.name: it for it, _ in chosen}.values())
        launch = _Launch(
            request=request,
            node_class=nc,
            resolved=resolved,
            capacity_type=capacity_type,
            chosen=chosen,
            per_zone=self.inflight_ips.zonal_subnets(resolved, types, capacity_type),
            tags=self._tags(nc, request),
        )
        if self.dry_run is not None:
            return self._plan(launch)
        resp = self._create_fleet(launch)
        errors = read_errors(
            resp,
            chosen,
            capacity_type,
            launch.zone_of_subnet,
            self.unavailable,
            self.settings.unavailable_offering_ttl_s,
        )
        self.reservations.availability.mark_unavailable(*errors.full_reservations)
        instance = self._fleet_instance(launch, resp)
        if instance is not None:
            return instance
        raise self._fleet_failure(launch, errors)

    def _launchable(
        self, request: LaunchRequest, resolved: ResolvedNodeClass
    ) -> list[tuple[InstanceType, Offering]]:
        """The request's (type, offering) pairs that are available, allowed by its
        requirements, in a resolved zone, not in the unavailable-offerings cache, served by
        an AMI, and (reserved) in a reservation Karpenter still counts as having room."""
        reqs = request.requirements
        zones = {s.zone for s in resolved.subnets}
        return [
            (it, o)
            for it in request.instance_types
            for o in it.offerings
            if o.available
            and o.compatible(reqs)
            and o.zone in zones
            and not self.unavailable.is_unavailable(it.name, o.zone, o.capacity_type)
            and resolved.ami_for(it) is not None
            and (not o.reservation_id or self.reservations.availability.count(o.reservation_id))
        ]

    def _plan(self, launch: _Launch) -> Instance:
        """A dry run's launch: no launch template, no CreateFleet; the cheapest pool chosen
        (``DryRunLedger.plan``), and the in-flight IP charge of the other subnets given back."""
        assert self.dry_run is not None
        subnets = {zone: s.id for zone, s in launch.per_zone.items()}
        instance = self.dry_run.plan(
            launch.request.nodeclaim_name,
            launch.chosen,
            subnets,
            provider_id,
            self._now(),
            launch.tags,
        )
        offered = {
            "LaunchTemplateConfigs": [{"Overrides": [{"SubnetId": s} for s in subnets.values()]}]
        }
        used = {
            "Instances": [
                {"LaunchTemplateAndOverrides": {"Overrides": {"SubnetId": instance.subnet_id}}}
            ]
        }
        self.inflight_ips.release(
            launch.resolved, offered, used, launch.types(), launch.per_zone, launch.capacity_type
        )
        return instance

    def _create_fleet(self, launch: _Launch) -> CreateFleetResultTypeDef:
        """Ensure the launch templates, send CreateFleet and give back the in-flight IPs of
        the subnets it did not use.

        Raises:
            CreateError: a launch template could not be made, or CreateFleet failed.
        """
        nc, resolved = launch.node_class, launch.resolved
        node_labels = ((NODEPOOL_TAG, launch.request.nodepool),)

        def template_for(ami: AMI, reservation_id: str = "") -> str:
            data = launch_template_data(nc, resolved, ami, self.settings.cluster, node_labels)
            if reservation_id:  # Karpenter-AWS: one template per targeted reservation
                target = {"CapacityReservationId": reservation_id}
                data["CapacityReservationSpecification"] = {"CapacityReservationTarget": target}
            launch.templates.append(self.launch_templates.ensure(data, nc.name, nc.tags))
            return launch.templates[-1]

        types, per_zone = launch.types(), launch.per_zone
        try:
            configs = launch_template_configs(launch.chosen, resolved, per_zone, template_for)
        except AWSError as exc:
            self.inflight_ips.release(resolved, {}, None, types, per_zone, launch.capacity_type)
            raise CreateError(exc.code, f"launch template: {exc}") from exc
        fleet = fleet_request(
            configs, launch.capacity_type, launch.tags, launch.request.priority_by_price
        )
        self.last_fleet_request = fleet
        try:
            with aws_errors():
                resp = self.clients.ec2.create_fleet(**fleet)
        except AWSError as exc:
            self.inflight_ips.release(resolved, fleet, None, types, per_zone, launch.capacity_type)
            self._invalidate_templates(launch.templates, [exc.code])
            raise CreateError(exc.code, str(exc)) from exc
        self.inflight_ips.release(resolved, fleet, resp, types, per_zone, launch.capacity_type)
        return resp

    def _fleet_instance(self, launch: _Launch, resp: CreateFleetResultTypeDef) -> Instance | None:
        """The instance CreateFleet launched, or None when it launched none.

        Raises:
            CreateError: it launched a type or zone that was not asked for (the instance is
                terminated first, so none is left that nobody tracks).
        """
        for got in resp.get("Instances", []):
            ids = got.get("InstanceIds") or []
            if not ids:
                continue
            itype, zone, subnet = override_of(got, launch.zone_of_subnet)
            offering = next(
                (o for t, o in launch.chosen if t.name == itype and o.zone == zone), None
            )
            if offering is None:
                with aws_errors():
                    self.clients.ec2.terminate_instances(InstanceIds=list(ids))
                raise CreateError(
                    "UnexpectedInstance",
                    f"CreateFleet returned {itype} in {zone!r}, which was not requested",
                )
            iid = str(ids[0])
            self.reservations.availability.mark_launched(offering.reservation_id)
            return Instance(
                provider_id=provider_id(zone, iid),
                instance_id=iid,
                instance_type=next(t for t, o in launch.chosen if o is offering),
                offering=offering,
                subnet_id=subnet or launch.per_zone[zone].id,
                launched_at_s=self._now(),
                tags=launch.tags,
            )
        return None

    def _fleet_failure(self, launch: _Launch, errors: FleetErrors) -> Exception:
        """What a CreateFleet that launched nothing raises: ``InsufficientCapacityError``
        when any error was a capacity error, else ``CreateError`` with the first code (a
        missing launch template is forgotten so the next launch makes it again)."""
        name = launch.request.nodeclaim_name
        if errors.ice:
            return InsufficientCapacityError(
                f"CreateFleet for nodeclaim {name}: "
                + ", ".join(sorted({f"{n}/{o.zone}" for n, o in errors.ice}))
                + " have no capacity",
                errors.ice,
            )
        if errors.other:
            codes = sorted(set(errors.other))
            self._invalidate_templates(launch.templates, codes)
            return CreateError(codes[0], f"CreateFleet for nodeclaim {name} failed: {codes}")
        return CreateError("NoInstance", "CreateFleet returned neither instances nor errors")

    def _invalidate_templates(self, names: Sequence[str], codes: Sequence[str]) -> None:
        """A launch that found its template gone forgets the templates it used, so the next
        launch creates them again (Karpenter-AWS ``instance.go``: ``InvalidateCache`` on
        ``IsLaunchTemplateNotFound``)."""
        if any(is_template_not_found(c) for c in codes):
            for name in names:
                self.launch_templates.invalidate(name)

    def _tags(self, nc: NodeClass, request: LaunchRequest) -> tuple[tuple[str, str], ...]:
        cluster = self.settings.cluster.name
        tags = dict(nc.tags)
        tags.update(request.tags)
        tags.update(
            {
                NODEPOOL_TAG: request.nodepool,
                NODECLAIM_TAG: request.nodeclaim_name,
                NODECLASS_TAG: nc.name,
                NODECLASS_HASH_TAG: nodeclass_hash(nc),
                cluster_tag(cluster): "owned",
                EKS_CLUSTER_TAG: cluster,
            }
        )
        return tuple(sorted(tags.items()))

    # -- reading and deleting ---------------------------------------------------------------

    def _describe(self, **params: Any) -> list[dict[str, Any]]:
        """Every instance DescribeInstances returns for ``params``, over all its pages.

        Raises:
            AWSError: a page failed after botocore's retries.
        """
        out: list[dict[str, Any]] = []
        with aws_errors():
            for page in self.clients.ec2.get_paginator("describe_instances").paginate(**params):
                for reservation in page.get("Reservations", []):
                    out.extend(dict(i) for i in reservation.get("Instances", []))
        return out

    def _instance(self, desc: dict[str, Any]) -> Instance:
        tags = tuple(sorted((t["Key"], t["Value"]) for t in desc.get("Tags", [])))
        tag_map = dict(tags)
        zone = str(desc.get("Placement", {}).get("AvailabilityZone", ""))
        itype = str(desc["InstanceType"])
        reservation = str(desc.get("CapacityReservationId") or "")
        spot = desc.get("InstanceLifecycle") == "spot"
        capacity_type = labels.CAPACITY_TYPE_SPOT if spot else labels.CAPACITY_TYPE_ON_DEMAND
        nc = self.node_classes.get(tag_map.get(NODECLASS_TAG, "")) or _DEFAULT_NC
        zones = [(z, zid) for z, zid in self.instance_types.discovery().zones if z == zone]
        catalog = self._api_catalog()
        try:
            info = catalog.info(itype)
        except KeyError:
            raise CreateError(
                "UnknownInstanceType", f"{itype} is not a discovered instance type"
            ) from None
        it = self._priced(
            build_instance_type(
                catalog,
                info,
                self.region,
                zones,
                kubelet=nc.kubelet,
                ami_family=nc.ami_family,
                root_volume_bytes=nc.root_volume_bytes,
                instance_store_policy=nc.instance_store_policy,
            )
        )
        offering = next(
            (o for o in it.offerings if o.zone == zone and o.capacity_type == capacity_type),
            None,
        )
        if offering is None:
            offering = Offering(zone, zones[0][1] if zones else "", capacity_type, 0.0, False)
        if reservation and not spot:  # in an ODCR (Karpenter-AWS ``NewInstance``)
            offering = reserved_like(offering, reservation)
        launched = desc.get("LaunchTime")
        return Instance(
            provider_id=provider_id(zone, str(desc["InstanceId"])),
            instance_id=str(desc["InstanceId"]),
            instance_type=it,
            offering=offering,
            subnet_id=str(desc.get("SubnetId", "")),
            launched_at_s=launched.timestamp() if isinstance(launched, datetime) else 0.0,
            tags=tags,
        )

    def _live(self, instance_id: str) -> dict[str, Any]:
        try:
            found = self._describe(InstanceIds=[instance_id])
        except AWSError as exc:
            if exc.code.startswith("InvalidInstanceID"):
                raise NodeClaimNotFoundError(instance_id) from exc
            raise
        live = [d for d in found if d.get("State", {}).get("Name") in LIVE_STATES]
        if not live:
            raise NodeClaimNotFoundError(instance_id)
        return live[0]

    def get(self, provider_id: str) -> Instance:
        """The live instance (pending, running, stopping or stopped).

        Raises:
            NodeClaimNotFoundError: unknown, shutting down or terminated.
            AWSError: DescribeInstances failed.
        """
        if self.dry_run is not None:
            planned = self.dry_run.get(provider_id, instance_id_of(provider_id))
            if planned is not None:
                return planned
        return self._instance(self._live(instance_id_of(provider_id)))

    def list(self) -> builtins.list[Instance]:
        """Live instances of this cluster with a NodePool tag (Karpenter's List), by provider id.

        Raises:
            AWSError: DescribeInstances failed.
        """
        found = self._describe(
            Filters=[
                {"Name": "tag-key", "Values": [NODEPOOL_TAG]},
                {"Name": f"tag:{cluster_tag(self.settings.cluster.name)}", "Values": ["owned"]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
            ]
        )
        live = [self._instance(d) for d in found]
        if self.dry_run is not None:
            live = self.dry_run.visible(live)
        return sorted(live, key=lambda i: i.provider_id)

    def delete(self, provider_id: str) -> None:
        """TerminateInstances. Raises ``NodeClaimNotFoundError`` when the instance is already
        shutting down, terminated or unknown (a delete that raises it is complete).

        Raises:
            NodeClaimNotFoundError: see above.
            AWSError: a call failed for another reason.
        """
        iid = instance_id_of(provider_id)
        if self.dry_run is not None:
            self._dry_delete(provider_id, iid)
            return
        live = self._live(iid)
        try:
            with aws_errors():
                self.clients.ec2.terminate_instances(InstanceIds=[iid])
            self.reservations.availability.mark_terminated(live.get("CapacityReservationId", ""))
        except AWSError as exc:
            if exc.code.startswith("InvalidInstanceID"):
                raise NodeClaimNotFoundError(iid) from exc
            raise

    def _dry_delete(self, provider_id: str, iid: str) -> None:
        """A dry run's delete: a planned instance is forgotten; a live one is remembered as
        terminated, and TerminateInstances is not sent.

        Raises:
            NodeClaimNotFoundError: gone already (or deleted by this dry run before).
        """
        assert self.dry_run is not None
        if self.dry_run.get(provider_id, iid) is None:
            self._live(iid)
        if not self.dry_run.delete(provider_id, iid):
            log.info("dry run: would terminate %s (TerminateInstances not sent)", iid)

    # -- drift ------------------------------------------------------------------------------

    def is_drifted(self, provider_id: str) -> str:
        """Why the instance no longer matches its NodeClass, checked in Karpenter-AWS's order
        (``pkg/cloudprovider/drift.go``): ``NodeClassDrift`` (a field of the static drift
        hash changed since launch; ``nodeclass_drift``), ``AMIDrift`` (its image is none of
        the NodeClass's AMIs that serve its type: architecture and alias variant),
        ``SubnetDrift`` (its subnet is no longer selected) or ``SecurityGroupDrift`` (its
        groups differ from the selected ones); ``""`` when not drifted or the NodeClass is
        unknown (Karpenter ``IsDrifted``).

        Raises:
            NodeClaimNotFoundError: the instance is gone.
            NodeClassNotReadyError: the NodeClass no longer resolves.
        """
        if self.dry_run is not None and self.dry_run.get(provider_id, instance_id_of(provider_id)):
            return ""  # planned by this dry run, from the NodeClass as it is
        desc = self._live(instance_id_of(provider_id))
        tag_map = {t["Key"]: t["Value"] for t in desc.get("Tags", [])}
        nc = self.node_classes.get(tag_map.get(NODECLASS_TAG, ""))
        if nc is None:
            return ""
        return instance_drift(
            desc, nc, self.resolver.resolve, lambda d: self._instance(d).instance_type
        )


#: Used to rebuild a type for an instance whose NodeClass Joiner does not know.
_DEFAULT_NC = NodeClass(
    name="",
    source=Source("", "EC2NodeClass", ""),
    subnet_selector_terms=(),
    security_group_selector_terms=(),
)


def new_aws_provider(
    settings: AWSSettings,
    node_classes: Sequence[NodeClass],
    *,
    endpoint_url: str | None = None,
    session: Any = None,
) -> AWSCloudProvider:
    """The constructor controller mode (``joiner run --cloud aws``) calls: boto3 clients for
    ``settings.region`` from the default credential chain (or ``session``), the wall clock
    and botocore's retries as ``settings.retry_mode`` and ``settings.max_attempts`` say. The
    composition root is the only caller that reads real time."""
    retries = RetrySettings(settings.retry_mode, settings.max_attempts)
    clients = new_clients(
        settings.region,
        session=session,
        endpoint_url=endpoint_url,
        retries=retries,
        read_only=settings.dry_run,
    )
    return AWSCloudProvider(clients, settings, node_classes, now=time.time)
