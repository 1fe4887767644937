"""Converters from validated manifest models to domain objects (v1 and core kinds).

The legacy kinds are in ``legacy``; both share the helpers here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from joiner.api import cron, durations, labels, quantity, resourcenames
from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.limits import MAX_STATIC_NODECLAIMS
from joiner.api.manifests import models as m
from joiner.api.manifests import nodeclass_rules, userdata
from joiner.api.manifests.models_karpenter import BUDGET_DURATION_PATTERN, BUDGET_NODES_PATTERN
from joiner.api.requirements import Requirement, Requirements

EC2NODECLASS_GROUP = "karpenter.k8s.aws"
EC2NODECLASS_KIND = "EC2NodeClass"
#: Karpenter's kwok test provider's NodeClass (``karpenter.kwok.sh/v1alpha1``).
KWOKNODECLASS_GROUP = "karpenter.kwok.sh"
KWOKNODECLASS_KIND = "KWOKNodeClass"


def requirement(r: m.NodeSelectorRequirement, field: str) -> Requirement:
    """One node-selector requirement, with Karpenter's value rules (In needs values, ...)."""
    if r.operator == "In" and not r.values:
        raise InputError("operator In needs at least one value", field=f"{field}.values")
    if r.operator in ("Exists", "DoesNotExist") and r.values:
        raise InputError(f"operator {r.operator} takes no values", field=f"{field}.values")
    if r.minValues is not None and r.operator == "In" and r.minValues > len(r.values):
        raise InputError(
            f"minValues {r.minValues} exceeds the {len(r.values)} values given",
            field=f"{field}.minValues",
        )
    try:
        return Requirement.new(r.key, r.operator, r.values, r.minValues)
    except InputError as exc:
        raise exc.located(field_prefix=field) from exc


def requirements(items: Iterable[m.NodeSelectorRequirement], field: str) -> tuple[Requirement, ...]:
    """Convert a list of requirements, naming the index of a bad one."""
    return tuple(requirement(r, f"{field}[{i}]") for i, r in enumerate(items))


def taints(items: Iterable[m.Taint]) -> tuple[o.Taint, ...]:
    """Convert taints."""
    return tuple(o.Taint(key=t.key, value=t.value, effect=t.effect) for t in items)


def resources(
    raw: Mapping[str, object], field: str, *, names: resourcenames.Rule = resourcenames.QUALIFIED
) -> tuple[tuple[str, int], ...]:
    """A resource list as sorted (name, amount) pairs; keys follow ``names``
    (``joiner.api.resourcenames``: Karpenter's CRDs check only that they are qualified).

    Raises:
        InputError: a bad key or quantity (named).
    """
    parsed = quantity.parse_resources(raw, field=field, names=names)
    return tuple(sorted(parsed.items()))


#: The ``kubelet`` block converter lives with the CRD rules it checks.
kubelet = nodeclass_rules.kubelet


def root_volume_bytes(
    mappings: list[m.BlockDeviceMapping], ami_family: str, field: str
) -> int | None:
    """Size of the volume that backs ephemeral storage (Karpenter: ``rootVolume`` mapping, else
    the family's ephemeral device: /dev/xvda, Bottlerocket /dev/xvdb, Windows /dev/sda1)."""
    device = {"Bottlerocket": "/dev/xvdb"}.get(ami_family, "/dev/xvda")
    if ami_family.startswith("Windows"):
        device = "/dev/sda1"
    chosen = next((b for b in mappings if b.rootVolume), None)
    if chosen is None:
        chosen = next((b for b in mappings if b.deviceName == device), None)
    if chosen is None or chosen.ebs is None or chosen.ebs.volumeSize is None:
        return None
    index = mappings.index(chosen)
    return quantity.parse(
        chosen.ebs.volumeSize,
        resource="ephemeral-storage",
        field=f"{field}[{index}].ebs.volumeSize",
    )


_BUDGET_NODES = re.compile(BUDGET_NODES_PATTERN, re.ASCII)
_BUDGET_DURATION = re.compile(BUDGET_DURATION_PATTERN, re.ASCII)


