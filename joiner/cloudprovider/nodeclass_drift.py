"""EC2NodeClass static drift: a node launched from NodeClass settings that have since changed.

Karpenter-AWS hashes the EC2NodeClass spec (``pkg/apis/v1/ec2nodeclass.go``
``EC2NodeClass.Hash``, hashstructure over the spec) into the NodeClass's and each NodeClaim's
``karpenter.k8s.aws/ec2nodeclass-hash`` annotation; ``pkg/cloudprovider/drift.go``
``areStaticFieldsDrifted`` reports ``NodeClassDrift`` when they differ (with the same hash
version), before the dynamic checks (AMI, subnets, security groups).

The hashed fields are every spec field without ``hash:"ignore"``: ``associatePublicIPAddress``,
``userData``, ``role``, ``instanceProfile``, ``tags``, ``kubelet``, ``blockDeviceMappings``,
``instanceStorePolicy``, ``detailedMonitoring``, ``metadataOptions``, ``context``, and the
AMI family as the ``AMIFamily()`` helper resolves it (from the alias when there is one). The
selector terms (subnets, security groups, capacity reservations, AMIs) and ``ipPrefixCount``
are ignored: the dynamic checks cover what they select.

Go's hashstructure cannot be reproduced byte for byte, so Joiner hashes the same fields its
own way and records the value where it survives a restart: the instance's
``NODECLASS_HASH_TAG`` tag. ``instanceStorePolicy`` and ``context`` are not modelled (the
manifest reader warns about them), so they do not enter the hash.
"""

from __future__ import annotations

import hashlib

from joiner.api.objects import NodeClass

#: Instance tag holding the hash of the NodeClass fields the instance was launched from.
NODECLASS_HASH_TAG = "joiner.dev/ec2nodeclass-hash"

#: Karpenter-AWS's drift reason for a static field change.
NODECLASS_DRIFT = "NodeClassDrift"


def static_fields(nc: NodeClass) -> dict[str, object]:
    """The NodeClass fields Karpenter's static drift hash covers (module docstring)."""
    return {
        "amiFamily": nc.ami_family,
        "associatePublicIPAddress": nc.associate_public_ip_address,
        "blockDeviceMappings": nc.block_device_mappings,
        "rootVolumeBytes": nc.root_volume_bytes,
        "detailedMonitoring": nc.detailed_monitoring,
        "instanceProfile": nc.instance_profile,
        "kubelet": nc.kubelet,
        "metadataOptions": nc.metadata_options,
        "role": nc.role,
        "tags": tuple(sorted(nc.tags)),
        "userData": nc.user_data,
    }


def nodeclass_hash(nc: NodeClass) -> str:
    """A stable hash of ``static_fields(nc)``: sha256 of their repr, 16 hex digits."""
    return hashlib.sha256(repr(sorted(static_fields(nc).items())).encode()).hexdigest()[:16]


def static_drift(launched_hash: str | None, nc: NodeClass) -> str:
    """``NODECLASS_DRIFT`` when ``launched_hash`` (the instance's tag) differs from the
    NodeClass's hash now; ``""`` when equal or unknown (an instance launched without the tag,
    as Karpenter skips static drift when the hash versions differ)."""
    if not launched_hash:
        return ""
    return NODECLASS_DRIFT if launched_hash != nodeclass_hash(nc) else ""
