"""Node conditions from a dump: NotReady, cordoned and deleting nodes, and a NodeClaim's
``lastPodEventTime``, as ``joiner plan`` and ``joiner disrupt`` read them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from joiner.api.errors import InputError
from joiner.api.manifests import load_text
from joiner.cloudprovider.catalog import Catalog
from joiner.controllers.disruption.budgets import pool_counts
from joiner.operator.disrupt import DryRun, build_disruption_plan
from joiner.operator.plan import build_plan

REGION = "us-east-1"
AT = datetime(2025, 1, 7, 21, 0, tzinfo=UTC)

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 10m
    budgets: [{nodes: "1"}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""


def _node(name: str, *, extra_meta: str = "", spec: str = "", status: str = "") -> str:
    """An empty m5.xlarge Node of NodePool web in us-east-1a."""
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    karpenter.sh/nodepool: web
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.xlarge
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
{extra_meta}
spec:
  providerID: aws:///us-east-1a/i-{name}
{spec}
status:
  allocatable: {{cpu: 3920m, memory: 14Gi, pods: "58"}}
{status}
"""


#: The label Karpenter puts on a Node it has initialized (a real dump's nodes have it).
INITIALIZED = "    karpenter.sh/initialized: 'true'"

NOT_READY = """
  conditions:
    - {type: Ready, status: "False", reason: KubeletNotReady}
"""

PENDING = """
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
spec:
  containers:
    - name: c
      image: x
      resources: {requests: {cpu: 500m, memory: 512Mi}}
"""

TOLERATING = """
---
apiVersion: v1
kind: Pod
metadata: {name: tolerant, namespace: default}
spec:
  tolerations:
    - {key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}
  containers:
    - name: c
      image: x
      resources: {requests: {cpu: 500m, memory: 512Mi}}
"""


def _disrupt(text: str):
    return build_disruption_plan(load_text(POOL + text), Catalog.load(), REGION, at=AT)


def _plan(text: str):
    return build_plan(load_text(POOL + text), Catalog.load(), REGION)


def test_a_not_ready_node_uses_the_budget_of_one_so_no_other_node_is_disrupted():
    """Karpenter's BuildDisruptionBudgetMapping counts the NotReady node as disrupting."""
    text = _node("bad", status=NOT_READY) + _node("a") + _node("b")
    plan = _disrupt(text)
    assert plan.commands == []
    reasons = {u.node: u.reason for u in plan.unconsolidatable}
    assert "allows 0 more" in reasons["a"] and "1 already disrupting" in reasons["a"]


def test_with_every_node_ready_the_budget_lets_one_empty_node_go():
    """The control for the test above: the same dump, all Ready, disrupts one node."""
    ready = """
  conditions:
    - {type: Ready, status: "True"}
"""
    plan = _disrupt(_node("ok", status=ready) + _node("a") + _node("b"))
    assert len(plan.commands) >= 1 and len(plan.commands[0].candidates) == 1


def test_a_node_whose_nodeclaim_is_deleting_counts_against_the_budget():
    """Karpenter reads a managed node's deletion from its NodeClaim (StateNode.Deleted)."""
    claim = """
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: web-gone
  deletionTimestamp: "2025-01-07T20:59:00Z"
  labels: {karpenter.sh/nodepool: web}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [web]}]
status:
  providerID: aws:///us-east-1a/i-gone
  nodeName: gone
"""
    gone = _node("gone", extra_meta=INITIALIZED)
    m = load_text(POOL + gone + _node("a") + _node("b") + claim)
    assert [n.name for n in m.nodes if n.deleting] == ["gone"]
    plan = build_disruption_plan(m, Catalog.load(), REGION, at=AT)
    assert plan.commands == []
    reasons = {u.node: u.reason for u in plan.unconsolidatable}
    assert reasons["gone"] == "already being deleted"
    assert "1 already disrupting" in reasons["a"]


