"""EC2NodeClass resolution and the launch templates Joiner manages.

Resolution (Karpenter's subnet, security-group and AMI providers: karpenter-provider-aws
``pkg/providers/subnet/subnet.go``, ``securitygroup/securitygroup.go`` and
``amifamily/ami.go``, each ``List``):

* Subnets by ``id`` or ``tags`` (``DescribeSubnets``; terms OR, tags in a term AND, a tag
  value ``*`` matches any value; a ``name`` term matches the ``Name`` tag). Launches use, per
  zone, the subnet with the most free IPv4 addresses, launches in flight counted
  (``subnets.InflightIPs``).
* Security groups by ``id``, ``name`` or ``tags`` (``DescribeSecurityGroups``).
* AMIs by ``alias`` through the public SSM parameters for the cluster's Kubernetes version
  (``family@latest`` or a pinned version; per architecture the standard, NVIDIA and Neuron
  variants, ``alias_parameters``), by ``ssmParameter``, or by ``id``, ``name`` (+ ``owner``)
  or ``tags`` (``DescribeImages``). Each instance type launches with the newest image that
  serves it (its architecture, and its variant for alias images). No terms means
  ``<family>@latest``.

A resolution is kept for ``ttl_s`` (Karpenter caches for 1 minute).

The launch template carries the AMI, user data (``bootstrap.py``: the kubelet block and the
NodeClass's own user data merged as Karpenter-AWS merges them), security groups, the
instance profile, block device mappings (the AMI family's defaults when none are given:
20 GiB encrypted gp3 on ``/dev/xvda``; Bottlerocket 4 GiB root plus a 20 GiB ``/dev/xvdb``;
Windows 50 GiB on ``/dev/sda1``), metadata options and detailed monitoring. Its name,
tags and garbage collection are ``launchtemplates.py``'s.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from joiner.api import labels
from joiner.api.objects import AMISelectorTerm, BlockDevice, NodeClass, SelectorTerm
from joiner.api.quantity import GIB
from joiner.cloudprovider import nodeclass_status as ncs
from joiner.cloudprovider.aws.api import AWSError, aws_errors
from joiner.cloudprovider.aws.bootstrap import user_data
from joiner.cloudprovider.instancetype import AWS_NEURON
from joiner.cloudprovider.types import InstanceType, NodeClassNotReadyError, Subnet

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ec2.type_defs import FilterTypeDef
    from mypy_boto3_ssm import SSMClient

log = logging.getLogger(__name__)

#: Karpenter's default cache TTL for subnets, security groups and AMIs.
DEFAULT_RESOLUTION_TTL_S = 60.0
_EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
_KUBE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What nodes need to join the cluster: its name, API endpoint, CA bundle (base64 PEM),
    service CIDR and Kubernetes version (``1.31``, used for AMI aliases)."""

    name: str
    endpoint: str = ""
    ca_bundle: str = ""
    service_cidr: str = ""
    kubernetes_version: str = "1.31"


#: AMI variants of the EKS-optimized aliases (Karpenter ``amifamily/ami.go`` ``Variant``).
STANDARD, NVIDIA, NEURON = "standard", "nvidia", "neuron"
#: Karpenter-AWS's ``instance-accelerator-count`` label (the Neuron variant's requirement).
INSTANCE_ACCELERATOR_COUNT = labels.AWS_PREFIX + "instance-accelerator-count"
#: Each variant's requirements beyond the architecture (karpenter-provider-aws
#: ``pkg/providers/amifamily/types.go`` ``Variant.Requirements``).
_VARIANT_REQUIREMENTS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    STANDARD: (
        (INSTANCE_ACCELERATOR_COUNT, "DoesNotExist", ()),
        (labels.INSTANCE_GPU_COUNT, "DoesNotExist", ()),
    ),
    NVIDIA: ((labels.INSTANCE_GPU_COUNT, "Exists", ()),),
    NEURON: ((INSTANCE_ACCELERATOR_COUNT, "Exists", ()),),
}


def type_variant(it: InstanceType) -> str:
    """Which alias variant an instance type needs (Karpenter ``Variant.Requirements``):
    ``nvidia`` when it has the ``karpenter.k8s.aws/instance-gpu-count`` label (any GPU),
    ``neuron`` when it has Inferentia/Trainium devices (Karpenter's
    ``instance-accelerator-count`` label), else ``standard`` (neither label)."""
    if it.label(labels.INSTANCE_GPU_COUNT) is not None:
        return NVIDIA
    if it.capacity.get(AWS_NEURON, 0) > 0:
        return NEURON
    return STANDARD


