"""Which claims a pod may schedule with (Karpenter ``ValidatePersistentVolumeClaims``): an
unbound claim needs an existing StorageClass that waits for the first consumer; a claim or
volume being deleted is refused; a bound claim follows its volume whatever its class's
binding mode. ``joiner plan`` reports a refused pod as unschedulable."""

from __future__ import annotations

from pathlib import Path

import pytest

from joiner.api import labels
from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.requirements import Requirement, Requirements
from joiner.scheduling.volumes import MissingVolumeError, volume_terms
from tests.cli.test_plan_regressions import POOLS, _plan, _pod

POD = _pod("db", spec_extra="  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n")


def _claim(spec: str, meta: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data{meta}}}
spec: {spec}
"""


def _class(mode: str) -> str:
    return f"""
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: gp3}}
provisioner: ebs.csi.aws.com
volumeBindingMode: {mode}
allowedTopologies: [{{matchLabelExpressions: [{{key: {labels.ZONE}, values: [us-east-1b]}}]}}]
"""


def _volume(meta: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: pv-1{meta}}}
spec:
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{{key: {labels.ZONE}, operator: In, values: [us-east-1c]}}]
"""


def _terms(text: str) -> tuple[Requirements, ...]:
    m = load_text(text + POD, "m.yaml")
    (pod,) = m.pods
    return volume_terms(pod.template, m.pvcs, m.pvs, m.storageclasses)


def _zone(zone: str) -> tuple[Requirements, ...]:
    return (Requirements([Requirement.in_(labels.ZONE, zone)]),)


DELETING = ", deletionTimestamp: '2026-11-29T10:00:00Z', finalizers: [x]"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_claim("{}"), id="unbound-without-class"),
        pytest.param(_claim("{storageClassName: gp3}"), id="class-missing"),
        pytest.param(_claim("{storageClassName: gp3}") + _class("Immediate"), id="immediate"),
        pytest.param(
            _claim("{storageClassName: gp3}", DELETING) + _class("WaitForFirstConsumer"),
            id="claim-deleting",
        ),
        pytest.param(
            _claim("{storageClassName: gp3, volumeName: pv-1}") + _volume(DELETING),
            id="volume-deleting",
        ),
    ],
)
def test_claims_a_pod_cannot_use_yet_are_refused(text: str) -> None:
    with pytest.raises(MissingVolumeError):
        _terms(text)


def test_a_wait_for_first_consumer_class_gives_its_allowed_topologies() -> None:
    assert _terms(_claim("{storageClassName: gp3}") + _class("WaitForFirstConsumer")) == _zone(
        "us-east-1b"
    )


def test_a_bound_claim_follows_its_volume_whatever_its_class_binding_mode() -> None:
    text = _claim("{storageClassName: gp3, volumeName: pv-1}") + _volume() + _class("Immediate")
    assert _terms(text) == _zone("us-east-1c")


def test_plan_reports_a_pod_on_an_unbound_immediate_claim_unschedulable(tmp_path: Path) -> None:
    text = POOLS + _claim("{storageClassName: gp3}") + _class("Immediate") + POD
    plan = _plan(tmp_path, text)
    assert plan["nodeClaims"] == []
    (refused,) = plan["unschedulable"]
    assert refused["pod"].endswith("db") and "Immediate" in refused["reason"]


def _volume_with_term(term: str) -> str:
    return f"""
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: pv-1}}
spec:
  nodeAffinity: {{required: {{nodeSelectorTerms: [{term}]}}}}
"""


BOUND = _claim("{storageClassName: gp3, volumeName: pv-1}")


def test_a_volume_term_of_match_fields_only_restricts_nothing_and_is_warned_about() -> None:
    # Karpenter getPersistentVolumeRequirements reads a term's matchExpressions only.
    text = BOUND + _volume_with_term(
        "{matchFields: [{key: metadata.name, operator: In, values: [x]}]}"
    )
    assert _terms(text) == ()
    (warning,) = load_text(text + POD, "m.yaml").warnings
    assert warning == (
        "m.yaml: PersistentVolume/pv-1: field "
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields: not modelled; "
        "the term restricts no node (Karpenter reads matchExpressions only)"
    )


def test_a_volume_term_with_match_fields_keeps_its_match_expressions() -> None:
    text = BOUND + _volume_with_term(
        f"{{matchExpressions: [{{key: {labels.ZONE}, operator: In, values: [us-east-1c]}}], "
        "matchFields: [{key: metadata.name, operator: In, values: [x]}]}"
    )
    assert _terms(text) == _zone("us-east-1c")
    (warning,) = load_text(text + POD, "m.yaml").warnings
    assert warning.endswith(
        "[0].matchFields: not modelled; the term's matchExpressions apply alone"
    )


def test_an_empty_volume_term_is_refused_naming_its_field_once() -> None:
    text = BOUND + _volume_with_term("{}, {}")
    with pytest.raises(InputError) as err:
        load_text(text + POD, "m.yaml")
    assert "field spec.nodeAffinity.required.nodeSelectorTerms[0]: an empty node selector" in str(
        err.value
    )
