"""Legacy kinds read with their own semantics: ``karpenter.sh/v1alpha5`` Provisioner and
``karpenter.k8s.aws/v1alpha1`` AWSNodeTemplate.

Provisioner defaults are the ones the legacy AWS webhook applied (karpenter-provider-aws
``v1alpha5`` ``SetDefaults``), each only when the user did not constrain that key:

* ``kubernetes.io/os In [linux]``
* ``kubernetes.io/arch In [amd64]``
* ``karpenter.sh/capacity-type In [on-demand]``
* ``karpenter.k8s.aws/instance-category In [c, m, r]`` and ``instance-generation Gt 2``, only
  when none of instance-type, instance-family, instance-category or instance-generation is set.

Field mapping to v1 follows Karpenter's migration (``consolidation.enabled`` ->
WhenEmptyOrUnderutilized, ``ttlSecondsAfterEmpty`` -> WhenEmpty + consolidateAfter, neither ->
WhenEmpty + Never; ``ttlSecondsUntilExpired`` -> expireAfter, unset -> Never).
"""

from __future__ import annotations

from dataclasses import replace

from joiner.api import labels
from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import convert
from joiner.api.manifests import models as m
from joiner.api.requirements import Requirement, Requirements

LEGACY_NODECLASS_KIND = "AWSNodeTemplate"


def provisioner_defaults(present: set[str]) -> list[Requirement]:
    """The requirements the legacy AWS webhook added, given the keys the user set."""
    added: list[Requirement] = []
    if labels.OS not in present:
        added.append(Requirement.in_(labels.OS, "linux"))
    if labels.ARCH not in present:
        added.append(Requirement.in_(labels.ARCH, "amd64"))
    if labels.CAPACITY_TYPE not in present:
        added.append(Requirement.in_(labels.CAPACITY_TYPE, labels.CAPACITY_TYPE_ON_DEMAND))
    if not present & {
        labels.INSTANCE_TYPE,
        labels.INSTANCE_FAMILY,
        labels.INSTANCE_CATEGORY,
        labels.INSTANCE_GENERATION,
    }:
        added.append(Requirement.in_(labels.INSTANCE_CATEGORY, "c", "m", "r"))
        added.append(Requirement.new(labels.INSTANCE_GENERATION, "Gt", ["2"]))
    return added


def provisioner(doc: m.Provisioner, file: str) -> o.NodePool:
    """A v1alpha5 Provisioner as the NodePool it behaves like."""
    spec = doc.spec
    name = doc.metadata.name
    source = o.Source(file, "Provisioner", name, doc.apiVersion)
    if spec.providerRef is not None and spec.provider is not None:
        raise InputError(
            "spec.provider and spec.providerRef are mutually exclusive", field="spec.provider"
        )
    if spec.providerRef is None and spec.provider is None:
        raise InputError(
            "missing spec.providerRef (the AWSNodeTemplate to use) or an inline spec.provider",
            field="spec.providerRef",
        )
    node_class_name = spec.providerRef.name if spec.providerRef is not None else name
    if spec.providerRef is not None:
        _check_provider_ref(spec.providerRef)
    if spec.consolidation and spec.consolidation.enabled and spec.ttlSecondsAfterEmpty is not None:
        raise InputError(
            "consolidation.enabled and ttlSecondsAfterEmpty are mutually exclusive",
            field="spec.ttlSecondsAfterEmpty",
        )
    user = convert.requirements(spec.requirements, "spec.requirements")
    present = {r.key for r in user} | {labels.normalize_key(k) for k in spec.labels}
    defaults = provisioner_defaults(present)
    label_reqs = [Requirement.in_(k, v) for k, v in sorted(spec.labels.items())]
    # Legacy nodes carry karpenter.sh/provisioner-name; pods may still select it.
    label_reqs.append(Requirement.in_(labels.LEGACY_PROVISIONER_NAME, name))
    label_reqs.append(Requirement.in_(labels.NODEPOOL, name))
    if spec.consolidation and spec.consolidation.enabled:
        policy, after = "WhenEmptyOrUnderutilized", 0.0
    elif spec.ttlSecondsAfterEmpty is not None:
        policy, after = "WhenEmpty", float(spec.ttlSecondsAfterEmpty)
    else:
        policy, after = "WhenEmpty", None
    expire = float(spec.ttlSecondsUntilExpired) if spec.ttlSecondsUntilExpired is not None else None
    return o.NodePool(
        name=name,
        requirements=Requirements([*user, *defaults, *label_reqs]),
        node_class_ref=o.NodeClassRef(
            convert.EC2NODECLASS_GROUP, LEGACY_NODECLASS_KIND, node_class_name
        ),
        source=source,
        labels=tuple(sorted(spec.labels.items())),
        annotations=tuple(sorted(spec.annotations.items())),
        taints=convert.taints(spec.taints),
        startup_taints=convert.taints(spec.startupTaints),
        limits=convert.resources(spec.limits.resources, "spec.limits.resources"),
        weight=spec.weight or 0,
        expire_after_s=expire,
        consolidation_policy=policy,
        consolidate_after_s=after,
        on_demand_base=convert.on_demand_base(doc.metadata.annotations),
        defaulted=tuple(r.describe() for r in defaults),
        kubelet=convert.kubelet(spec.kubeletConfiguration, "spec.kubeletConfiguration")
        if spec.kubeletConfiguration is not None
        else None,
    )


