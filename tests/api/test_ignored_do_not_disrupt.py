"""A ``karpenter.sh/do-not-disrupt`` value Karpenter ignores (neither ``"true"`` nor a Go
duration) draws a warning naming the file, object and annotation
(``loader._note_ignored_do_not_disrupt``); the pod is still read as unprotected, as
Karpenter reads it."""

from __future__ import annotations

import pytest

from joiner.api.manifests import load_text
from tests.manifests import deployment

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, annotations: {karpenter.sh/do-not-disrupt: VALUE}}
spec:
  nodeName: node-a
  containers: [{name: main, image: x}]
"""

TEMPLATE = deployment("      containers: [{name: main, image: x}]\n").replace(
    "metadata: {labels: {app: web}}",
    "metadata: {labels: {app: web}, annotations: {karpenter.sh/do-not-disrupt: VALUE}}",
)


def _warnings(doc: str, value: str) -> list[str]:
    return load_text(doc.replace("VALUE", value), "dump.yaml").warnings


#: What a value Karpenter ignores is told on a Pod and on a Node.
ON_POD = (
    'is neither "true" nor a Go duration such as 30m, so Karpenter ignores it: the pod '
    "does not block disruption"
)
ON_NODE = (
    'is not "true", the only value Karpenter honours on a Node (a duration is for pods): '
    "the node does not block disruption"
)


@pytest.mark.parametrize("value", ["'True'", "'yes'", "' true'", "'10x'", "''", "'-true'"])
def test_a_value_karpenter_ignores_warns_on_a_pod(value: str) -> None:
    """``True`` (a capital) left the node to consolidation without a word."""
    assert _warnings(POD, value) == [
        "dump.yaml: Pod/web-1: field metadata.annotations.karpenter.sh/do-not-disrupt: "
        f"{value[1:-1]!r} {ON_POD}"
    ]
    loaded = load_text(POD.replace("VALUE", value), "dump.yaml")
    assert loaded.pods[0].template.do_not_disrupt == value[1:-1]


def test_a_template_value_warns_with_the_templates_field() -> None:
    loaded = load_text(TEMPLATE.replace("VALUE", "'True'"), "web.yaml")
    (warning,) = loaded.warnings
    assert warning.startswith(
        "web.yaml: Deployment/web: field spec.template.metadata.annotations"
        ".karpenter.sh/do-not-disrupt: 'True' is neither"
    )


@pytest.mark.parametrize("value", ["'true'", "'false'", "30m", "'-5m'", "1h30m"])
def test_true_false_and_durations_draw_nothing(value: str) -> None:
    assert _warnings(POD, value) == []


NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a, annotations: {karpenter.sh/do-not-disrupt: VALUE}}
"""


@pytest.mark.parametrize(("value", "shown"), [("'True'", "'True'"), ("30m", "'30m'")])
def test_a_nodes_value_other_than_true_warns(value: str, shown: str) -> None:
    """A Node's annotation counts only as "true": a duration there protects nothing."""
    assert _warnings(NODE, value) == [
        "dump.yaml: Node/node-a: field metadata.annotations.karpenter.sh/do-not-disrupt: "
        f"{shown} {ON_NODE}"
    ]


@pytest.mark.parametrize("value", ["'true'", "'false'"])
def test_a_nodes_true_or_false_draws_nothing(value: str) -> None:
    assert _warnings(NODE, value) == []
