"""Resource names are validated as Kubernetes validates them (``joiner.api.resourcenames``):
a name with a blank, two slashes or no domain where one is needed is an input error naming
file, object and field; a well-formed extended resource Joiner does not know is accepted."""

from __future__ import annotations

import pytest

from joiner.api import quantity, resourcenames
from joiner.api.errors import InputError
from joiner.api.manifests import load_text


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("cpu", resourcenames.CONTAINER),
        ("hugepages-2Mi", resourcenames.CONTAINER),
        ("nvidia.com/gpu", resourcenames.CONTAINER),
        ("example.com/widget", resourcenames.CONTAINER),  # unknown, well formed
        ("kubernetes.io/whatever", resourcenames.CONTAINER),  # native: no extended rule
        ("pods", resourcenames.RESOURCE),
        ("vpc.amazonaws.com/pod-eni", resourcenames.RESOURCE),
        ("nodes", resourcenames.QUALIFIED),  # Karpenter's node-count limit
        ("a" * 63, resourcenames.QUALIFIED),
    ],
)
def test_valid_names(name, rule):
    assert resourcenames.check(name, rule=rule) == name


@pytest.mark.parametrize(
    ("name", "rule", "words"),
    [
        ("nvidia gpu", resourcenames.QUALIFIED, "characters"),
        ("a/b/c", resourcenames.QUALIFIED, "more than one '/'"),
        ("/gpu", resourcenames.QUALIFIED, "empty prefix"),
        ("nvidia.com/", resourcenames.QUALIFIED, "empty name"),
        ("Nvidia.com/gpu", resourcenames.QUALIFIED, "DNS subdomain"),
        ("-cpu", resourcenames.QUALIFIED, "start and end"),
        ("a" * 64, resourcenames.QUALIFIED, "longer than 63"),
        ("", resourcenames.QUALIFIED, "empty name"),
        ("gpu", resourcenames.RESOURCE, "domain prefix"),
        ("pods", resourcenames.CONTAINER, "container can request"),
        ("requests.cpu", resourcenames.CONTAINER, "container can request"),
        ("requests.example.com/gpu", resourcenames.CONTAINER, "extended resource"),
        ("a" * 250 + "/gpu", resourcenames.CONTAINER, "extended resource"),
    ],
)
def test_invalid_names(name, rule, words):
    with pytest.raises(InputError, match=words):
        resourcenames.check(name, rule=rule, field="x")


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
    - name: c
      image: x
      resources: {requests: {cpu: "1", RESOURCE: "1"}, limits: {RESOURCE: "1"}}
"""

NODE_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements: []
  limits: {cpu: "100", RESOURCE: "10"}
---
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
"""

RUNTIME_CLASS = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, RESOURCE: "1"}}
"""


@pytest.mark.parametrize(
    ("text", "name", "obj", "field"),
    [
        (POD, "nvidia gpu", "Pod/p", "spec.containers[0].resources.limits.nvidia gpu"),
        (POD, "gpu", "Pod/p", "spec.containers[0].resources.limits.gpu"),
        (POD, "pods", "Pod/p", "spec.containers[0].resources.limits.pods"),
        (NODE_POOL, "nvidia.com/g pu", "NodePool/web", "spec.limits.nvidia.com/g pu"),
        (NODE_POOL, "a/b/c", "NodePool/web", "spec.limits.a/b/c"),
        (RUNTIME_CLASS, "gpu", "RuntimeClass/kata", "overhead.podFixed.gpu"),
    ],
)
def test_an_invalid_resource_name_in_a_manifest_is_located(text, name, obj, field):
    with pytest.raises(InputError) as err:
        load_text(text.replace("RESOURCE", f'"{name}"'), "m.yaml")
    assert (err.value.file, err.value.field) == ("m.yaml", field), str(err.value)
    assert err.value.obj == obj
    assert "resource name" in str(err.value)


@pytest.mark.parametrize("text", [POD, NODE_POOL, RUNTIME_CLASS])
def test_a_well_formed_unknown_extended_resource_is_accepted(text):
    assert load_text(text.replace("RESOURCE", '"example.com/widget"'), "m.yaml") is not None


def test_karpenters_node_count_limit_stays_valid():
    assert load_text(NODE_POOL.replace("RESOURCE", "nodes"), "m.yaml") is not None


@pytest.mark.parametrize("value", ["1.5", "500m", 0.5])
def test_a_containers_extended_resource_must_be_whole(value):
    """The breaker's input: ``example.com/gpu: "1.5"`` was rounded up to 2 without a word;
    the API server rejects it (``ValidateResourceRequirements``: must be an integer)."""
    with pytest.raises(InputError, match="whole units"):
        quantity.parse_resources({"example.com/gpu": value}, names=resourcenames.CONTAINER)


def test_whole_extended_amounts_and_native_fractions_stay_accepted():
    got = quantity.parse_resources(
        {"example.com/gpu": "2", "cpu": "1.5", "memory": "1.5Gi", "hugepages-2Mi": "4Mi"},
        names=resourcenames.CONTAINER,
    )
    assert got["example.com/gpu"] == 2 and got["cpu"] == 1500
    # Node capacity and other lists are not container requests: no such rule there.
    assert quantity.parse_resources({"example.com/gpu": "1.5"}, names=resourcenames.RESOURCE)
