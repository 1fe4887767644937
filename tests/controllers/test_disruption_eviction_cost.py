"""Pods' eviction costs in disruption (Karpenter ``EvictionCost``: deletion cost and
priority), the empty-node rule they imply, and ``karpenter.sh/do-not-disrupt`` on DaemonSet
pods, on running clusters read from manifests (``joiner disrupt``'s dry run)."""

from __future__ import annotations

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.api.pods import PodTemplate
from joiner.controllers.disruption.candidates import eviction_cost, reschedule_cost
from joiner.state.cluster import Pod
from tests.controllers.disruption_fixtures import dry_run, node, nodepool, pod

COST = "controller.kubernetes.io/pod-deletion-cost"
KEEP = 'karpenter.sh/do-not-disrupt: "true"'


def reasons(plan):
    return {u.node: u.reason for u in plan.unconsolidatable}


def _two_equal_nodes(a_pod: str, *extra: str) -> list[str]:
    """Nodes ``a`` and ``b`` of one price, each with one pod that fits on ``keep`` (which
    no method may take): the default budget (10% of 3 nodes: 1) lets one go a pass."""
    return [
        nodepool(),
        node("keep", "m5.2xlarge", annotations=KEEP),
        node("a", "m5.xlarge"),
        node("b", "m5.xlarge"),
        a_pod,
        pod("web-b", "b"),
        *extra,
    ]


def test_equal_nodes_go_by_name_when_pods_cost_the_same(tmp_path):
    plan = dry_run(tmp_path, *_two_equal_nodes(pod("web-a", "a"))).plan()
    first = plan.commands[0]
    assert (first.method, first.candidates) == ("SingleNodeConsolidation", ["a"])


def test_a_high_deletion_cost_makes_the_other_node_go_first(tmp_path):
    costly = pod("web-a", "a", annotations=f'{COST}: "2147483647"')
    plan = dry_run(tmp_path, *_two_equal_nodes(costly)).plan()
    first = plan.commands[0]
    assert (first.method, first.candidates) == ("SingleNodeConsolidation", ["b"])


def test_a_high_priority_from_its_class_makes_the_other_node_go_first(tmp_path):
    klass = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
        "value: 1000000\n"
    )
    high = pod("web-a", "a").replace(
        "  nodeName: a\n", "  nodeName: a\n  priorityClassName: high\n"
    )
    plan = dry_run(tmp_path, *_two_equal_nodes(high, klass)).plan()
    first = plan.commands[0]
    assert (first.method, first.candidates) == ("SingleNodeConsolidation", ["b"])


def test_a_node_whose_pods_all_cost_nothing_to_evict_is_empty(tmp_path):
    """Karpenter ``IsEmpty``: reschedule cost at most 1, so Emptiness (reason Empty)
    deletes the node although a pod runs on it, even under ``WhenEmpty``."""
    pool = nodepool().replace("WhenEmptyOrUnderutilized", "WhenEmpty")
    cheap = pod("cheap", "a", annotations=f'{COST}: "-2147483648"')
    plan = dry_run(
        tmp_path, pool, node("keep", "m5.2xlarge", annotations=KEEP), node("a", "m5.xlarge"), cheap
    ).plan()
    first = plan.commands[0]
    assert (first.method, first.reason, first.candidates) == ("Emptiness", "Empty", ["a"])
    assert first.replacements == []


def test_a_small_negative_deletion_cost_leaves_the_node_not_empty(tmp_path):
    pool = nodepool().replace("WhenEmptyOrUnderutilized", "WhenEmpty")
    cheap = pod("cheap", "a", annotations=f'{COST}: "-1000"')
    plan = dry_run(tmp_path, pool, node("a", "m5.xlarge"), cheap).plan()
    assert plan.commands == []
    assert "WhenEmpty" in reasons(plan)["a"]


def _daemonset_pod(name: str, node_name: str, annotations: str = "") -> str:
    ann = f", annotations: {{{annotations}}}" if annotations else ""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  {{name: {name}, namespace: kube-system, labels: {{app: agent}}{ann},
   ownerReferences:
     [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}}]}}