def budgets(items: list[m.Budget], field: str) -> tuple[o.DisruptionBudget, ...]:
    """NodePool disruption budgets, validated as Karpenter's CRD validates them.

    ``nodes`` is a string, a count or a percentage (0-100%), matching the CRD's pattern
    exactly (no blanks); ``schedule`` is a cron expression (UTC) and needs ``duration``
    (hours and minutes, e.g. ``8h`` or ``1h30m``, the CRD's pattern), and the other way
    round; ``reasons`` are ``Empty``, ``Drifted`` or ``Underutilized``. No budgets give
    Karpenter's default, ``nodes: 10%``.

    Raises:
        InputError: a field breaks one of those rules, naming ``budgets[i].<field>``.
    """
    if not items:
        return o.DEFAULT_BUDGETS
    out = []
    for i, b in enumerate(items):
        where = f"{field}[{i}]"
        nodes_text = b.nodes
        if not _BUDGET_NODES.fullmatch(nodes_text):
            raise InputError(
                f"{b.nodes!r} is neither a node count nor a percentage from 0% to 100%",
                field=f"{where}.nodes",
            )
        nodes: int | str = nodes_text if nodes_text.endswith("%") else int(nodes_text)
        if (b.schedule is None) != (b.duration is None):
            raise InputError(
                "'schedule' and 'duration' must be given together",
                field=f"{where}.{'duration' if b.duration is None else 'schedule'}",
            )
        duration_s = None
        if b.schedule is not None and b.duration is not None:
            cron.check_schedule(b.schedule, field=f"{where}.schedule")
            if not _BUDGET_DURATION.fullmatch(b.duration):
                raise InputError(
                    f"{b.duration!r} is not a budget duration (hours and minutes, such as 8h, "
                    "30m or 1h30m)",
                    field=f"{where}.duration",
                )
            duration_s = durations.parse_required_seconds(b.duration, field=f"{where}.duration")
        for j, reason in enumerate(b.reasons):
            if reason not in o.DISRUPTION_REASONS:
                raise InputError(
                    f"unknown reason {reason!r}; use {', '.join(o.DISRUPTION_REASONS)}",
                    field=f"{where}.reasons[{j}]",
                )
        out.append(
            o.DisruptionBudget(
                nodes=nodes,
                schedule=b.schedule.strip() if b.schedule is not None else None,
                duration_s=duration_s,
                reasons=tuple(b.reasons),
            )
        )
    return tuple(out)


def ami_selector_terms(terms: list[m.AMISelectorTerm]) -> tuple[o.AMISelectorTerm, ...]:
    """EC2NodeClass ``amiSelectorTerms`` as domain values (validated by the caller)."""
    return tuple(
        o.AMISelectorTerm(
            alias=t.alias,
            id=t.id,
            name=t.name,
            owner=t.owner,
            tags=tuple(sorted(t.tags.items())),
            ssm_parameter=t.ssmParameter,
        )
        for t in terms
    )


def block_device_mappings(
    mappings: list[m.BlockDeviceMapping], field: str
) -> tuple[o.BlockDevice, ...]:
    """``blockDeviceMappings`` as domain values; ``volumeSize`` parsed to bytes.

    Raises:
        InputError: a mapping without ``deviceName``, more than one ``rootVolume``, or a bad
            size.
    """
    out = []
    if sum(1 for b in mappings if b.rootVolume) > 1:
        raise InputError("at most one mapping may set rootVolume", field=field)
    for i, b in enumerate(mappings):
        if not b.deviceName:
            raise InputError("deviceName is required", field=f"{field}[{i}].deviceName")
        ebs = b.ebs
        size = None
        if ebs is not None and ebs.volumeSize is not None:
            size = quantity.parse(
                ebs.volumeSize, resource="ephemeral-storage", field=f"{field}[{i}].ebs.volumeSize"
            )
        out.append(
            o.BlockDevice(
                device_name=b.deviceName,
                root_volume=b.rootVolume,
                volume_size_bytes=size,
                volume_type=ebs.volumeType if ebs else None,
                iops=ebs.iops if ebs else None,
                throughput_mib_s=ebs.throughput if ebs else None,
                encrypted=ebs.encrypted if ebs else None,
                delete_on_termination=ebs.deleteOnTermination if ebs else None,
                kms_key_id=str(ebs.kmsKeyID) if ebs and ebs.kmsKeyID else None,
                snapshot_id=str(ebs.snapshotID) if ebs and ebs.snapshotID else None,
            )
        )
    return tuple(out)


