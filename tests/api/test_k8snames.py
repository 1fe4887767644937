"""Names, namespaces, label keys and values as apimachinery checks them
(``joiner.api.k8snames``), applied by the manifest loader to every kind it reads."""

from __future__ import annotations

import pytest

from joiner.api import k8snames
from joiner.api.errors import InputError
from joiner.api.manifests import load_text


@pytest.mark.parametrize("name", ["a", "my-name", "123-abc", "a" * 63])
def test_dns1123_label_accepts(name):
    assert k8snames.dns1123_label(name) == []


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("My-Name", "lowercase RFC 1123 label"),
        ("-a", "lowercase RFC 1123 label"),
        ("a-", "lowercase RFC 1123 label"),
        ("a.b", "must not contain dots"),
        ("a" * 64, "no more than 63 bytes"),
        ("", "lowercase RFC 1123 label"),
        ("abc\n", "lowercase RFC 1123 label"),
        ("caf\u00e9", "lowercase RFC 1123 label"),
    ],
)
def test_dns1123_label_refuses(name, says):
    assert any(says in e for e in k8snames.dns1123_label(name))


@pytest.mark.parametrize("name", ["a", "example.com", "a.b-c.d", ".".join(["a" * 63] * 4)[:253]])
def test_dns1123_subdomain_accepts(name):
    assert k8snames.dns1123_subdomain(name.rstrip(".")) == []


@pytest.mark.parametrize("name", ["Web_App", "a..b", ".a", "a.", "a" * 254, "x\u0661"])
def test_dns1123_subdomain_refuses(name):
    assert k8snames.dns1123_subdomain(name)


@pytest.mark.parametrize("key", ["app", "MyName", "my.name", "example.com/team", "a/b_c.D-9"])
def test_label_keys(key):
    assert k8snames.label_key_error(key) is None


@pytest.mark.parametrize("key", ["bad key", "a/b/c", "/a", "Example.com/a", "a/", "a" * 64, "-a"])
def test_bad_label_keys(key):
    assert "is not a qualified name" in str(k8snames.label_key_error(key))


@pytest.mark.parametrize("value", ["", "v1", "a.b_c-d", "a" * 63])
def test_label_values(value):
    assert k8snames.label_value_error(value) is None


@pytest.mark.parametrize("value", ["a b", "-a", "a-", "a" * 64, "\u00e9", "a\n"])
def test_bad_label_values(value):
    assert "is not valid" in str(k8snames.label_value_error(value))


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        ("Namespace", "label"),
        ("StatefulSet", "label"),
        ("Deployment", "subdomain"),
        ("Pod", "subdomain"),
        ("NodePool", "subdomain"),
        ("Node", "subdomain"),
        ("PersistentVolume", "subdomain"),
    ],
)
def test_name_rule_per_kind(kind, rule):
    """ValidateNamespaceName and ValidateStatefulSetName are NameIsDNSLabel; the rest (and
    custom resources) NameIsDNSSubdomain."""
    assert k8snames.name_rule(kind) == rule


def test_annotations_over_256_kib_are_refused():
    doc = {"metadata": {"name": "a", "annotations": {"k": "x" * (256 * 1024)}}}
    with pytest.raises(InputError, match="more than the API server's 262,144"):
        k8snames.check_object(doc, "Pod", "f.yaml", "Pod/a")
    doc["metadata"]["annotations"] = {"k": "x" * (256 * 1024 - 1)}
    k8snames.check_object(doc, "Pod", "f.yaml", "Pod/a")


POD = """\
apiVersion: v1
kind: Pod
metadata: {name: <NAME>, namespace: <NS>, labels: <LABELS>, annotations: <ANNOTATIONS>}
spec:
  nodeSelector: <SELECTOR>
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
"""


def _pod(**parts: str) -> str:
    text = POD
    defaults = {"NAME": "web", "NS": "default", "LABELS": "{}", "ANNOTATIONS": "{}"}
    for key, value in {**defaults, "SELECTOR": "{}", **parts}.items():
        text = text.replace(f"<{key}>", value)
    return text


@pytest.mark.parametrize(
    ("parts", "field", "says"),
    [
        ({"NAME": "Web_App"}, "metadata.name", "is not a valid Pod name"),
        ({"NS": "Team.A"}, "metadata.namespace", "is not a valid namespace name"),
        ({"LABELS": "{app: 'a b'}"}, "metadata.labels.app", "label value 'a b' is not valid"),
        ({"ANNOTATIONS": "{'a b': x}"}, "metadata.annotations.a b", "annotation key 'a b'"),
        ({"SELECTOR": "{'x/y/z': a}"}, "spec.nodeSelector.x/y/z", "is not a qualified name"),
    ],
)
def test_the_loader_applies_them(parts, field, says):
    with pytest.raises(InputError) as info:
        load_text(_pod(**parts), "pod.yaml")
    assert info.value.field == field
    assert says in info.value.detail
    assert info.value.file == "pod.yaml"


def test_a_valid_pod_loads():
    text = _pod(
        LABELS="{app.kubernetes.io/name: web, empty: ''}", SELECTOR="{kubernetes.io/os: linux}"
    )
    assert [p.name for p in load_text(text).pods] == ["web"]


def test_karpenter_requirement_values_are_label_values():
    """Karpenter's ValidateRequirement: every value of a requirement is a label value."""
    text = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: c}
      requirements: [{key: team, operator: In, values: [ok, "not ok"]}]
---
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: c}
"""
    with pytest.raises(InputError) as info:
        load_text(text)
    assert info.value.field == "spec.template.spec.requirements[0].values[1]"
