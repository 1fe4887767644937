"""The replicas ``joiner plan`` and ``joiner disrupt`` add as pending pods: a workload's
replicas not listed as Pods its selector matches in its namespace, counted through the
label index (``plan._ListedPods``) exactly as one ``selects`` per Pod counts them."""

from __future__ import annotations

import itertools
from typing import Any

from joiner.api.manifests import load_documents
from joiner.api.manifests.pods import selects
from joiner.operator.plan import missing_replicas

SELECTORS: dict[str, dict[str, Any]] = {
    "web": {"matchLabels": {"app": "web"}},
    "web-blue": {"matchLabels": {"app": "web", "track": "blue"}},
    "tiers": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]},
    "not-web": {
        "matchLabels": {"team": "a"},
        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}],
    },
    "has-app": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    "no-tier": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
}
POD_LABELS = [
    {"app": "web"},
    {"app": "web", "track": "blue"},
    {"app": "api", "tier": "x", "team": "a"},
    {"app": "web", "tier": "y", "team": "a"},
    {"tier": "z", "team": "a"},
    {"team": "b"},
]


def _docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for ns, (name, selector) in itertools.product(("a", "b"), SELECTORS.items()):
        labels = dict(selector.get("matchLabels", {}))
        for e in selector.get("matchExpressions", []):
            if e["operator"] == "In":
                labels[e["key"]] = e["values"][0]
            elif e["operator"] == "Exists":
                labels[e["key"]] = "v"
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "replicas": 9,
                    "selector": selector,
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "c", "image": "i"}]},
                    },
                },
            }
        )
    # Namespace a lists two Pods of each label set, namespace b one of the first three.
    for ns, copies, sets in (("a", 2, POD_LABELS), ("b", 1, POD_LABELS[:3])):
        for i, (labels, n) in enumerate(itertools.product(sets, range(copies))):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i}-{n}", "namespace": ns, "labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                }
            )
    return docs


def test_missing_replicas_count_each_listed_pod_the_selector_matches_in_the_namespace() -> None:
    m = load_documents(_docs(), "cluster.yaml")
    got: dict[str, int] = {}
    for w, _name in missing_replicas(m):
        got[f"{w.namespace}/{w.name}"] = got.get(f"{w.namespace}/{w.name}", 0) + 1
    for w in m.workloads:
        listed = sum(
            1
            for p in m.pods
            if p.namespace == w.namespace and selects(w.selector, dict(p.template.labels))
        )
        assert got.get(f"{w.namespace}/{w.name}", 0) == max(0, 9 - listed), w.name
    # By hand: in namespace a, app=web is on 3 label sets (6 Pods), tier In [x, y] on 2 (4),
    # team=a without app=web on 2 (4), app Exists on 4 (8), no tier on 3 (6).
    assert [got[f"a/{n}"] for n in SELECTORS] == [3, 7, 5, 5, 1, 3]
    assert [got[f"b/{n}"] for n in SELECTORS] == [7, 8, 8, 8, 6, 7]
