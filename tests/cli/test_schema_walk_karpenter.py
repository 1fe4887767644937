"""Issue 19, the class for Karpenter's node-side kinds: every field Joiner accepts in an
EC2NodeClass (v1 and v1beta1), a v1beta1 NodePool, a v1alpha5 Provisioner (with its inline
provider), an AWSNodeTemplate and a KWOKNodeClass either has an effect or draws a grouped
"not modelled" warning.

The field paths come from walking the manifest models (every nested model, list items
included), so a field added to a model without an entry here fails
``test_every_field_has_a_mutation``. Each mutation is applied to a small manifest and one of
these must follow:

* ``model``: the loaded NodePools and NodeClasses differ (what the provisioner, the instance
  types' allocatable, drift and the AWS adapter's launch read);
* ``warn``: a warning names the field as not modelled (and the loaded objects are unchanged);
* ``error``: loading fails with an InputError naming the field (upstream rejects it too).

(The v1 NodePool and the pod spec are walked in ``test_schema_walk.py``.)
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.manifests import models as m

Mutation = tuple[Any, str]


def _nested(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _nested(arg)
        if found is not None:
            return found
    return None


def _is_list(annotation: Any) -> bool:
    if typing.get_origin(annotation) is list:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation))
    return False


def walk(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every leaf field path of ``model`` (``a.b``; ``a[].b`` through a list of models)."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        child = _nested(info.annotation)
        path = f"{prefix}{name}"
        if child is None:
            out.add(path)
        else:
            out |= walk(child, f"{path}[]." if _is_list(info.annotation) else f"{path}.")
    return out


# -- shared sub-tables -----------------------------------------------------------------------

KUBELET: dict[str, Mutation] = {
    "maxPods": (20, "model"),
    "podsPerCore": (4, "model"),
    "systemReserved": ({"cpu": "100m"}, "model"),
    "kubeReserved": ({"memory": "1Gi"}, "model"),
    "evictionHard": ({"memory.available": "5%"}, "model"),
    # The rest reach the node's kubelet through the bootstrap user data (AWS adapter).
    "clusterDNS": (["10.0.0.10"], "model"),
    # Karpenter's CRD: each evictionSoft signal needs a grace period and the reverse, so
    # either alone is rejected (both together: tests/api/test_nodeclass_rules.py).
    "evictionSoft": ({"memory.available": "10%"}, "error"),
    "evictionSoftGracePeriod": ({"memory.available": "1m"}, "error"),
    "evictionMaxPodGracePeriod": (60, "model"),
    "imageGCHighThresholdPercent": (90, "model"),
    "imageGCLowThresholdPercent": (80, "model"),
    "cpuCFSQuota": (False, "model"),
}

BLOCK_DEVICE: dict[str, Mutation] = {
    "deviceName": ("/dev/xvdb", "model"),
    "rootVolume": (True, "model"),
    "ebs.volumeSize": ("50Gi", "model"),
    "ebs.volumeType": ("io2", "model"),
    "ebs.iops": (4000, "model"),
    "ebs.throughput": (250, "model"),
    "ebs.encrypted": (False, "model"),
    "ebs.deleteOnTermination": (False, "model"),
    "ebs.kmsKeyID": ("arn:aws:kms:us-east-1:111122223333:key/k", "model"),
    "ebs.snapshotID": ("snap-0123", "model"),
    "ebs.volumeInitializationRate": (200, "warn"),
}


def _replace_term(key: str, term: dict[str, Any], **extra: Any) -> Callable[[dict], None]:
    def mutate(spec: dict[str, Any]) -> None:
        spec[key] = [term]
        spec.update(extra)

    return mutate


#: An id of the kind each selector's CRD pattern admits (``subnet-...``, ``sg-...``).
_IDS = {"subnetSelectorTerms": "subnet-0123", "securityGroupSelectorTerms": "sg-0123"}


def _selector(key: str) -> dict[str, Mutation]:
    return {
        f"{key}[].id": (_replace_term(key, {"id": _IDS[key]}), "model"),
        f"{key}[].name": ("named", "model"),
        f"{key}[].tags": ({"team": "a"}, "model"),
    }


AMI_TERMS: dict[str, Mutation] = {
    "amiSelectorTerms[].alias": ("al2023@v20240807", "model"),
    "amiSelectorTerms[].id": (
        _replace_term("amiSelectorTerms", {"id": "ami-0123"}, amiFamily="AL2023"),
        "model",
    ),
    "amiSelectorTerms[].name": (
        _replace_term("amiSelectorTerms", {"name": "my-ami"}, amiFamily="AL2023"),
        "model",
    ),
    "amiSelectorTerms[].owner": (
        _replace_term("amiSelectorTerms", {"name": "my-ami", "owner": "self"}, amiFamily="AL2023"),
        "model",
    ),
    "amiSelectorTerms[].tags": (
        _replace_term("amiSelectorTerms", {"tags": {"a": "b"}}, amiFamily="AL2023"),
        "model",
    ),
    "amiSelectorTerms[].ssmParameter": (
        _replace_term("amiSelectorTerms", {"ssmParameter": "/my/ami"}, amiFamily="AL2023"),
        "model",
    ),
}


def _prefixed(prefix: str, table: dict[str, Mutation]) -> dict[str, Mutation]:
    return {f"{prefix}{k}": v for k, v in table.items()}


def _instance_profile(spec: dict[str, Any]) -> None:
    spec.pop("role", None)
    spec["instanceProfile"] = "KarpenterNodeProfile"


NODECLASS_COMMON: dict[str, Mutation] = {
    **_selector("subnetSelectorTerms"),
    **_selector("securityGroupSelectorTerms"),
    "amiFamily": ("Bottlerocket", "model"),
    "role": ("OtherRole", "model"),
    "instanceProfile": (_instance_profile, "model"),
    "tags": ({"team": "a"}, "model"),
    **_prefixed("blockDeviceMappings[].", BLOCK_DEVICE),
    "userData": ("#!/bin/bash\necho hi\n", "model"),
    "instanceStorePolicy": ("RAID0", "model"),
    "detailedMonitoring": (True, "model"),
    "metadataOptions": ({"httpTokens": "optional"}, "model"),
    "context": ("cr-0123", "warn"),
    "associatePublicIPAddress": (True, "model"),
}

# -- the kinds -------------------------------------------------------------------------------

EC2NODECLASS_V1: dict[str, Mutation] = {
    **NODECLASS_COMMON,
    **AMI_TERMS,
    **_prefixed("kubelet.", KUBELET),
    "ipPrefixCount": (2, "warn"),
    "networkInterfaces": (
        [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
        "warn",
    ),
    "connectionTracking": ({"tcpEstablishedTimeout": 120}, "warn"),
    "cpuOptions": ({"coreCount": 2}, "warn"),
    "capacityReservationSelectorTerms[].id": (
        _replace_term("capacityReservationSelectorTerms", {"id": "cr-0123"}),
        "model",
    ),
    "capacityReservationSelectorTerms[].tags": (
        _replace_term("capacityReservationSelectorTerms", {"tags": {"a": "b"}}),
        "model",
    ),
    "capacityReservationSelectorTerms[].ownerID": (
        _replace_term(
            "capacityReservationSelectorTerms", {"tags": {"a": "b"}, "ownerID": "012345678901"}
        ),
        "model",
    ),
    "capacityReservationSelectorTerms[].instanceMatchCriteria": (
        _replace_term(
            "capacityReservationSelectorTerms",
            {"tags": {"a": "b"}, "instanceMatchCriteria": "open"},
        ),
        "model",
    ),
    "placementGroupSelector": ({"name": "pg"}, "warn"),
}
# The v1 CRD: volumeInitializationRate only with a snapshotID (the base mapping has none).
EC2NODECLASS_V1["blockDeviceMappings[].ebs.volumeInitializationRate"] = (200, "error")
# amiFamily with an alias term is taken from the alias; the v1 walk sets it with id terms.
EC2NODECLASS_V1["amiFamily"] = (
    _replace_term("amiSelectorTerms", {"id": "ami-0123"}, amiFamily="Bottlerocket"),
    "model",
)

EC2NODECLASS_V1BETA1: dict[str, Mutation] = {
    **NODECLASS_COMMON,
    **AMI_TERMS,
    "kubelet": ({"maxPods": 20}, "warn"),
}
# v1beta1 terms are optional and amiFamily required: an alias-free term set.
EC2NODECLASS_V1BETA1["amiSelectorTerms[].alias"] = (
    _replace_term("amiSelectorTerms", {"alias": "al2023@latest"}),
    "model",
)

BUDGET: dict[str, Mutation] = {
    "nodes": ("0", "model"),
    "schedule": (lambda s: s.update({"schedule": "0 9 * * *", "duration": "1h"}), "model"),
    "duration": (lambda s: s.update({"schedule": "0 9 * * *", "duration": "2h"}), "model"),
    "reasons": (["Drifted"], "model"),
}

REQUIREMENT: dict[str, Mutation] = {
    "key": ("karpenter.k8s.aws/instance-family", "model"),
    "operator": ("NotIn", "model"),
    "values": (["m"], "model"),
    "minValues": (1, "model"),
}

TAINT: dict[str, Mutation] = {
    "key": ("other", "model"),
    "value": ("v", "model"),
    "effect": ("NoExecute", "model"),
    "timeAdded": ("2024-01-01T00:00:00Z", "silent"),
}

NODEPOOL_V1BETA1: dict[str, Mutation] = {
    "template.metadata.labels": ({"team": "a"}, "model"),
    "template.metadata.annotations": ({"team": "a"}, "model"),
    **_prefixed("template.spec.requirements[].", REQUIREMENT),
    **_prefixed("template.spec.taints[].", TAINT),
    **_prefixed("template.spec.startupTaints[].", TAINT),
    "template.spec.nodeClassRef.name": ("other", "model"),
    "template.spec.nodeClassRef.kind": ("OtherNodeClass", "error"),
    "template.spec.nodeClassRef.apiVersion": ("example.com/v1", "error"),
    **_prefixed("template.spec.kubelet.", KUBELET),
    "disruption.consolidationPolicy": ("WhenEmpty", "model"),
    "disruption.consolidateAfter": (
        lambda s: (
            s["disruption"].update({"consolidationPolicy": "WhenEmpty"})
            or s["disruption"].update({"consolidateAfter": "5m"})
        ),
        "model",
    ),
    "disruption.expireAfter": ("1h", "model"),
    **_prefixed("disruption.budgets[].", BUDGET),
    "limits": ({"cpu": "1"}, "model"),
    "weight": (10, "model"),
}

PROVIDER: dict[str, Mutation] = {
    "subnetSelector": ({"team": "a"}, "model"),
    "securityGroupSelector": ({"team": "a"}, "model"),
    "amiSelector": ({"aws::ids": "ami-0123"}, "model"),
    "amiFamily": ("Bottlerocket", "model"),
    "instanceProfile": ("OtherProfile", "model"),
    "launchTemplate": ("my-template", "error"),
    "tags": ({"team": "a"}, "model"),
    **_prefixed("blockDeviceMappings[].", BLOCK_DEVICE),
    "userData": ("#!/bin/bash\necho hi\n", "model"),
    "metadataOptions": ({"httpTokens": "optional"}, "model"),
    "context": ("cr-0123", "warn"),
    "detailedMonitoring": (True, "model"),
}


def _provider_ref(**ref: str) -> Callable[[dict], None]:
    def mutate(spec: dict[str, Any]) -> None:
        spec.pop("provider", None)
        spec["providerRef"] = ref

    return mutate


PROVISIONER: dict[str, Mutation] = {
    "labels": ({"team": "a"}, "model"),
    "annotations": ({"team": "a"}, "model"),
    **_prefixed("taints[].", TAINT),
    **_prefixed("startupTaints[].", TAINT),
    **_prefixed("requirements[].", REQUIREMENT),
    "limits.resources": ({"cpu": "1"}, "model"),
    "providerRef.name": (_provider_ref(name="other"), "model"),
    "providerRef.kind": (_provider_ref(name="tmpl", kind="OtherTemplate"), "error"),
    "providerRef.apiVersion": (_provider_ref(name="tmpl", apiVersion="example.com/v1"), "error"),
    **_prefixed("provider.", PROVIDER),
    "provider.apiVersion": ("extensions.karpenter.sh/v1alpha1", "silent"),
    "provider.kind": ("AWS", "silent"),
    "consolidation.enabled": (True, "model"),
    "ttlSecondsAfterEmpty": (30, "model"),
    "ttlSecondsUntilExpired": (3600, "model"),
    "weight": (10, "model"),
    **_prefixed("kubeletConfiguration.", KUBELET),
    "kubeletConfiguration.containerRuntime": ("containerd", "warn"),
}

KWOKNODECLASS: dict[str, Mutation] = {"nodeRegistrationDelay": ("30s", "warn")}

# -- base manifests --------------------------------------------------------------------------

DISCOVERY = [{"tags": {"karpenter.sh/discovery": "demo"}}]
BDM = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}]


def _pool_v1(ref: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}}},
    }


def _ec2nodeclass(name: str, version: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": copy.deepcopy(DISCOVERY),
        "securityGroupSelectorTerms": copy.deepcopy(DISCOVERY),
        "blockDeviceMappings": copy.deepcopy(BDM),
    }
    if version == "v1":
        spec["amiSelectorTerms"] = [{"alias": "al2023@latest"}]
    else:
        spec["amiFamily"] = "AL2023"
        spec["amiSelectorTerms"] = [{"tags": {"ami": "base"}}]
    return {
        "apiVersion": f"karpenter.k8s.aws/{version}",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def _base_v1() -> list[dict[str, Any]]:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    return [_ec2nodeclass("default", "v1"), _pool_v1(ref)]


def _base_v1beta1_nodeclass() -> list[dict[str, Any]]:
    pool = {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}},
    }
    return [_ec2nodeclass("default", "v1beta1"), pool]


def _base_v1beta1_nodepool() -> list[dict[str, Any]]:
    pool = {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "metadata": {},
                "spec": {
                    "nodeClassRef": {"name": "default"},
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-category",
                            "operator": "In",
                            "values": ["c", "m"],
                        }
                    ],
                    "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
                    "startupTaints": [{"key": "cni", "effect": "NoSchedule"}],
                    "kubelet": {},
                },
            },
            "disruption": {"budgets": [{"nodes": "10%"}]},
        },
    }
    return [_ec2nodeclass("default", "v1beta1"), _ec2nodeclass("other", "v1beta1"), pool]


def _base_provisioner() -> list[dict[str, Any]]:
    provider = {
        "subnetSelector": {"karpenter.sh/discovery": "demo"},
        "securityGroupSelector": {"karpenter.sh/discovery": "demo"},
        "blockDeviceMappings": copy.deepcopy(BDM),
    }
    prov = {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "default"},
        "spec": {
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c"]}
            ],
            "taints": [{"key": "dedicated", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "cni", "effect": "NoSchedule"}],
            "provider": provider,
            "kubeletConfiguration": {},
        },
    }
    templates = [
        {
            "apiVersion": "karpenter.k8s.aws/v1alpha1",
            "kind": "AWSNodeTemplate",
            "metadata": {"name": name},
            "spec": copy.deepcopy(provider),
        }
        for name in ("tmpl", "other")
    ]
    return [prov, *templates]


def _base_provisioner_ref() -> list[dict[str, Any]]:
    """A Provisioner naming an AWSNodeTemplate (for ``providerRef`` and the template)."""
    prov, *templates = _base_provisioner()
    del prov["spec"]["provider"]
    prov["spec"]["providerRef"] = {"name": "tmpl"}
    return [*templates, prov]


def _base_kwok() -> list[dict[str, Any]]:
    ref = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
    nc = {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": "default"},
        "spec": {},
    }
    return [nc, _pool_v1(ref)]


#: kind -> (its spec model, the mutations, the base manifests, index of the mutated object).
KINDS: dict[str, tuple[type[BaseModel], dict[str, Mutation], Callable[[], list], int]] = {
    "EC2NodeClass/v1": (m.EC2NodeClassSpec, EC2NODECLASS_V1, _base_v1, 0),
    "EC2NodeClass/v1beta1": (
        m.V1Beta1EC2NodeClassSpec,
        EC2NODECLASS_V1BETA1,
        _base_v1beta1_nodeclass,
        0,
    ),
    "NodePool/v1beta1": (m.V1Beta1NodePoolSpec, NODEPOOL_V1BETA1, _base_v1beta1_nodepool, 2),
    "Provisioner": (m.ProvisionerSpec, PROVISIONER, _base_provisioner, 0),
    "AWSNodeTemplate": (m.AWSNodeTemplateSpec, PROVIDER, _base_provisioner_ref, 0),
    "KWOKNodeClass": (m.KWOKNodeClassSpec, KWOKNODECLASS, _base_kwok, 0),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_has_a_mutation(kind):
    """The walk: a field added to a model needs an entry (effect, warning or error)."""
    model, table, _, _ = KINDS[kind]
    assert walk(model) == set(table)


def _observe(docs: list[dict[str, Any]]) -> dict[str, Any]:
    loaded = load_text(yaml.safe_dump_all(docs, sort_keys=True), "m.yaml")
    return {
        # Requirements' repr leaves minValues out.
        "model": repr((loaded.nodepools, loaded.nodeclasses))
        + repr(
            [sorted((k, r.min_values) for k, r in p.requirements.items()) for p in loaded.nodepools]
        ),
        "warnings": [w for w in loaded.warnings if "not modelled" in w],
    }


def _mutate(spec: dict[str, Any], path: str, value: Any) -> None:
    if callable(value):
        value(spec)
        return
    *parents, leaf = path.split(".")
    target = spec
    for p in parents:
        if p.endswith("[]"):
            items = target.setdefault(p[:-2], [])
            if not items:
                items.append({})
            target = items[0]
        else:
            target = target.setdefault(p, {})
    if callable(value):
        value(target)
    else:
        target[leaf] = value


def _leaf_callable(path: str, value: Any) -> bool:
    # Budget mutations act on the budget (the list item), the others on the spec.
    return callable(value) and "budgets[]" in path


CASES = [(k, f) for k in sorted(KINDS) for f in sorted(KINDS[k][1])]


@pytest.mark.parametrize(("kind", "field"), CASES)
def test_field_has_an_effect_or_warns(kind, field):
    _, table, base, index = KINDS[kind]
    value, how = table[field]
    baseline = _observe(base())
    docs = base()
    spec = docs[index]["spec"]
    if _leaf_callable(field, value):
        *parents, _ = field.split(".")
        _mutate(spec, ".".join([*parents, "x"]), None)
        target = spec
        for p in parents:
            target = target[p[:-2]][0] if p.endswith("[]") else target[p]
        target.pop("x", None)
        value(target)
    else:
        _mutate(spec, field, value)
    if how == "error":
        with pytest.raises(InputError) as err:
            _observe(docs)
        assert field.rsplit(".", 1)[-1] in str(err.value), str(err.value)
        return
    got = _observe(docs)
    leaf = field.replace("[]", "")
    if how == "warn":
        assert any(f"spec.{leaf} " in w for w in got["warnings"]), got["warnings"]
        assert got["model"] == baseline["model"], f"{field}: warned but changed the model"
    elif how == "silent":
        assert got == baseline
    else:
        assert got["model"] != baseline["model"], f"{field}: no effect on the loaded objects"
        assert got["warnings"] == baseline["warnings"]
