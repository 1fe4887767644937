"""Assemble lint inputs (instance types per NodePool, pods, subnet resolution) and run the
pure checks of ``joiner.scheduling.lint``. Used by ``simulate``, ``convert`` and ``lint``."""

from __future__ import annotations

import random
from collections.abc import Sequence

from joiner.api import labels
from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import ManifestSet
from joiner.api.manifests.convert import KWOKNODECLASS_KIND
from joiner.api.manifests.to_v1 import PLACEHOLDER_ANNOTATION
from joiner.api.objects import NodeClass, PodTemplate
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.instancetype import build_instance_types
from joiner.cloudprovider.reservations import (
    CapacityReservation,
    select,
    with_reserved_offerings,
)
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import InstanceType, SecurityGroup, Subnet
from joiner.scheduling.lint import LintWarning, lint
from joiner.scheduling.static import gated
from joiner.sim.clock import SimClock


def pod_templates(m: ManifestSet) -> list[tuple[str, PodTemplate]]:
    """Every pod shape the manifests would run: workloads, CronJobs and bare Pods."""
    out = [(w.source.ref, w.template) for w in m.workloads]
    out += [(c.source.ref, c.template) for c in m.cronjobs]
    out += [(p.source.ref, p.template) for p in m.pods if p.owner is None]
    return out


def lint_manifests(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    *,
    subnets: Sequence[Subnet] | None = None,
    security_groups: Sequence[SecurityGroup] = (),
    kwok_types: Sequence[InstanceType] | None = None,
    reservations: Sequence[CapacityReservation] = (),
    static_capacity: bool = False,
) -> list[LintWarning]:
    """Lint findings for ``m`` in ``region``.

    ``static_capacity``: Karpenter's ``StaticCapacity`` gate; off, a static pool is linted
    as the dynamic pool Joiner then makes of it (``scheduling.static.gated``).

    NodePools of a KWOKNodeClass see ``kwok_types`` (Karpenter-kwok's instance types).
    The ``reservations`` a NodeClass selects add their ``reserved`` offerings.

    With ``subnets`` (a scenario's VPC) each NodeClass resolves its selectors against them and
    a NodeClass selecting no subnet is reported; without, every zone of the region is assumed.
    """
    warnings: list[LintWarning] = []
    zones_by_class: dict[str, list[tuple[str, str]]] = {}
    all_zones = catalog.zones(region)
    cloud = None
    if subnets is not None:
        cloud = SimulatedCloudProvider(
            catalog,
            region,
            SimClock(),
            random.Random(0),
            subnets=subnets,
            security_groups=security_groups,
            node_classes=m.nodeclasses,
        )
    for nc in m.nodeclasses:
        if nc.source.kind == KWOKNODECLASS_KIND:
            continue
        if cloud is None:
            zones_by_class[nc.name] = all_zones
            continue
        found = cloud.resolve_subnets(nc)
        if not found:
            legacy = nc.source.kind in ("AWSNodeTemplate", "Provisioner")
            field = "spec.subnetSelector" if legacy else "spec.subnetSelectorTerms"
            if nc.source.kind == "Provisioner":
                field = "spec.provider.subnetSelector"
            warnings.append(
                LintWarning(
                    "nodeclass-no-subnet",
                    nc.source.file,
                    nc.source.ref,
                    field,
                    "selects no subnet of the VPC "
                    f"({', '.join(s.id for s in subnets or ()) or 'no subnets declared'})",
                    "Fix the selector or declare the subnet under spec.cloud.subnets",
                )
            )
        zones_by_class[nc.name] = sorted({(s.zone, s.zone_id) for s in found})
        warnings += _unreachable_reservations(nc, reservations, {s.zone for s in found})
    types_by_pool: dict[str, list[InstanceType]] = {}
    for pool in m.nodepools:
        target = m.nodeclass(pool.node_class_ref.name)
        if target is not None and target.source.kind == KWOKNODECLASS_KIND:
            types_by_pool[pool.name] = list(kwok_types or ())
            continue
        if target is None or not zones_by_class.get(target.name):
            types_by_pool[pool.name] = []
            continue
        zones = zones_by_class[target.name]
        types_by_pool[pool.name] = with_reserved_offerings(
            build_instance_types(
                catalog,
                region,
                zones,
                kubelet=target.kubelet,
                ami_family=target.ami_family,
                root_volume_bytes=target.root_volume_bytes,
                instance_store_policy=target.instance_store_policy,
            ),
            select(reservations, target.capacity_reservation_selector_terms, 0.0),
            dict(zones),
            {},
        )
    for nc in m.nodeclasses:
        placeholders = dict(nc.annotations).get(PLACEHOLDER_ANNOTATION)
        if placeholders or (nc.role or "").startswith("PLACEHOLDER"):
            warnings.append(
                LintWarning(
                    "placeholder",
                    nc.source.file,
                    nc.source.ref,
                    f"metadata.annotations.{PLACEHOLDER_ANNOTATION}",
                    f"holds values joiner convert filled in: {placeholders or 'spec.role'}",
                    "Set the real values, then remove the annotation",
                )
            )
    pools = gated(m.nodepools, static_capacity)
    return warnings + _ignored_pods(m) + lint(pools, types_by_pool, pod_templates(m))


