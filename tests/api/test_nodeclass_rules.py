"""EC2NodeClass values Karpenter-AWS's v1 CRD rejects are input errors naming the field."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests.loader import load_text

BASE = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: R
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{id: sg-1}]
"""


def load(extra: str, terms: str = "[{alias: al2023@latest}]"):
    return load_text(BASE + f"  amiSelectorTerms: {terms}\n" + extra, "nc.yaml").nodeclasses[0]


@pytest.mark.parametrize(
    ("extra", "terms", "field"),
    [
        (
            "  tags: {kubernetes.io/cluster/demo: owned}",
            None,
            "spec.tags.kubernetes.io/cluster/demo",
        ),
        ("  tags: {karpenter.sh/nodepool: x}", None, "spec.tags.karpenter.sh/nodepool"),
        ("  tags: {karpenter.sh/nodeclaim: x}", None, "spec.tags.karpenter.sh/nodeclaim"),
        (
            "  tags: {karpenter.k8s.aws/ec2nodeclass: x}",
            None,
            "spec.tags.karpenter.k8s.aws/ec2nodeclass",
        ),
        ("  tags: {eks:eks-cluster-name: x}", None, "spec.tags.eks:eks-cluster-name"),
        ('  tags: {"": x}', None, "spec.tags"),
        (
            "  kubelet: {evictionHard: {memory.free: 5%}}",
            None,
            "spec.kubelet.evictionHard.memory.free",
        ),
        (
            "  kubelet: {evictionSoft: {cpu.available: 5%}}",
            None,
            "spec.kubelet.evictionSoft.cpu.available",
        ),
        (
            "  kubelet: {evictionSoft: {memory.available: 5%}}",
            None,
            "spec.kubelet.evictionSoftGracePeriod",
        ),
        (
            "  kubelet: {evictionSoftGracePeriod: {memory.available: 1m}}",
            None,
            "spec.kubelet.evictionSoft",
        ),
        (
            "  kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50}",
            None,
            "spec.kubelet.imageGCHighThresholdPercent",
        ),
        ("  kubelet: {systemReserved: {gpu: '1'}}", None, "spec.kubelet.systemReserved.gpu"),
        ("", "[{alias: al2023@latest, tags: {a: b}}]", "spec.amiSelectorTerms[0]"),
        ("", "[{alias: al2023@latest, owner: amazon}]", "spec.amiSelectorTerms[0]"),
        ("", "[{id: ami-1, name: x}]", "spec.amiSelectorTerms[0]"),
        ("", "[{alias: al2023@latest}, {id: ami-1}]", "spec.amiSelectorTerms"),
        ("", "[{alias: ubuntu@latest}]", "spec.amiSelectorTerms[0].alias"),
        ("", "[{alias: AL2023@latest}]", "spec.amiSelectorTerms[0].alias"),
        ("", "[{alias: windows2022@v1}]", "spec.amiSelectorTerms[0].alias"),
        ("  amiFamily: Bottlerocket", None, "spec.amiFamily"),
        ("  amiFamily: Ubuntu", "[{id: ami-1}]", "spec.amiFamily"),
        (
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 0Gi}}]",
            None,
            "spec.blockDeviceMappings[0].ebs.volumeSize",
        ),
        (
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 70000Gi}}]",
            None,
            "spec.blockDeviceMappings[0].ebs.volumeSize",
        ),
        (
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Mi}}]",
            None,
            "spec.blockDeviceMappings[0].ebs.volumeSize",
        ),
        (
            "  blockDeviceMappings: [{deviceName: /dev/xvda,"
            " ebs: {volumeSize: 20Gi, volumeType: gp9}}]",
            None,
            "spec.blockDeviceMappings[0].ebs.volumeType",
        ),
        (
            "  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {encrypted: true}}]",
            None,
            "spec.blockDeviceMappings[0].ebs",
        ),
    ],
)
def test_crd_rejections_name_the_field(extra, terms, field):
    with pytest.raises(InputError) as err:
        if terms is None:
            load(extra)
        else:
            load(extra, terms)
    assert err.value.field == field, str(err.value)
    assert err.value.obj == "EC2NodeClass/default"


@pytest.mark.parametrize(
    "size",
    ["1Gi", "59000Gi", "64000G", "58Ti", "64T", "20Gi"],
)
def test_volume_sizes_the_crd_accepts(size):
    nc = load(f"  blockDeviceMappings: [{{deviceName: /dev/xvda, ebs: {{volumeSize: {size}}}}}]")
    assert nc.block_device_mappings[0].volume_size_bytes


def test_custom_family_with_an_alias_keeps_custom():
    """Karpenter's ``AMIFamily()``: an explicit amiFamily wins; Custom with an alias takes the
    alias's AMIs and passes user data through unchanged."""
    assert load("  amiFamily: Custom").ami_family == "Custom"
    assert load("").ami_family == "AL2023"


def test_soft_eviction_with_its_grace_period_loads():
    nc = load(
        "  kubelet:\n"
        "    evictionSoft: {memory.available: 500Mi, nodefs.available: 15%}\n"
        "    evictionSoftGracePeriod: {memory.available: 1m, nodefs.available: 1m30s}\n"
    )
    assert nc.kubelet.eviction_soft == (("memory.available", "500Mi"), ("nodefs.available", "15%"))
    assert nc.kubelet.eviction_soft_grace_period_s == (
        ("memory.available", 60.0),
        ("nodefs.available", 90.0),
    )