def test_a_recent_last_pod_event_keeps_the_node_from_consolidation():
    """consolidateAfter (10m) counts from the NodeClaim's status.lastPodEventTime."""
    claim = """
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: web-a
  labels: {karpenter.sh/nodepool: web}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [web]}]
status:
  providerID: aws:///us-east-1a/i-a
  nodeName: a
  lastPodEventTime: "2025-01-07T20:58:00Z"
  conditions:
    - {type: Initialized, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}
"""
    node = _node("a", extra_meta=INITIALIZED)
    plan = _disrupt(node + claim)
    assert plan.commands == []
    reason = {u.node: u.reason for u in plan.unconsolidatable}["a"]
    assert reason == "empty, but consolidateAfter (10m) has not passed"
    # The same NodeClaim with its last pod event 11 minutes before: consolidated.
    old = claim.replace("20:58:00Z", "20:49:00Z")
    assert [c.candidates for c in _disrupt(node + old).commands] == [["a"]]


def test_a_cordoned_node_is_not_a_target_for_pending_pods():
    """spec.unschedulable is the node.kubernetes.io/unschedulable:NoSchedule taint."""
    plan = _plan(_node("cordoned", spec="  unschedulable: true") + PENDING)
    assert plan.placements == []
    assert [c.pods for c in plan.nodeClaims] == [["default/web-1"]]


def test_a_pod_tolerating_the_cordon_may_still_go_there():
    """kube-scheduler's TaintToleration: the toleration admits the cordoned node."""
    plan = _plan(_node("cordoned", spec="  unschedulable: true") + TOLERATING)
    assert [(p.pod, p.node) for p in plan.placements] == [("default/tolerant", "cordoned")]


def test_a_not_ready_node_is_not_a_target_for_pending_pods():
    """A Ready=False node carries node.kubernetes.io/not-ready:NoSchedule."""
    plan = _plan(_node("bad", status=NOT_READY) + PENDING)
    assert plan.placements == []
    assert len(plan.nodeClaims) == 1


def test_a_node_without_conditions_is_ready():
    """A hand-written Node without status.conditions is taken as Ready."""
    plan = _plan(_node("plain") + PENDING)
    assert [(p.pod, p.node) for p in plan.placements] == [("default/web-1", "plain")]
    (node,) = load_text(POOL + _node("plain")).nodes
    assert node.ready and node.scheduling_taints == ()


def test_unknown_ready_is_unreachable():
    """Ready=Unknown (kubelet silent) is the node.kubernetes.io/unreachable taint."""
    unknown = """
  conditions:
    - {type: Ready, status: Unknown}
"""
    (node,) = load_text(POOL + _node("lost", status=unknown)).nodes
    assert not node.ready
    assert [str(t) for t in node.scheduling_taints] == ["node.kubernetes.io/unreachable:NoSchedule"]


def _claim_for(node: str) -> str:
    """The dump's NodeClaim of Node ``node`` (Initialized long ago)."""
    return f"""
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: web-{node}
  labels: {{karpenter.sh/nodepool: web}}
spec:
  nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
  requirements: [{{key: karpenter.sh/nodepool, operator: In, values: [web]}}]
status:
  providerID: aws:///us-east-1a/i-{node}
  nodeName: {node}
"""


def test_a_node_not_yet_initialized_is_not_counted_by_the_budget():
    """BuildDisruptionBudgetMapping skips managed nodes that are not initialized: a NotReady
    node whose NodeClaim is in the dump and which lacks karpenter.sh/initialized uses none of
    the budget, so another node may go; with the label it is counted."""
    starting = _node("new", status=NOT_READY) + _claim_for("new")
    dry = DryRun(
        load_text(POOL + starting + _node("a") + _node("b")), Catalog.load(), REGION, at=AT
    )
    assert pool_counts(dry.state, "web") == (2, 0)
    plan = dry.plan()
    assert len(plan.commands) >= 1
    assert {u.node: u.reason for u in plan.unconsolidatable}["new"] == "not initialized yet"
    counted = _node("new", extra_meta=INITIALIZED, status=NOT_READY) + _claim_for("new")
    dry = DryRun(load_text(POOL + counted + _node("a") + _node("b")), Catalog.load(), REGION, at=AT)
    assert pool_counts(dry.state, "web") == (3, 1)
    assert dry.plan().commands == []