@dataclass(frozen=True, slots=True)
class AMI:
    """A resolved image: id, ``kubernetes.io/arch`` value, name, creation date (ISO) and the
    alias variants it serves (empty: any instance type of its architecture, as for images
    selected by id, name, tags or an SSM parameter)."""

    id: str
    architecture: str
    name: str = ""
    creation_date: str = ""
    variants: tuple[str, ...] = ()

    def serves(self, it: InstanceType) -> bool:
        """True when this image can boot ``it``: same architecture, and a variant that
        matches the type (``type_variant``) when the image has variants."""
        if it.label(labels.ARCH) != self.architecture:
            return False
        return not self.variants or type_variant(it) in self.variants


@dataclass(frozen=True, slots=True)
class ResolvedNodeClass:
    """A NodeClass's AWS resources at ``resolved_at_s``: subnets (by id) with their free IPs,
    security group ids (sorted) and the AMIs, newest first (ties: lowest id)."""

    name: str
    subnets: tuple[Subnet, ...]
    free_ips: tuple[tuple[str, int], ...]
    security_group_ids: tuple[str, ...]
    amis: tuple[AMI, ...]
    resolved_at_s: float

    def zones(self) -> list[tuple[str, str]]:
        """(zone name, zone id) pairs the subnets cover, sorted."""
        return sorted({(s.zone, s.zone_id) for s in self.subnets})

    def ami_for(self, it: InstanceType) -> AMI | None:
        """The AMI an instance type launches with: the newest that serves it (Karpenter
        ``amifamily`` ``MapToInstanceTypes``), or None."""
        return next((a for a in self.amis if a.serves(it)), None)


def _tag_filters(tags: Sequence[tuple[str, str]]) -> list[FilterTypeDef]:
    return [
        {"Name": "tag-key", "Values": [k]} if v == "*" else {"Name": f"tag:{k}", "Values": [v]}
        for k, v in tags
    ]


@dataclass(frozen=True, slots=True)
class AliasParameter:
    """One public SSM parameter of an alias: the ``kubernetes.io/arch`` and the variants its
    image serves."""

    architecture: str
    variants: tuple[str, ...]
    name: str


def alias_parameters(alias: str, kubernetes_version: str) -> list[AliasParameter]:
    """The public SSM parameters Karpenter-AWS reads for an alias (``amifamily``
    ``DescribeImageQuery`` per family), standard, NVIDIA and Neuron variants included.

    * ``al2023`` (``al2023.go``): ``/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/
      <arch>/<variant>/recommended/image_id`` for x86_64 standard, nvidia, neuron and arm64
      standard, nvidia; a pinned version replaces ``recommended`` with
      ``amazon-eks-node-al2023-<arch>-<variant>-<k8s>-<version>``.
    * ``al2`` (``al2.go``): ``amazon-linux-2`` (amd64 standard), ``amazon-linux-2-gpu``
      (amd64 nvidia and neuron), ``amazon-linux-2-arm64`` (arm64 standard); pinned:
      ``amazon-eks-node-``, ``amazon-eks-gpu-node-``, ``amazon-eks-arm64-node-<k8s>-<v>``.
    * ``bottlerocket`` (``bottlerocket.go``): ``/aws/service/bottlerocket/aws-k8s-<k8s>/<arch>/
      <version>/image_id`` (x86_64 serves standard and neuron, arm64 standard) and
      ``aws-k8s-<k8s>-nvidia`` (nvidia); a leading ``v`` of a pinned version is dropped.
    * ``windows2019``/``windows2022``/``windows2025``: ``/aws/service/ami-windows-latest/
      Windows_Server-<year>-English-Core-EKS_Optimized-<k8s>/image_id`` (amd64, any type).

    Raises:
        NodeClassNotReadyError: an unknown family.
    """
    family, _, version = alias.partition("@")
    family = family.lower()
    version = version or "latest"
    k8s = kubernetes_version
    latest = version == "latest"
    out: list[AliasParameter] = []
    if family == "al2023":
        for arch, variants in (
            ("amd64", (STANDARD, NVIDIA, NEURON)),
            ("arm64", (STANDARD, NVIDIA)),
        ):
            ec2 = _EC2_ARCH[arch]
            for v in variants:
                leaf = (
                    "recommended" if latest else f"amazon-eks-node-al2023-{ec2}-{v}-{k8s}-{version}"
                )
                path = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{ec2}/{v}/{leaf}"
                out.append(AliasParameter(arch, (v,), path + "/image_id"))
    elif family == "al2":
        for arch, flavour, pinned, al2_variants in (
            ("amd64", "amazon-linux-2", "amazon-eks-node", (STANDARD,)),
            ("amd64", "amazon-linux-2-gpu", "amazon-eks-gpu-node", (NVIDIA, NEURON)),
            ("arm64", "amazon-linux-2-arm64", "amazon-eks-arm64-node", (STANDARD,)),
        ):
            leaf = "recommended" if latest else f"{pinned}-{k8s}-{version}"
            path = f"/aws/service/eks/optimized-ami/{k8s}/{flavour}/{leaf}/image_id"
            out.append(AliasParameter(arch, al2_variants, path))
    elif family == "bottlerocket":
        leaf = "latest" if latest else version.removeprefix("v")
        for suffix, arch, br_variants in (
            ("", "amd64", (STANDARD, NEURON)),
            ("", "arm64", (STANDARD,)),
            ("-nvidia", "amd64", (NVIDIA,)),
            ("-nvidia", "arm64", (NVIDIA,)),
        ):
            path = f"/aws/service/bottlerocket/aws-k8s-{k8s}{suffix}/{_EC2_ARCH[arch]}/{leaf}"
            out.append(AliasParameter(arch, br_variants, path + "/image_id"))
    elif family.startswith("windows"):
        year = family.removeprefix("windows")
        path = (
            f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
            f"EKS_Optimized-{k8s}/image_id"
        )
        out.append(AliasParameter("amd64", (), path))
    else:
        raise NodeClassNotReadyError(f"unknown AMI alias family {family!r}")
    return out