def inline_provider(doc: m.Provisioner, file: str) -> o.NodeClass | None:
    """The NodeClass an inline v1alpha5 ``spec.provider`` block describes, named after the
    Provisioner (the pool's ``node_class_ref`` points at it)."""
    p = doc.spec.provider
    if p is None:
        return None
    template = m.AWSNodeTemplate(
        apiVersion=doc.apiVersion,
        kind="AWSNodeTemplate",
        metadata=m.Metadata(name=doc.metadata.name),
        spec=m.AWSNodeTemplateSpec(**p.model_dump(exclude={"apiVersion", "kind"})),
    )
    try:
        nc = awsnodetemplate(template, file)
    except InputError as exc:
        field = exc.field or "spec"
        inner = "spec.provider" + field[len("spec") :]
        raise InputError(exc.detail, file=exc.file, obj=exc.obj, field=inner) from exc
    return replace(nc, source=o.Source(file, "Provisioner", doc.metadata.name, doc.apiVersion))


def _ids_or_tags(selector: dict[str, str], field: str) -> tuple[o.SelectorTerm, ...]:
    """v1alpha1 flat selector: ``aws-ids``/``aws::ids`` -> one term per id, else one tags term."""
    if not selector:
        raise InputError("selector is empty: it would select nothing", field=field)
    ids_key = next((k for k in ("aws-ids", "aws::ids") if k in selector), None)
    if ids_key is not None:
        if len(selector) > 1:
            raise InputError(f"{ids_key!r} cannot be combined with tag selectors", field=field)
        ids = [i.strip() for i in selector[ids_key].split(",") if i.strip()]
        if not ids:
            raise InputError(f"{ids_key!r} lists no ids", field=f"{field}.{ids_key}")
        return tuple(o.SelectorTerm(id=i) for i in ids)
    if "aws::name" in selector:
        return (o.SelectorTerm(name=selector["aws::name"]),)
    return (o.SelectorTerm(tags=tuple(sorted(selector.items()))),)


