"""Values the API server or AWS would refuse are input errors naming the field, never
accepted with a changed answer: int32/int64 fields, EC2's 16 KB user data, and decimals
that are not plain ASCII (underscores, non-ASCII digits)."""

from __future__ import annotations

import pytest

from joiner.api.decimals import ascii_decimal
from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.manifests.userdata import MAX_USER_DATA_BYTES, check

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  REPLICAS
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: c}
      requirements: []
"""
NODECLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: c}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
  KUBELET
"""


@pytest.mark.parametrize("replicas", ["-1", '"3"', "1.5", str(2**63)])
def test_nodepool_replicas_is_a_non_negative_int64(replicas):
    with pytest.raises(InputError) as info:
        load_text(
            NODEPOOL.replace("REPLICAS", f"replicas: {replicas}")
            + "---\n"
            + NODECLASS.replace("KUBELET", "")
        )
    assert "spec.replicas" in str(info.value)


@pytest.mark.parametrize("field", ["maxPods", "podsPerCore"])
def test_kubelet_counts_are_int32(field):
    text = NODECLASS.replace("KUBELET", f"kubelet: {{{field}: {2**31}}}")
    with pytest.raises(InputError) as info:
        load_text(NODEPOOL.replace("REPLICAS", "") + "---\n" + text)
    assert f"spec.kubelet.{field}" in str(info.value)


def test_user_data_over_16_kb_is_refused():
    check("AL2023", "#!/bin/bash\n" + "x" * (MAX_USER_DATA_BYTES - 12))  # exactly the limit
    with pytest.raises(InputError, match="EC2 takes at most 16,384") as info:
        check("AL2023", "#!/bin/bash\n" + "x" * (40 * 1024))
    assert info.value.field == "spec.userData"


@pytest.mark.parametrize("text", ["0.0346", "1e-3", "-2", "3.", ".5"])
def test_plain_ascii_decimals_are_read(text):
    assert ascii_decimal(text) == float(text)


@pytest.mark.parametrize("text", ["0_05", "０.０５", "٠.٥", " 0.5", "inf", "nan", "0x1p-2", ""])
def test_other_decimals_are_not(text):
    assert ascii_decimal(text) is None


def test_a_buffer_percentage_beyond_int32_is_refused():
    from tests.sim.test_capacity_buffer import PERCENT_OF_WEB

    with pytest.raises(InputError) as info:
        load_text(PERCENT_OF_WEB.replace("percentage: 15", f"percentage: {2**31}"))
    assert "spec.percentage" in str(info.value)