class NodeClassResolver:
    """Resolves NodeClasses against EC2 and SSM (see the module docstring).

    Raises ``NodeClassNotReadyError`` from ``resolve`` when a NodeClass selects no subnet, no
    security group or no AMI, or a lookup fails.
    """

    def __init__(
        self,
        ec2: EC2Client,
        ssm: SSMClient,
        cluster: ClusterInfo,
        now: Callable[[], float],
        *,
        ttl_s: float = DEFAULT_RESOLUTION_TTL_S,
    ) -> None:
        self._ec2 = ec2
        self._ssm = ssm
        self.cluster = cluster
        self._now = now
        self.ttl_s = ttl_s
        self._cache: dict[str, ResolvedNodeClass] = {}
        self._status_cache: dict[str, tuple[NodeClass, float, ncs.NodeClassStatus]] = {}

    def resolve(self, nc: NodeClass, *, fresh: bool = False) -> ResolvedNodeClass:
        """The NodeClass's subnets, security groups and AMIs (cached ``ttl_s``; ``fresh``
        bypasses the cache).

        Raises:
            NodeClassNotReadyError: nothing selected, or an AWS lookup failed.
        """
        now = self._now()
        cached = self._cache.get(nc.name)
        if not fresh and cached is not None and now - cached.resolved_at_s < self.ttl_s:
            return cached
        try:
            subnets, free = self._subnets(nc.subnet_selector_terms)
            groups = self._security_groups(nc.security_group_selector_terms)
            amis = self._amis(nc)
        except AWSError as exc:
            raise NodeClassNotReadyError(f"NodeClass {nc.name!r}: {exc}") from exc
        if not subnets:
            raise NodeClassNotReadyError(f"NodeClass {nc.name!r} resolves to no subnet")
        if not groups:
            raise NodeClassNotReadyError(f"NodeClass {nc.name!r} resolves to no security group")
        if not amis:
            raise NodeClassNotReadyError(f"NodeClass {nc.name!r} resolves to no AMI")
        resolved = ResolvedNodeClass(
            name=nc.name,
            subnets=tuple(subnets),
            free_ips=tuple(sorted(free.items())),
            security_group_ids=tuple(groups),
            amis=tuple(amis),
            resolved_at_s=now,
        )
        self._cache[nc.name] = resolved
        return resolved

    def status(self, nc: NodeClass) -> ncs.NodeClassStatus:
        """The NodeClass's status parts (``nodeclass_status``), each looked up on its own as
        Karpenter-AWS's reconcilers do; a part whose AWS lookup fails is left out (logged).
        Kept ``ttl_s`` per NodeClass object."""
        now = self._now()
        cached = self._status_cache.get(nc.name)
        if cached is not None and cached[0] == nc and now - cached[1] < self.ttl_s:
            return cached[2]
        conditions: dict[str, ncs.Condition] = {}
        subnets = self._status_part(nc, "subnets", lambda: self._status_subnets(nc), conditions)
        groups = self._status_part(
            nc, "security groups", lambda: self._status_groups(nc), conditions
        )
        amis = self._status_part(nc, "AMIs", lambda: self._status_amis(nc), conditions)
        profile = nc.instance_profile or nc.role
        # Joiner launches with ``spec.instanceProfile``, or a profile named as the role; it
        # creates none (Karpenter-AWS ``instanceprofile.go`` creates one for ``spec.role``).
        conditions[ncs.INSTANCE_PROFILE_READY] = ncs.ready(ncs.INSTANCE_PROFILE_READY)
        conditions[ncs.PLACEMENT_GROUP_READY] = ncs.ready(ncs.PLACEMENT_GROUP_READY)
        out = ncs.NodeClassStatus(
            subnets=subnets,
            security_groups=groups,
            amis=amis,
            instance_profile=profile,
            conditions=ncs.with_validation(conditions),
        )
        self._status_cache[nc.name] = (nc, now, out)
        return out

    @staticmethod
    def _status_part(
        nc: NodeClass,
        what: str,
        look_up: Callable[[], tuple[Any, str, ncs.Condition]],
        conditions: dict[str, ncs.Condition],
    ) -> Any:
        """Run one part's lookup: its field (None when the lookup failed) and its condition
        added to ``conditions``."""
        try:
            value, kind, condition = look_up()
        except AWSError as exc:
            log.warning("EC2NodeClass %s: looking up %s failed: %s", nc.name, what, exc)
            return None
        conditions[kind] = condition
        return value

    def _status_subnets(self, nc: NodeClass) -> tuple[Any, str, ncs.Condition]:
        """karpenter-provider-aws ``pkg/controllers/nodeclass/subnet.go`` ``Subnet.Reconcile``:
        most free addresses first, then by id."""
        found, free = self._subnets(nc.subnet_selector_terms)
        if not found:
            return (
                (),
                ncs.SUBNETS_READY,
                ncs.Condition(
                    ncs.FALSE, "SubnetsNotFound", "SubnetSelector did not match any Subnets"
                ),
            )
        ordered = sorted(found, key=lambda s: (-free.get(s.id, 0), s.id))
        value = tuple((s.id, s.zone, s.zone_id) for s in ordered)
        return value, ncs.SUBNETS_READY, ncs.ready(ncs.SUBNETS_READY)

    def _status_groups(self, nc: NodeClass) -> tuple[Any, str, ncs.Condition]:
        """karpenter-provider-aws ``securitygroup.go`` ``SecurityGroup.Reconcile``: by id."""
        pairs = self._security_group_pairs(nc.security_group_selector_terms)
        if not pairs and nc.security_group_selector_terms:
            return (
                (),
                ncs.SECURITY_GROUPS_READY,
                ncs.Condition(
                    ncs.FALSE,
                    "SecurityGroupsNotFound",
                    "SecurityGroupSelector did not match any SecurityGroups",
                ),
            )
        return tuple(pairs), ncs.SECURITY_GROUPS_READY, ncs.ready(ncs.SECURITY_GROUPS_READY)

    def _status_amis(self, nc: NodeClass) -> tuple[Any, str, ncs.Condition]:
        """karpenter-provider-aws ``ami.go`` ``AMI.Reconcile``: one entry per image and
        variant, requirements sorted by key length, then key."""
        try:
            amis = self._amis(nc)
        except NodeClassNotReadyError:
            amis = []
        if not amis:
            return (
                (),
                ncs.AMIS_READY,
                ncs.Condition(ncs.FALSE, "AMINotFound", "AMISelector did not match any AMIs"),
            )
        out = []
        for a in amis:
            for variant in a.variants or ("",):
                reqs = (
                    (labels.ARCH, "In", (a.architecture,)),
                    *_VARIANT_REQUIREMENTS.get(variant, ()),
                )
                reqs = tuple(sorted(reqs, key=lambda r: (len(r[0]), r[0])))
                out.append(ncs.AMIStatus(a.id, a.name, reqs))
        return tuple(out), ncs.AMIS_READY, ncs.ready(ncs.AMIS_READY)

    def _subnets(self, terms: Sequence[SelectorTerm]) -> tuple[list[Subnet], dict[str, int]]:
        found: dict[str, Subnet] = {}
        free: dict[str, int] = {}
        paginator = self._ec2.get_paginator("describe_subnets")
        for term in terms:
            filters: list[FilterTypeDef]
            if term.id:
                filters = [{"Name": "subnet-id", "Values": [term.id]}]
            elif term.name:
                filters = [{"Name": "tag:Name", "Values": [term.name]}]
            else:
                filters = _tag_filters(term.tags)
            with aws_errors():
                pages = list(paginator.paginate(Filters=filters))
            for page in pages:
                for s in page.get("Subnets", []):
                    if s.get("State", "available") != "available":
                        continue
                    sid = str(s["SubnetId"])
                    tags = tuple(sorted((t["Key"], t["Value"]) for t in s.get("Tags", [])))
                    found[sid] = Subnet(
                        id=sid,
                        zone=str(s["AvailabilityZone"]),
                        zone_id=str(s.get("AvailabilityZoneId", "")),
                        tags=tags,
                    )
                    free[sid] = int(s.get("AvailableIpAddressCount", 0))
        return [found[k] for k in sorted(found)], free

    def _security_groups(self, terms: Sequence[SelectorTerm]) -> list[str]:
        return [group_id for group_id, _ in self._security_group_pairs(terms)]

    def _security_group_pairs(self, terms: Sequence[SelectorTerm]) -> list[tuple[str, str]]:
        """(id, name) of the groups any term selects, by id."""
        found: dict[str, str] = {}
        paginator = self._ec2.get_paginator("describe_security_groups")
        for term in terms:
            filters: list[FilterTypeDef]
            if term.id:
                filters = [{"Name": "group-id", "Values": [term.id]}]
            elif term.name:
                filters = [{"Name": "group-name", "Values": [term.name]}]
            else:
                filters = _tag_filters(term.tags)
            with aws_errors():
                for page in paginator.paginate(Filters=filters):
                    for g in page.get("SecurityGroups", []):
                        found[str(g["GroupId"])] = str(g.get("GroupName", ""))
        return sorted(found.items())

    def _amis(self, nc: NodeClass) -> list[AMI]:
        terms = nc.ami_selector_terms or (AMISelectorTerm(alias=f"{nc.ami_family.lower()}@latest"),)
        if nc.ami_family == "Custom" and not nc.ami_selector_terms:
            raise NodeClassNotReadyError(f"NodeClass {nc.name!r}: amiFamily Custom needs terms")
        candidates: list[AMI] = []
        for term in terms:
            if term.alias:
                found: dict[tuple[str, str], set[str]] = {}
                for param in alias_parameters(term.alias, self.cluster.kubernetes_version):
                    image_id = self._parameter(param.name)
                    if image_id:
                        found.setdefault((image_id, param.architecture), set()).update(
                            param.variants
                        )
                for (image_id, arch), variants in found.items():
                    candidates.append(
                        AMI(image_id, arch, name=term.alias, variants=tuple(sorted(variants)))
                    )
            elif term.ssm_parameter:
                image_id = self._parameter(term.ssm_parameter)
                if image_id:
                    candidates.extend(self._describe_images(ImageIds=[image_id]))
            elif term.id:
                candidates.extend(self._describe_images(ImageIds=[term.id]))
            elif term.name:
                kwargs: dict[str, Any] = {"Filters": [{"Name": "name", "Values": [term.name]}]}
                if term.owner:
                    kwargs["Owners"] = [term.owner]
                candidates.extend(self._describe_images(**kwargs))
            elif term.tags:
                candidates.extend(self._describe_images(Filters=_tag_filters(term.tags)))
        # Karpenter ``AMIs.Sort``: newest first, ties by id; per instance type the first
        # image that serves it wins (``ResolvedNodeClass.ami_for``).
        unique = {(a.id, a.architecture): a for a in candidates}
        newest_first = sorted(unique.values(), key=lambda a: a.id)
        newest_first.sort(key=lambda a: a.creation_date, reverse=True)
        return newest_first

    def _parameter(self, name: str) -> str | None:
        try:
            with aws_errors():
                resp = self._ssm.get_parameter(Name=name)
        except AWSError as exc:
            if exc.code == "ParameterNotFound":
                log.info("SSM parameter %s not found", name)
                return None
            raise
        return str(resp["Parameter"].get("Value", ""))

    def _describe_images(self, **params: Any) -> list[AMI]:
        """The available x86_64/arm64 images DescribeImages returns for ``params``, over all
        its pages (Karpenter-AWS ``DescribeImagesPaginator``); none for an unknown AMI id.

        Raises:
            AWSError: another error, after botocore's retries.
        """
        try:
            with aws_errors():
                images = [
                    img
                    for page in self._ec2.get_paginator("describe_images").paginate(**params)
                    for img in page.get("Images", [])
                ]
        except AWSError as exc:
            if exc.code.startswith("InvalidAMIID"):
                log.info("AMI lookup %s: %s", params, exc.code)
                return []
            raise
        out = []
        for img in images:
            arch = _KUBE_ARCH.get(str(img.get("Architecture", "")))
            if arch is None or img.get("State", "available") != "available":
                continue
            out.append(
                AMI(
                    str(img["ImageId"]),
                    arch,
                    str(img.get("Name", "")),
                    str(img.get("CreationDate", "")),
                )
            )
        return out