_METADATA_FIELDS = {
    "httpEndpoint": ("http_endpoint", ("enabled", "disabled")),
    "httpProtocolIPv6": ("http_protocol_ipv6", ("enabled", "disabled")),
    "httpPutResponseHopLimit": ("http_put_response_hop_limit", None),
    "httpTokens": ("http_tokens", ("required", "optional")),
}


def metadata_options(raw: object, field: str) -> o.MetadataOptions:
    """``metadataOptions`` with Karpenter v1's defaults for absent keys.

    Raises:
        InputError: not a mapping, an unknown key, a value outside the allowed set, or a hop
            limit outside 1..64.
    """
    if raw is None:
        return o.MetadataOptions()
    if not isinstance(raw, dict):
        raise InputError("must be a mapping", field=field)
    values: dict[str, object] = {}
    for key, value in raw.items():
        spec = _METADATA_FIELDS.get(str(key))
        if spec is None:
            raise InputError(
                f"unknown field {key!r}; use one of {', '.join(_METADATA_FIELDS)}",
                field=f"{field}.{key}",
            )
        attr, allowed = spec
        if allowed is None:
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 64:
                raise InputError("must be an integer from 1 to 64", field=f"{field}.{key}")
        elif value not in allowed:
            raise InputError(f"must be one of {', '.join(allowed)}", field=f"{field}.{key}")
        values[attr] = value
    return o.MetadataOptions(**values)  # type: ignore[arg-type]


def on_demand_base(annotations: Mapping[str, str]) -> int | str | None:
    """Parse ``joiner.dev/on-demand-base``: a count or a percentage.

    Raises:
        InputError: anything else.
    """
    raw = annotations.get(labels.ON_DEMAND_BASE)
    if raw is None:
        return None
    text = raw.strip()
    field = f"metadata.annotations.{labels.ON_DEMAND_BASE}"
    if text.isascii() and text.isdigit():
        return int(text)
    if text.endswith("%") and text[:-1].isascii() and text[:-1].isdigit() and int(text[:-1]) <= 100:
        return text
    raise InputError(f"{raw!r} is neither a node count nor a percentage like 20%", field=field)


def _static_size(spec: m.NodePoolSpec, limits: tuple[tuple[str, int], ...]) -> None:
    """Joiner's limit on a static pool's NodeClaims (``MAX_STATIC_NODECLAIMS``, not an API
    rule): Karpenter's static provisioning creates ``spec.replicas`` NodeClaims within
    ``limits.nodes`` (``static/provisioning/controller.go`` ``Reconcile``), so a count above
    the limit is refused unless ``limits.nodes`` keeps the pool within it.

    Raises:
        InputError: naming ``spec.replicas``.
    """
    if spec.replicas is None or spec.replicas <= MAX_STATIC_NODECLAIMS:
        return
    nodes = dict(limits).get("nodes")
    if nodes is not None and nodes <= MAX_STATIC_NODECLAIMS:
        return
    raise InputError(
        f"{spec.replicas:,} is above Joiner's simulation limit of {MAX_STATIC_NODECLAIMS:,} "
        "NodeClaims per static NodePool (MAX_STATIC_NODECLAIMS: not an API rule, the API "
        "server would take it; Joiner does not simulate more); lower it, or set "
        f"spec.limits.nodes to {MAX_STATIC_NODECLAIMS:,} or less",
        field="spec.replicas",
    )