def test_the_start_state_keeps_readiness_conditions_and_cordons():
    """The state simulate and disrupt start from: NotReady, its condition and its taint."""
    text = _node("bad", status=NOT_READY) + _node("cordoned", spec="  unschedulable: true")
    state = DryRun(load_text(POOL + text), Catalog.load(), REGION, at=AT).state
    bad, cordoned = state.nodes["bad"], state.nodes["cordoned"]
    assert not bad.ready and bad.conditions["Ready"].status == "False"
    assert [str(t) for t in bad.taints] == ["node.kubernetes.io/not-ready:NoSchedule"]
    assert cordoned.ready
    assert [str(t) for t in cordoned.taints] == ["node.kubernetes.io/unschedulable:NoSchedule"]


def test_a_bad_last_pod_event_time_names_the_file_object_and_field():
    claim = _claim_for("a").replace("  nodeName: a\n", "  nodeName: a\n  lastPodEventTime: soon\n")
    with pytest.raises(InputError) as err:
        load_text(POOL + claim, "dump.yaml")
    assert str(err.value).startswith("dump.yaml: NodeClaim/web-a: field status.lastPodEventTime:")


@pytest.mark.parametrize(
    "value", ["12345", "1.5", "true", '""', "'2025-01-07'", "'2025-01-07 21:00:00Z'"]
)
def test_a_last_pod_event_time_that_is_not_rfc3339_is_refused(value):
    # metav1.Time reads only an RFC 3339 string; the integer 12345 used to be read as Unix time.
    claim = _claim_for("a").replace(
        "  nodeName: a\n", f"  nodeName: a\n  lastPodEventTime: {value}\n"
    )
    with pytest.raises(InputError) as err:
        load_text(POOL + claim, "dump.yaml")
    assert str(err.value).startswith("dump.yaml: NodeClaim/web-a: field status.lastPodEventTime:")
    assert "RFC 3339" in str(err.value)


@pytest.mark.parametrize(
    "value", ["soon", '""', '"\\x07"', "0", "'2025-13-01T00:00:00Z'", "'2025-01-07T21:00:00+25:00'"]
)
def test_a_deletion_timestamp_that_is_not_rfc3339_is_refused(value):
    # A garbage deletionTimestamp used to mark the Node as being deleted.
    node = _node("n1", extra_meta=f"  deletionTimestamp: {value}")
    with pytest.raises(InputError) as err:
        load_text(POOL + node, "dump.yaml")
    assert str(err.value).startswith("dump.yaml: Node/n1: field metadata.deletionTimestamp:")


def test_a_real_deletion_timestamp_marks_the_node_deleting():
    node = _node("n1", extra_meta="  deletionTimestamp: '2025-01-07T20:59:00.5+01:00'")
    (n,) = load_text(POOL + node).nodes
    assert n.deleting


@pytest.mark.parametrize(("first", "second"), [("False", "True"), ("True", "False")])
def test_a_duplicated_ready_condition_reads_as_its_first_entry(first, second):
    # k8s.io/kubernetes pkg/api/v1/node GetNodeCondition returns the first match; the last
    # used to win.
    status = f"""
  conditions:
    - {{type: Ready, status: "{first}"}}
    - {{type: Ready, status: "{second}"}}
"""
    (node,) = load_text(POOL + _node("dup", status=status)).nodes
    assert node.ready is (first == "True")
    plan = _plan(_node("dup", status=status) + PENDING)
    assert [p.node for p in plan.placements] == (["dup"] if first == "True" else [])


def test_a_duplicated_nodeclaim_condition_reads_as_its_first_entry():
    conditions = """  conditions:
    - {type: Initialized, status: "False"}
    - {type: Initialized, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}
"""
    (c,) = load_text(POOL + _claim_for("a") + conditions).nodeclaims
    assert c.initialized_at is None