def _ignored_pods(m: ManifestSet) -> list[LintWarning]:
    """A workload, CronJob or unbound Pod whose pods Karpenter's provisioner ignores for a
    restricted label they require (``PodTemplate.karpenter_ignores``: Karpenter
    pkg/controllers/provisioning/provisioner.go ``Validate``): no node is ever launched for
    them."""
    shapes = [(w.source, "spec.template.spec", w.template) for w in m.workloads]
    shapes += [(c.source, "spec.jobTemplate.spec.template.spec", c.template) for c in m.cronjobs]
    shapes += [
        (p.source, "spec", p.template) for p in m.pods if p.owner is None and not p.node_name
    ]
    return [
        LintWarning(
            "karpenter-ignores",
            source.file,
            source.ref,
            field,
            f"Karpenter never provisions for its pods: {template.karpenter_ignores}",
            "Require a well-known label or a custom one instead (kube-scheduler can still "
            "place the pods on existing nodes)",
        )
        for source, field, template in shapes
        if template.karpenter_ignores and _requires_restricted(template)
    ]


def _requires_restricted(template: PodTemplate) -> bool:
    """The template requires a restricted label (a pod that only avoids Karpenter's nodes,
    ``karpenter.sh/nodepool DoesNotExist``, as Karpenter's own controller does, is meant to be
    ignored and draws no warning)."""
    return any(
        labels.restricted_label(key)
        for reqs in (template.node_selector, *template.required_affinity)
        for key in reqs
    )


def _unreachable_reservations(
    nc: NodeClass, reservations: Sequence[CapacityReservation], zones: set[str]
) -> list[LintWarning]:
    """A finding per reservation ``nc`` selects in a zone where it has no subnet: Karpenter-AWS
    offers a reservation only in the NodeClass's subnet zones
    (``capacityreservation`` offerings), so it is never launched into."""
    out = []
    for r in select(reservations, nc.capacity_reservation_selector_terms, 0.0):
        if r.zone in zones:
            continue
        out.append(
            LintWarning(
                "reservation-no-subnet",
                nc.source.file,
                nc.source.ref,
                "spec.capacityReservationSelectorTerms",
                f"selects capacity reservation {r.id} ({r.instance_type} in {r.zone}), but none "
                f"of its subnets is in {r.zone}: it is never launched into",
                f"Select a subnet in {r.zone}, or leave the reservation out",
            )
        )
    return out


def lint_lines(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    cloud: tuple[
        Sequence[Subnet] | None,
        Sequence[SecurityGroup],
        Sequence[InstanceType] | None,
        Sequence[CapacityReservation],
    ],
    gates: FeatureGates,
) -> list[str]:
    """``lint_manifests``'s findings as the warning lines ``joiner plan`` and ``joiner
    disrupt`` print beside their own; ``cloud`` is (subnets, security groups, kwok types,
    reservations) as ``lint_manifests`` takes them."""
    subnets, groups, kwok_types, reservations = cloud
    found = lint_manifests(
        m,
        catalog,
        region,
        subnets=subnets,
        security_groups=groups,
        kwok_types=kwok_types,
        reservations=reservations,
        static_capacity=gates.static_capacity,
    )
    return [str(w) for w in found]