def _static_rules(spec: m.NodePoolSpec) -> None:
    """The NodePool CRD's CEL rules on a static pool (``spec.replicas`` set; Karpenter
    ``pkg/apis/v1/nodepool.go`` ``NodePoolSpec`` validations): only ``limits.nodes`` and
    no ``weight``. The third rule, no change between static and dynamic, compares with the
    stored object (``oldSelf``): the API server applies it to updates, which a file never is.

    Raises:
        InputError: a rule fails, naming the field.
    """
    if spec.replicas is None:
        return
    others = sorted(k for k in spec.limits if k != "nodes")
    if others:
        raise InputError(
            f"only 'limits.nodes' is supported on static NodePools (spec.replicas is set; "
            f"found {', '.join(others)})",
            field=f"spec.limits.{others[0]}",
        )
    if spec.weight is not None:
        raise InputError(
            "'weight' is not supported on static NodePools (spec.replicas is set)",
            field="spec.weight",
        )


def nodepool(doc: m.NodePool, file: str) -> o.NodePool:
    """A ``karpenter.sh/v1`` NodePool."""
    spec = doc.spec
    tmpl = spec.template
    source = o.Source(file, "NodePool", doc.metadata.name, doc.apiVersion)
    reqs = requirements(tmpl.spec.requirements, "spec.template.spec.requirements")
    label_reqs = [Requirement.in_(k, v) for k, v in sorted(tmpl.metadata.labels.items())]
    # Its nodes carry karpenter.sh/nodepool=<name>; pods may select a pool by it.
    label_reqs.append(Requirement.in_(labels.NODEPOOL, doc.metadata.name))
    expire = (
        720 * 3600.0
        if tmpl.spec.expireAfter is None
        else durations.parse_seconds(
            tmpl.spec.expireAfter, field="spec.template.spec.expireAfter", allow_never=True
        )
    )
    consolidate_after = (
        0.0
        if spec.disruption.consolidateAfter is None
        else durations.parse_seconds(
            spec.disruption.consolidateAfter,
            field="spec.disruption.consolidateAfter",
            allow_never=True,
        )
    )
    _static_rules(spec)
    limits = resources(spec.limits, "spec.limits")
    _static_size(spec, limits)
    return o.NodePool(
        name=doc.metadata.name,
        replicas=spec.replicas,
        requirements=Requirements([*reqs, *label_reqs]),
        node_class_ref=o.NodeClassRef(
            tmpl.spec.nodeClassRef.group, tmpl.spec.nodeClassRef.kind, tmpl.spec.nodeClassRef.name
        ),
        source=source,
        labels=tuple(sorted(tmpl.metadata.labels.items())),
        annotations=tuple(sorted(tmpl.metadata.annotations.items())),
        taints=taints(tmpl.spec.taints),
        startup_taints=taints(tmpl.spec.startupTaints),
        limits=limits,
        weight=spec.weight or 0,
        expire_after_s=expire,
        consolidation_policy=spec.disruption.consolidationPolicy,
        consolidate_after_s=consolidate_after,
        on_demand_base=on_demand_base(doc.metadata.annotations),
        budgets=budgets(spec.disruption.budgets, "spec.disruption.budgets"),
        termination_grace_period_s=None
        if tmpl.spec.terminationGracePeriod is None
        else durations.parse_required_seconds(
            tmpl.spec.terminationGracePeriod, field="spec.template.spec.terminationGracePeriod"
        ),
    )


