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
from joiner.scheduling.volumes import ConflictingVolumesError, MissingVolumeError, volume_terms
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


TWO_CLAIMS = _pod(
    "db",
    spec_extra="  volumes: [{name: a, persistentVolumeClaim: {claimName: a}}, "
    "{name: b, persistentVolumeClaim: {claimName: b}}]\n",
)


def _named_claim(name: str, spec: str) -> str:
    return _claim(spec).replace("name: data", f"name: {name}")


def _zonal_volume(name: str, zone: str) -> str:
    return _volume_with_term(
        f"{{matchExpressions: [{{key: {labels.ZONE}, operator: In, values: [{zone}]}}]}}"
    ).replace("pv-1", name)


def _two_claims_terms(text: str) -> tuple[Requirements, ...]:
    m = load_text(text + TWO_CLAIMS, "m.yaml")
    (pod,) = m.pods
    return volume_terms(pod.template, m.pvcs, m.pvs, m.storageclasses)


def test_volumes_in_different_zones_are_refused_naming_both() -> None:
    text = (
        _named_claim("a", "{storageClassName: gp3, volumeName: pv-a}")
        + _named_claim("b", "{storageClassName: gp3, volumeName: pv-b}")
        + _zonal_volume("pv-a", "us-east-1a")
        + _zonal_volume("pv-b", "us-east-1b")
    )
    with pytest.raises(ConflictingVolumesError) as err:
        _two_claims_terms(text)
    assert str(err.value) == (
        f"the volumes of PersistentVolumeClaims default/a (PersistentVolume pv-a: {labels.ZONE} "
        f"In [us-east-1a]) and default/b (PersistentVolume pv-b: {labels.ZONE} In [us-east-1b]) "
        "allow no common node"
    )


def test_only_the_combinations_of_volumes_that_intersect_are_kept() -> None:
    # Karpenter mergeVolumeRequirementAlternatives: the class allows 1b or 1c, the volume is
    # in 1c; the 1b-and-1c combination, which no node satisfies, is dropped.
    two_zones = _class("WaitForFirstConsumer").replace(
        "values: [us-east-1b]}]}]",
        "values: [us-east-1b]}]}, "
        f"{{matchLabelExpressions: [{{key: {labels.ZONE}, values: [us-east-1c]}}]}}]",
    )
    text = (
        _named_claim("a", "{storageClassName: gp3}")
        + two_zones
        + _named_claim("b", "{storageClassName: gp3, volumeName: pv-c}")
        + _zonal_volume("pv-c", "us-east-1c")
    )
    assert _two_claims_terms(text) == _zone("us-east-1c")


def test_a_pod_fitting_no_offering_because_of_its_class_names_the_class(tmp_path: Path) -> None:
    nowhere = _class("WaitForFirstConsumer").replace("us-east-1b", "us-east-1z")
    plan = _plan(tmp_path, POOLS + _claim("{storageClassName: gp3}") + nowhere + POD)
    reasons = {u["reason"] for u in plan["unschedulable"]}
    assert reasons and all(
        r.endswith(
            f"; the pod's volumes require: PersistentVolumeClaim default/data "
            f"(StorageClass gp3: {labels.ZONE} In [us-east-1z])"
        )
        for r in reasons
    ), reasons
