"""Drift of an EC2 instance from its EC2NodeClass, in Karpenter-AWS's order
(``pkg/cloudprovider/drift.go`` ``isNodeClassDrifted``): static drift first
(``nodeclass_drift``), then the resolved AMIs, subnets and security groups."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api.objects import NodeClass
from joiner.cloudprovider.aws.nodeclass import ResolvedNodeClass
from joiner.cloudprovider.nodeclass_drift import NODECLASS_HASH_TAG, static_drift
from joiner.cloudprovider.types import CreateError, InstanceType

#: Drift reasons (Karpenter ``AMIDrift``, ``SubnetDrift``, ``SecurityGroupDrift``).
AMI_DRIFT = "AMIDrift"
SUBNET_DRIFT = "SubnetDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"
_KUBE_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def instance_drift(
    desc: dict[str, Any],
    nc: NodeClass,
    resolve: Callable[[NodeClass], ResolvedNodeClass],
    instance_type: Callable[[dict[str, Any]], InstanceType],
) -> str:
    """The drift reason of the described instance (DescribeInstances shape) against ``nc``:
    ``NodeClassDrift`` (a field of the static hash changed since launch), ``AMIDrift`` (its
    image is none of the NodeClass's AMIs that serve its type: architecture and alias
    variant), ``SubnetDrift`` (its subnet is no longer selected), ``SecurityGroupDrift``
    (its groups differ from the selected ones), or ``""``. ``resolve`` resolves the
    NodeClass; ``instance_type`` rebuilds the instance's type, raising ``CreateError`` when
    discovery no longer lists it (then the architecture alone decides the AMIs).

    Raises:
        NodeClassNotReadyError: the NodeClass no longer resolves.
    """
    tag_map = {t["Key"]: t["Value"] for t in desc.get("Tags", [])}
    static = static_drift(tag_map.get(NODECLASS_HASH_TAG), nc)
    if static:
        return static
    resolved = resolve(nc)
    try:
        it = instance_type(desc)
        image_ids = {a.id for a in resolved.amis if a.serves(it)}
    except CreateError:
        arch = _KUBE_ARCH.get(str(desc.get("Architecture", "")), "")
        image_ids = {a.id for a in resolved.amis if a.architecture == arch}
    if str(desc.get("ImageId", "")) not in image_ids:
        return AMI_DRIFT
    if str(desc.get("SubnetId", "")) not in {s.id for s in resolved.subnets}:
        return SUBNET_DRIFT
    groups = {str(g["GroupId"]) for g in desc.get("SecurityGroups", [])}
    if groups != set(resolved.security_group_ids):
        return SECURITY_GROUP_DRIFT
    return ""