def nodepool_v1beta1(doc: m.V1Beta1NodePool, file: str) -> o.NodePool:
    """A ``karpenter.sh/v1beta1`` NodePool, read as the v1 NodePool it converts to:
    ``WhenUnderutilized`` becomes ``WhenEmptyOrUnderutilized``, ``disruption.expireAfter``
    moves to the template, ``kubelet`` moves to the NodeClass (merged at load)."""
    spec = doc.spec
    tmpl = spec.template
    reqs = requirements(tmpl.spec.requirements, "spec.template.spec.requirements")
    label_reqs = [Requirement.in_(k, v) for k, v in sorted(tmpl.metadata.labels.items())]
    # Its nodes carry karpenter.sh/nodepool=<name>; pods may select a pool by it.
    label_reqs.append(Requirement.in_(labels.NODEPOOL, doc.metadata.name))
    d = spec.disruption
    expire = (
        720 * 3600.0
        if d.expireAfter is None
        else durations.parse_seconds(
            d.expireAfter, field="spec.disruption.expireAfter", allow_never=True
        )
    )
    if d.consolidationPolicy == "WhenUnderutilized" and d.consolidateAfter is not None:
        raise InputError(
            "consolidateAfter is only allowed with consolidationPolicy WhenEmpty in v1beta1",
            field="spec.disruption.consolidateAfter",
        )
    after = (
        0.0
        if d.consolidateAfter is None
        else durations.parse_seconds(
            d.consolidateAfter, field="spec.disruption.consolidateAfter", allow_never=True
        )
    )
    ref = tmpl.spec.nodeClassRef
    # v1 conversion takes nodeClassRef.group from the v1beta1 apiVersion's group.
    if ref.apiVersion is not None and ref.apiVersion.split("/", 1)[0] != EC2NODECLASS_GROUP:
        raise InputError(
            f"apiVersion must be in group {EC2NODECLASS_GROUP} (got {ref.apiVersion!r})",
            field="spec.template.spec.nodeClassRef.apiVersion",
        )
    return o.NodePool(
        name=doc.metadata.name,
        requirements=Requirements([*reqs, *label_reqs]),
        node_class_ref=o.NodeClassRef(EC2NODECLASS_GROUP, ref.kind or EC2NODECLASS_KIND, ref.name),
        source=o.Source(file, "NodePool", doc.metadata.name, doc.apiVersion),
        labels=tuple(sorted(tmpl.metadata.labels.items())),
        annotations=tuple(sorted(tmpl.metadata.annotations.items())),
        taints=taints(tmpl.spec.taints),
        startup_taints=taints(tmpl.spec.startupTaints),
        limits=resources(spec.limits, "spec.limits"),
        weight=spec.weight or 0,
        expire_after_s=expire,
        consolidation_policy="WhenEmptyOrUnderutilized"
        if d.consolidationPolicy == "WhenUnderutilized"
        else "WhenEmpty",
        consolidate_after_s=after,
        on_demand_base=on_demand_base(doc.metadata.annotations),
        budgets=budgets(d.budgets, "spec.disruption.budgets"),
        kubelet=kubelet(tmpl.spec.kubelet, "spec.template.spec.kubelet")
        if tmpl.spec.kubelet is not None
        else None,
    )


def ec2nodeclass_v1beta1(doc: m.V1Beta1EC2NodeClass, file: str) -> o.NodeClass:
    """A ``karpenter.k8s.aws/v1beta1`` EC2NodeClass (``amiFamily`` required, terms optional)."""
    spec = doc.spec
    if bool(spec.role) == bool(spec.instanceProfile):
        raise InputError("give exactly one of 'role' or 'instanceProfile'", field="spec.role")
    if spec.amiFamily not in AMI_FAMILIES:
        raise InputError(
            f"unknown amiFamily {spec.amiFamily!r}; use one of {', '.join(AMI_FAMILIES)}",
            field="spec.amiFamily",
        )
    return o.NodeClass(
        name=doc.metadata.name,
        source=o.Source(file, "EC2NodeClass", doc.metadata.name, doc.apiVersion),
        subnet_selector_terms=selector_terms(spec.subnetSelectorTerms, "spec.subnetSelectorTerms"),
        security_group_selector_terms=selector_terms(
            spec.securityGroupSelectorTerms, "spec.securityGroupSelectorTerms"
        ),
        ami_family=spec.amiFamily,
        role=spec.role,
        instance_profile=spec.instanceProfile,
        tags=tuple(sorted(spec.tags.items())),
        root_volume_bytes=root_volume_bytes(
            spec.blockDeviceMappings, spec.amiFamily, "spec.blockDeviceMappings"
        ),
        user_data=spec.userData,
        ami_selector_terms=ami_selector_terms(spec.amiSelectorTerms),
        block_device_mappings=block_device_mappings(
            spec.blockDeviceMappings, "spec.blockDeviceMappings"
        ),
        metadata_options=metadata_options(spec.metadataOptions, "spec.metadataOptions"),
        instance_store_policy=spec.instanceStorePolicy,
        detailed_monitoring=spec.detailedMonitoring is True,
        associate_public_ip_address=_opt_bool(spec.associatePublicIPAddress),
        **_nodeclass_status(doc.status),
    )