def _check_provider_ref(ref: m.ProviderRef) -> None:
    """v1alpha5 ``providerRef`` names an AWSNodeTemplate (``karpenter.k8s.aws/v1alpha1``, the
    defaults Karpenter's webhook filled in); another kind or API group names nothing the AWS
    provider can launch from, so it is an error rather than silently read as one.

    Raises:
        InputError: ``kind`` or ``apiVersion`` names something else.
    """
    if ref.kind is not None and ref.kind != LEGACY_NODECLASS_KIND:
        raise InputError(
            f"kind must be {LEGACY_NODECLASS_KIND} (got {ref.kind!r})",
            field="spec.providerRef.kind",
        )
    if ref.apiVersion is not None and ref.apiVersion.split("/", 1)[0] != convert.EC2NODECLASS_GROUP:
        raise InputError(
            f"apiVersion must be in group {convert.EC2NODECLASS_GROUP} (got {ref.apiVersion!r})",
            field="spec.providerRef.apiVersion",
        )


def awsnodetemplate(doc: m.AWSNodeTemplate, file: str) -> o.NodeClass:
    """A v1alpha1 AWSNodeTemplate as the EC2NodeClass it behaves like (AMI family default AL2)."""
    spec = doc.spec
    family = spec.amiFamily or "AL2"
    if family not in convert.AMI_FAMILIES and family != "Ubuntu":
        raise InputError(
            f"unknown amiFamily {family!r}; use one of {', '.join(convert.AMI_FAMILIES)}",
            field="spec.amiFamily",
        )
    if family == "Custom" and not spec.amiSelector:
        raise InputError(
            "amiFamily Custom needs an amiSelector (the legacy webhook rejected this too)",
            field="spec.amiSelector",
        )
    if spec.launchTemplate:
        raise InputError(
            "spec.launchTemplate (an unmanaged launch template) was removed in Karpenter v1beta1 "
            "and is not supported; describe the instance in the template instead",
            field="spec.launchTemplate",
        )
    return o.NodeClass(
        name=doc.metadata.name,
        source=o.Source(file, LEGACY_NODECLASS_KIND, doc.metadata.name, doc.apiVersion),
        subnet_selector_terms=_ids_or_tags(spec.subnetSelector, "spec.subnetSelector"),
        security_group_selector_terms=_ids_or_tags(
            spec.securityGroupSelector, "spec.securityGroupSelector"
        ),
        ami_family="AL2" if family == "Ubuntu" else family,
        instance_profile=spec.instanceProfile,
        tags=tuple(sorted(spec.tags.items())),
        root_volume_bytes=convert.root_volume_bytes(
            spec.blockDeviceMappings, family, "spec.blockDeviceMappings"
        ),
        user_data=spec.userData,
        ami_selector_terms=_ami_selector(spec.amiSelector),
        block_device_mappings=convert.block_device_mappings(
            spec.blockDeviceMappings, "spec.blockDeviceMappings"
        ),
        metadata_options=convert.metadata_options(spec.metadataOptions, "spec.metadataOptions"),
        detailed_monitoring=spec.detailedMonitoring is True,
    )


def _ami_selector(selector: dict[str, str]) -> tuple[o.AMISelectorTerm, ...]:
    """A v1alpha1 flat ``amiSelector`` as v1 terms (karpenter-provider-aws
    ``pkg/utils/nodeclass/nodeclass.go`` ``NewAMISelectorTerms``, removed with v1alpha1 in
    commit dafe148a3): ``aws::ids`` one
    term per id, ``aws::name`` with each of ``aws::owners``, else tags."""
    ids_key = next((k for k in ("aws-ids", "aws::ids") if k in selector), None)
    if ids_key is not None:
        return tuple(
            o.AMISelectorTerm(id=i.strip()) for i in selector[ids_key].split(",") if i.strip()
        )
    if "aws::name" in selector:
        owners = [x.strip() for x in selector.get("aws::owners", "").split(",") if x.strip()]
        name = selector["aws::name"]
        return tuple(o.AMISelectorTerm(name=name, owner=w) for w in owners) or (
            o.AMISelectorTerm(name=name),
        )
    return (o.AMISelectorTerm(tags=tuple(sorted(selector.items()))),) if selector else ()
