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
``NODECLASS_HASH_TAG`` tag. ``context`` is not modelled (the manifest reader warns about
it), so it does not enter the hash; ``instanceStorePolicy`` enters it only when set, so the
hash of a NodeClass without it is what it was before it was modelled.
"""

from __future__ import annotations

import hashlib
from dataclasses import fields

from joiner.api.objects import KubeletConfig, NodeClass

#: Instance tag holding the hash of the NodeClass fields the instance was launched from.
NODECLASS_HASH_TAG = "joiner.dev/ec2nodeclass-hash"

#: Karpenter-AWS's drift reason for a static field change.
NODECLASS_DRIFT = "NodeClassDrift"


def static_fields(nc: NodeClass) -> dict[str, object]:
    """The NodeClass fields Karpenter's static drift hash covers (module docstring)."""
    out: dict[str, object] = {
        "amiFamily": nc.ami_family,
        "associatePublicIPAddress": nc.associate_public_ip_address,
        "blockDeviceMappings": nc.block_device_mappings,
        "rootVolumeBytes": nc.root_volume_bytes,
        "detailedMonitoring": nc.detailed_monitoring,
        "instanceProfile": nc.instance_profile,
        "kubelet": _kubelet_fields(nc.kubelet),
        "metadataOptions": nc.metadata_options,
        "role": nc.role,
        "tags": tuple(sorted(nc.tags)),
        "userData": nc.user_data,
    }
    if nc.instance_store_policy is not None:
        out["instanceStorePolicy"] = nc.instance_store_policy
    return out


#: The kubelet fields hashed before the rest of the block reached user data: their repr is
#: kept as it was, so instances launched earlier do not all drift after an upgrade.
_FIRST_KUBELET_FIELDS = ("max_pods", "pods_per_core", "system_reserved", "kube_reserved")
#: The values as written duplicate the parsed ones: a change of spelling only (1Gi to
#: 1024Mi) is not drift in Joiner (Karpenter hashes the strings).
_UNHASHED_KUBELET_FIELDS = ("system_reserved_text", "kube_reserved_text", "eviction_hard_text")


class _Repr(str):
    """Text that is its own repr (so the hash input reads as it did)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _kubelet_fields(k: KubeletConfig) -> _Repr:
    first = ", ".join(f"{f}={getattr(k, f)!r}" for f in _FIRST_KUBELET_FIELDS)
    out = f"KubeletConfig({first}, eviction_hard={k.eviction_hard!r})"
    default = KubeletConfig()
    later = [
        (f.name, getattr(k, f.name))
        for f in fields(k)
        if f.name not in (*_FIRST_KUBELET_FIELDS, "eviction_hard", *_UNHASHED_KUBELET_FIELDS)
        and getattr(k, f.name) != getattr(default, f.name)
    ]
    return _Repr(out + (repr(later) if later else ""))


def nodeclass_hash(nc: NodeClass) -> str:
    """A stable hash of ``static_fields(nc)``: sha256 of their repr, 16 hex digits.
    Memoised per NodeClass object (immutable; every drift check of a pass asks it)."""
    hit = _HASHES.get(id(nc))
    if hit is not None and hit[0] is nc:
        return hit[1]
    found = hashlib.sha256(repr(sorted(static_fields(nc).items())).encode()).hexdigest()[:16]
    if len(_HASHES) >= 256:
        _HASHES.clear()
    _HASHES[id(nc)] = (nc, found)
    return found


#: ``nodeclass_hash`` answers by NodeClass identity, with the object (kept alive so the
#: identity stays valid).
_HASHES: dict[int, tuple[NodeClass, str]] = {}


def static_drift(launched_hash: str | None, nc: NodeClass) -> str:
    """``NODECLASS_DRIFT`` when ``launched_hash`` (the instance's tag) differs from the
    NodeClass's hash now; ``""`` when equal or unknown (an instance launched without the tag,
    as Karpenter skips static drift when the hash versions differ)."""
    if not launched_hash:
        return ""
    return NODECLASS_DRIFT if launched_hash != nodeclass_hash(nc) else ""