def selector_terms(terms: list[m.SelectorTerm], field: str) -> tuple[o.SelectorTerm, ...]:
    """EC2NodeClass selector terms; ``id`` must stand alone."""
    out = []
    for i, t in enumerate(terms):
        if t.id and (t.tags or t.name):
            raise InputError("'id' cannot be combined with other fields", field=f"{field}[{i}]")
        if not (t.id or t.name or t.tags):
            raise InputError("term selects nothing: give id, name or tags", field=f"{field}[{i}]")
        out.append(o.SelectorTerm(id=t.id, name=t.name, tags=tuple(sorted(t.tags.items()))))
    return tuple(out)


AMI_FAMILIES = (
    "AL2",
    "AL2023",
    "Bottlerocket",
    "Custom",
    "Windows2019",
    "Windows2022",
    "Windows2025",
)


def kwoknodeclass(doc: m.KWOKNodeClass, file: str) -> o.NodeClass:
    """A ``karpenter.kwok.sh/v1alpha1`` KWOKNodeClass: no subnets or security groups; its
    instance types come from a Karpenter-kwok instance-types file (cloudprovider/kwok.py)."""
    return o.NodeClass(
        name=doc.metadata.name,
        source=o.Source(file, KWOKNODECLASS_KIND, doc.metadata.name, doc.apiVersion),
        subnet_selector_terms=(),
        security_group_selector_terms=(),
    )