spec:
  nodeName: {node_name}
  containers: [{{name: main, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
"""


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: main, image: agent, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
"""


def test_a_daemonset_pod_with_do_not_disrupt_blocks_emptiness(tmp_path):
    """Karpenter ``ValidatePodsDisruptable`` checks every pod on the node, DaemonSet pods
    too, for an active do-not-disrupt annotation."""
    docs = [nodepool(), DAEMONSET, node("idle", "m5.xlarge")]
    plain = dry_run(tmp_path, *docs, _daemonset_pod("agent-idle", "idle")).plan()
    assert [(c.method, c.candidates) for c in plain.commands] == [("Emptiness", ["idle"])]
    kept = dry_run(tmp_path, *docs, _daemonset_pod("agent-idle", "idle", KEEP)).plan()
    assert kept.commands == []
    assert reasons(kept)["idle"] == "pod kube-system/agent-idle has karpenter.sh/do-not-disrupt"


def test_a_daemonset_pod_with_do_not_disrupt_blocks_consolidation(tmp_path):
    docs = [nodepool(), DAEMONSET, node("big", "m5.4xlarge"), pod("web-1", "big", cpu="1")]
    assert dry_run(tmp_path, *docs, _daemonset_pod("agent-big", "big")).plan().commands
    plan = dry_run(tmp_path, *docs, _daemonset_pod("agent-big", "big", KEEP)).plan()
    assert plan.commands == []
    assert reasons(plan)["big"] == "pod kube-system/agent-big has karpenter.sh/do-not-disrupt"


def _pod(*, deletion_cost: int | None = None, priority: int | None = None) -> Pod:
    template = PodTemplate(
        requests={"cpu": 100, "pods": 1}, deletion_cost=deletion_cost, priority=priority
    )
    return Pod("u", "default", "p", template, "Pod/default/p", 0.0, 0)


@pytest.mark.parametrize(
    ("deletion_cost", "priority", "cost"),
    [
        (None, None, 1.0),
        (2**27, None, 2.0),
        (-(2**27), None, 0.0),
        (None, 2**25, 2.0),
        (None, -(2**25) * 3, -2.0),
        (2**27, 2**25, 3.0),
        (2**31 - 1, None, 10.0),  # 1 + ~16, clamped
        (-(2**31), None, -10.0),  # 1 - 16, clamped
        (None, 2_000_000_000, 10.0),  # system-cluster-critical: clamped
        (None, -(2**31), -10.0),  # a CapacityBuffer's virtual pod priority
    ],
)
def test_eviction_cost_is_karpenters_formula(deletion_cost, priority, cost):
    assert eviction_cost(_pod(deletion_cost=deletion_cost, priority=priority)) == cost


def test_reschedule_cost_counts_only_positive_eviction_costs():
    pods = [_pod(), _pod(deletion_cost=-(2**31)), _pod(priority=2**25)]
    assert reschedule_cost(pods) == 1.0 + 1.0 + 0.0 + 2.0
    assert reschedule_cost([]) == 1.0


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {controller.kubernetes.io/pod-deletion-cost: VALUE}
spec:
  containers: [{name: main, image: x}]
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {controller.kubernetes.io/pod-deletion-cost: VALUE}}
    spec:
      containers: [{name: main, image: x}]
"""


@pytest.mark.parametrize(
    ("value", "cost"),
    [('"0"', 0), ('"-0"', 0), ('"-5"', -5), ('"-007"', -7), ('"2147483647"', 2**31 - 1)],
)
def test_deletion_costs_the_api_server_admits_reach_the_template(value, cost):
    (p,) = load_text(POD.replace("VALUE", value), "pod.yaml").pods
    assert p.template.deletion_cost == cost
    (w,) = load_text(DEPLOYMENT.replace("VALUE", value), "web.yaml").workloads
    assert w.template.deletion_cost == cost


@pytest.mark.parametrize(
    "value", ['"+10"', '"007"', '"1.5"', '"1e3"', '"abc"', '""', '"-"', '"2147483648"', '" 1"']
)
def test_a_deletion_cost_the_api_server_refuses_is_an_input_error(value):
    """Kubernetes ``ValidatePodSpecificAnnotations`` refuses such a pod (or template), so
    Karpenter never sees it; Joiner names the file, object and field."""
    with pytest.raises(InputError) as info:
        load_text(POD.replace("VALUE", value), "pod.yaml")
    assert (info.value.file, info.value.obj) == ("pod.yaml", "Pod/p")
    assert info.value.field == f"metadata.annotations.{COST}"
    assert "must be a 32bit integer" in info.value.detail
    with pytest.raises(InputError) as info:
        load_text(DEPLOYMENT.replace("VALUE", value), "web.yaml")
    assert info.value.field == f"spec.template.metadata.annotations.{COST}"


def test_a_daemonset_templates_do_not_disrupt_reaches_its_template():
    text = DAEMONSET.replace(
        "    metadata: {labels: {app: agent}}\n",
        f"    metadata: {{labels: {{app: agent}}, annotations: {{{KEEP}}}}}\n",
    )
    (ds,) = load_text(text, "ds.yaml").daemonsets
    assert ds.template.do_not_disrupt == "true"