# -- launch template content ----------------------------------------------------------------


def default_block_devices(ami_family: str) -> tuple[BlockDevice, ...]:
    """Karpenter's default volumes per AMI family (karpenter-provider-aws
    ``pkg/providers/amifamily/{al2023,bottlerocket,windows}.go``
    ``DefaultBlockDeviceMappings``)."""
    if ami_family == "Bottlerocket":
        return (
            BlockDevice("/dev/xvda", volume_size_bytes=4 * GIB, volume_type="gp3", encrypted=True),
            BlockDevice("/dev/xvdb", volume_size_bytes=20 * GIB, volume_type="gp3", encrypted=True),
        )
    if ami_family.startswith("Windows"):
        return (
            BlockDevice("/dev/sda1", volume_size_bytes=50 * GIB, volume_type="gp3", encrypted=True),
        )
    return (
        BlockDevice("/dev/xvda", volume_size_bytes=20 * GIB, volume_type="gp3", encrypted=True),
    )


def _block_device_mapping(b: BlockDevice) -> dict[str, Any]:
    ebs: dict[str, Any] = {}
    if b.volume_size_bytes is not None:
        ebs["VolumeSize"] = -(-b.volume_size_bytes // GIB)  # GiB, rounded up
    for key, value in (
        ("VolumeType", b.volume_type),
        ("Iops", b.iops),
        ("Throughput", b.throughput_mib_s),
        ("Encrypted", b.encrypted),
        ("DeleteOnTermination", b.delete_on_termination),
        ("KmsKeyId", b.kms_key_id),
        ("SnapshotId", b.snapshot_id),
    ):
        if value is not None:
            ebs[key] = value
    return {"DeviceName": b.device_name, "Ebs": ebs}


def launch_template_data(
    nc: NodeClass,
    resolved: ResolvedNodeClass,
    ami: AMI,
    cluster: ClusterInfo,
    node_labels: Sequence[tuple[str, str]],
) -> dict[str, Any]:
    """``LaunchTemplateData`` for one AMI of a resolved NodeClass (CreateLaunchTemplate shape)."""
    devices = nc.block_device_mappings or default_block_devices(nc.ami_family)
    meta = nc.metadata_options
    data: dict[str, Any] = {
        "ImageId": ami.id,
        "UserData": base64.b64encode(user_data(nc, cluster, node_labels).encode()).decode(),
        "BlockDeviceMappings": [_block_device_mapping(b) for b in devices],
        "MetadataOptions": {
            "HttpEndpoint": meta.http_endpoint,
            "HttpProtocolIpv6": meta.http_protocol_ipv6,
            "HttpPutResponseHopLimit": meta.http_put_response_hop_limit,
            "HttpTokens": meta.http_tokens,
        },
        "Monitoring": {"Enabled": nc.detailed_monitoring},
    }
    profile = nc.instance_profile or nc.role
    if profile:
        data["IamInstanceProfile"] = {"Name": profile}
    if nc.associate_public_ip_address is not None:
        data["NetworkInterfaces"] = [
            {
                "DeviceIndex": 0,
                "AssociatePublicIpAddress": nc.associate_public_ip_address,
                "Groups": list(resolved.security_group_ids),
            }
        ]
    else:
        data["SecurityGroupIds"] = list(resolved.security_group_ids)
    return data