def ec2nodeclass(doc: m.EC2NodeClass, file: str) -> o.NodeClass:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass."""
    spec = doc.spec
    source = o.Source(file, "EC2NodeClass", doc.metadata.name, doc.apiVersion)
    if bool(spec.role) == bool(spec.instanceProfile):
        raise InputError("give exactly one of 'role' or 'instanceProfile'", field="spec.role")
    nodeclass_rules.check_tags(spec.tags, "spec.tags")
    nodeclass_rules.check_block_devices(spec.blockDeviceMappings, "spec.blockDeviceMappings")
    family = nodeclass_rules.check_ami_terms(spec.amiSelectorTerms, spec.amiFamily)
    if family is None:
        raise InputError(
            "amiFamily must be set when amiSelectorTerms select by id, name or tags",
            field="spec.amiFamily",
        )
    if family not in AMI_FAMILIES:
        raise InputError(
            f"unknown amiFamily {family!r}; use one of {', '.join(AMI_FAMILIES)}",
            field="spec.amiFamily",
        )
    userdata.check(family, spec.userData)
    return o.NodeClass(
        name=doc.metadata.name,
        source=source,
        subnet_selector_terms=selector_terms(spec.subnetSelectorTerms, "spec.subnetSelectorTerms"),
        security_group_selector_terms=selector_terms(
            spec.securityGroupSelectorTerms, "spec.securityGroupSelectorTerms"
        ),
        ami_family=family,
        role=spec.role,
        instance_profile=spec.instanceProfile,
        tags=tuple(sorted(spec.tags.items())),
        kubelet=kubelet(spec.kubelet, "spec.kubelet"),
        root_volume_bytes=root_volume_bytes(
            spec.blockDeviceMappings, family, "spec.blockDeviceMappings"
        ),
        user_data=spec.userData,
        annotations=tuple(sorted(doc.metadata.annotations.items())),
        ami_selector_terms=ami_selector_terms(spec.amiSelectorTerms),
        block_device_mappings=block_device_mappings(
            spec.blockDeviceMappings, "spec.blockDeviceMappings"
        ),
        metadata_options=metadata_options(spec.metadataOptions, "spec.metadataOptions"),
        instance_store_policy=spec.instanceStorePolicy,
        detailed_monitoring=spec.detailedMonitoring is True,
        associate_public_ip_address=_opt_bool(spec.associatePublicIPAddress),
        capacity_reservation_selector_terms=nodeclass_rules.capacity_reservation_terms(
            spec.capacityReservationSelectorTerms, "spec.capacityReservationSelectorTerms"
        ),
        **_nodeclass_status(doc.status),
    )


def _nodeclass_status(raw: object) -> dict[str, Any]:
    """``status.subnets`` and ``status.securityGroups``: the VPC Karpenter resolved.

    Raises:
        InputError: the status has the wrong shape (the field is named).
    """
    if raw is None:
        raw = {}
    try:
        status = m.EC2NodeClassStatus.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(
            "must be an EC2NodeClass status as Karpenter writes it (subnets: [{id, zone}], "
            "securityGroups: [{id, name}])",
            field=f"status.{where}" if where else "status",
        ) from exc
    return {
        "status_subnets": tuple(sorted({(s.id, s.zone) for s in status.subnets})),
        "status_security_groups": tuple(sorted({(g.id, g.name) for g in status.securityGroups})),
        "status_capacity_reservations": tuple(sorted({r.id for r in status.capacityReservations})),
    }


_V = TypeVar("_V")


def first_by_type(pairs: Iterable[tuple[str, _V]]) -> list[tuple[str, _V]]:
    """(type, value) pairs of a ``status.conditions`` list, the first of each type kept: a
    duplicated type reads as its first entry, as k8s.io/kubernetes pkg/api/v1/node/util.go
    ``GetNodeCondition`` (and Karpenter's ``operatorpkg`` status lookups) return the first
    match."""
    out: dict[str, _V] = {}
    for kind, value in pairs:
        out.setdefault(kind, value)
    return list(out.items())


def nodeclaim(doc: m.NodeClaim, file: str) -> o.ClusterNodeClaim:
    """A ``karpenter.sh/v1`` NodeClaim from a dump: its labels, taints and resources, its
    deletion, and what its consolidation reads (``lastPodEventTime``, the ``Initialized``
    and ``Consolidatable`` conditions)."""
    claim_labels = {labels.normalize_key(k): v for k, v in doc.metadata.labels.items()}
    status = doc.status
    conditions = dict(
        first_by_type((c.type, (c.status, c.lastTransitionTime)) for c in status.conditions)
    )
    return o.ClusterNodeClaim(
        name=doc.metadata.name,
        nodepool=claim_labels.get(labels.NODEPOOL)
        or next((r.name for r in doc.metadata.ownerReferences if r.kind == "NodePool"), None),
        node_class=doc.spec.nodeClassRef.name,
        labels=tuple(sorted(claim_labels.items())),
        taints=taints(doc.spec.taints),
        capacity=resources(status.capacity, "status.capacity"),
        allocatable=resources(status.allocatable, "status.allocatable"),
        source=o.Source(file, "NodeClaim", doc.metadata.name, doc.apiVersion),
        provider_id=status.providerID or None,
        node_name=status.nodeName or None,
        deleting=doc.metadata.deletionTimestamp is not None
        or conditions.get("InstanceTerminating", (None, None))[0] == "True",
        last_pod_event_at=_utc(status.lastPodEventTime),
        initialized_at=_utc(conditions["Initialized"][1])
        if conditions.get("Initialized", (None, None))[0] == "True"
        else None,
        consolidatable=conditions.get("Consolidatable", (None, None))[0],
    )


def _utc(at: datetime | None) -> datetime | None:
    """A dump's timestamp as an aware UTC instant (one without a zone is UTC)."""
    if at is None:
        return None
    return at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _opt_bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


# --- core kinds -----------------------------------------------------------------------------
