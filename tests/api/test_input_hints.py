"""Hints on input errors: an object of one Karpenter version's shape under the other
version's ``apiVersion`` is told which version its shape is (``loader._version_hint``), and
a Helm values file given as manifests is named as such (``loader._values_file_hint``)."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from tests.manifests import EC2NODECLASS

SPOT = "{key: karpenter.sh/capacity-type, operator: In, values: [spot]}"


def _pool(template_spec: str, disruption: str) -> str:
    """A NodePool ``default`` under ``APIVERSION`` with these template spec lines and
    disruption block."""
    return f"""
apiVersion: APIVERSION
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
{template_spec}      requirements: [{SPOT}]
  disruption: {disruption}
"""


V1_POOL = _pool(
    "      expireAfter: 720h\n"
    "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n",
    "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}",
)
V1BETA1_POOL = _pool(
    "      nodeClassRef: {name: default}\n",
    "{consolidationPolicy: WhenUnderutilized, expireAfter: 720h}",
)
V1_CLASS = EC2NODECLASS.replace("karpenter.k8s.aws/v1", "APIVERSION")


def _error(text: str, api_version: str) -> InputError:
    with pytest.raises(InputError) as info:
        load_text(text.replace("APIVERSION", api_version), "np.yaml")
    return info.value


def test_a_v1_nodepool_marked_v1beta1_is_told_to_say_v1() -> None:
    err = _error(V1_POOL, "karpenter.sh/v1beta1")
    assert err.file == "np.yaml" and err.obj == "NodePool/default"
    assert err.field == "spec.template.spec.nodeClassRef.group"
    assert str(err).endswith(
        "the object has the karpenter.sh/v1 shape: set apiVersion: karpenter.sh/v1"
    )


def test_a_v1beta1_nodepool_marked_v1_is_told_its_version_and_convert() -> None:
    err = _error(V1BETA1_POOL, "karpenter.sh/v1")
    assert "the object has the karpenter.sh/v1beta1 shape" in str(err)
    assert "joiner convert" in str(err)


def test_a_v1_ec2nodeclass_marked_v1beta1_is_told_to_say_v1() -> None:
    err = _error(V1_CLASS, "karpenter.k8s.aws/v1beta1")
    assert "set apiVersion: karpenter.k8s.aws/v1" in str(err)


def test_an_object_wrong_in_both_versions_gets_no_hint() -> None:
    broken = V1_POOL.replace("expireAfter: 720h", "expireAfter: 720h\n      bogus: 1")
    for version in ("karpenter.sh/v1beta1", "karpenter.sh/v1"):
        assert "shape" not in str(_error(broken, version))


def test_each_shape_loads_under_its_own_version() -> None:
    """The fixtures are right: each shape is valid under its own version."""
    node_class = V1_CLASS.replace("APIVERSION", "karpenter.k8s.aws/v1")
    for text, version in ((V1_POOL, "karpenter.sh/v1"), (V1BETA1_POOL, "karpenter.sh/v1beta1")):
        loaded = load_text(text.replace("APIVERSION", version) + "---\n" + node_class, "a")
        assert [p.name for p in loaded.nodepools] == ["default"]


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (
            "settings: {clusterName: demo, featureGates: {spotToSpotConsolidation: true}}\n",
            "Karpenter's Helm values",
        ),
        ("replicas: 2\ncontroller: {resources: {}}\n", "Karpenter's Helm values"),
        ("enableSpotInterruptionDraining: true\n", "spec.interruption"),
        # an umbrella chart's values, as the published seed examples nest them
        ("karpenter:\n  tolerations: []\n", "Karpenter's Helm"),
        ("aws-node-termination-handler:\n  enableRebalanceMonitoring: true\n", "interruption"),
        # the chart's values as another type than a mapping (no hint was given)
        ("karpenter: []\n", "Karpenter's Helm"),
        ("aws-node-termination-handler: [enableIMDS]\n", "interruption"),
        # an umbrella chart's values of both: both named (only Karpenter's was)
        (
            "karpenter: {tolerations: []}\naws-node-termination-handler: {enableIMDS: true}\n",
            "Karpenter and the AWS Node Termination Handler",
        ),
        ('{"karpenter": {"tolerations": []}}', "Karpenter's Helm"),
        # the published seed FIS experiment template (no hint was given)
        (
            '{"description": "Spot Interrupt", "actions": {}, "targets": {}, "roleArn": "r"}',
            "AWS FIS experiment template, not a Kubernetes object: run it against a "
            "Scenario with joiner chaos run",
        ),
    ],
)
def test_a_helm_values_file_given_as_manifests_is_named_as_such(text: str, hint: str) -> None:
    with pytest.raises(InputError) as info:
        load_text(text, "values.yaml")
    err = info.value
    assert (err.file, err.obj, err.field) == ("values.yaml", "document 1", "apiVersion")
    assert hint in str(err)


def test_a_helm_chart_yaml_given_as_manifests_is_named_as_such() -> None:
    """An umbrella chart's Chart.yaml, given with its values: "field kind: required field is
    missing" was all the error said. An object of apiVersion v1 without its kind gets no
    such hint."""
    chart = "apiVersion: v2\nname: platform\nversion: 0.1.0\ndependencies: [{name: karpenter}]\n"
    with pytest.raises(InputError) as info:
        load_text(chart, "Chart.yaml")
    assert str(info.value) == (
        "Chart.yaml: document 1: field kind: required field is missing (this looks like a "
        "Helm chart's Chart.yaml, not a Kubernetes object: give the manifests the chart "
        "renders, as helm template prints them)"
    )
    with pytest.raises(InputError) as info:
        load_text("apiVersion: v1\nmetadata: {name: web}\n", "p.yaml")
    assert str(info.value) == "p.yaml: document 1: field kind: required field is missing"


def test_an_object_missing_only_its_apiversion_gets_no_values_hint() -> None:
    with pytest.raises(InputError) as info:
        load_text("kind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n", "d.yaml")
    assert str(info.value) == "d.yaml: Deployment/web: field apiVersion: required field is missing"
