"""``joiner plan`` and ``joiner disrupt`` with kube-scheduler's preemption: a pending pod that
fits an existing node only by deleting lower-priority pods takes that node, the victims'
replacements get the new capacity, and pods already nominated are not provisioned for."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from joiner.cli.main import app

REPO = Path(__file__).resolve().parents[2]
DUMP = REPO / "tests" / "fixtures" / "preemption" / "preemption-dump.yaml"
PLAN_SCHEMA = json.loads((REPO / "docs" / "schemas" / "plan.schema.json").read_text())
DISRUPT_SCHEMA = json.loads((REPO / "docs" / "schemas" / "disruption.schema.json").read_text())
PLACEHOLDER = "buffer/overprovisioning-6d5f7b9c8-x2v4q"
WEB = "shop/web-5c8d9f7b6-k7p2m"
runner = CliRunner()

#: The pending web pod's spec line, after which a test adds fields.
_WEB_SPEC = (
    "        - {apiVersion: apps/v1, kind: ReplicaSet, name: web-5c8d9f7b6, controller: true, "
    "uid: b}\n    spec:\n"
)


def _text(*extra: str, web_spec: str = "", web_status: str = "") -> str:
    """The fixture dump, with ``web_spec`` lines added to the pending web pod's spec (and
    its Deployment's template), ``web_status`` to its status, and ``extra`` documents."""
    text = DUMP.read_text()
    if web_spec:
        text = text.replace(_WEB_SPEC, _WEB_SPEC + web_spec)
        text = text.replace(
            "        spec:\n          containers:\n            - name: web\n",
            "        spec:\n"
            + "".join("    " + line + "\n" for line in web_spec.splitlines())
            + "          containers:\n            - name: web\n",
        )
    if web_status:
        text = text.replace("      phase: Pending\n", "      phase: Pending\n" + web_status)
    return "\n---\n".join([text, *extra])


def _plan(tmp_path: Path, text: str, *args: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return runner.invoke(app, ["plan", "-f", str(path), *args])


def _plan_json(tmp_path: Path, text: str) -> dict:
    result = _plan(tmp_path, text, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, PLAN_SCHEMA)
    return doc


def _claimed(doc: dict) -> set[str]:
    return {p for c in doc["nodeClaims"] for p in c["pods"]}


PRIORITY_CLASS = """apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {name}}}
value: {value}
preemptionPolicy: {policy}
"""


def test_preemptor_takes_the_node_and_the_placeholder_gets_the_new_nodeclaim():
    """The acceptance dump: the priority-0 pod fits the full node only without the
    priority -10 placeholder, so it preempts it; the placeholder's replacement gets the
    one new NodeClaim, and the human output says who preempts whom where."""
    result = runner.invoke(app, ["plan", "-f", str(DUMP), "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, PLAN_SCHEMA)
    assert doc["preemptions"] == [
        {"pod": WEB, "node": "ip-10-0-0-1", "victims": [PLACEHOLDER], "notRecreated": []}
    ]
    (claim,) = doc["nodeClaims"]
    assert claim["pods"] == [PLACEHOLDER]
    assert doc["placements"] == [] and doc["unschedulable"] == [] and doc["nominated"] == []
    human = runner.invoke(app, ["plan", "-f", str(DUMP)])
    assert human.exit_code == 0, human.output
    assert f"preemption: {WEB} preempts {PLACEHOLDER} on node ip-10-0-0-1" in " ".join(
        human.stdout.split()
    )


def test_nominated_pod_is_not_provisioned_for(tmp_path):
    """A pending pod with status.nominatedNodeName waits for its victims (Karpenter
    IsProvisionable): no NodeClaim and no preemption for it; it is listed and counted."""
    text = _text(web_status="      nominatedNodeName: ip-10-0-0-1\n")
    doc = _plan_json(tmp_path, text)
    assert doc["nominated"] == [{"pod": WEB, "node": "ip-10-0-0-1"}]
    assert doc["nodeClaims"] == [] and doc["preemptions"] == [] and doc["placements"] == []
    human = _plan(tmp_path, text)
    assert "1 pending pod already nominated to a node by preemption" in " ".join(
        human.stdout.split()
    )


def _disrupt(tmp_path: Path, text: str, *args: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return runner.invoke(app, ["disrupt", "-f", str(path), "--at", "2026-12-01T10:00:00Z", *args])


def test_disrupt_lists_a_nominated_pod_and_does_not_provision_for_it(tmp_path):
    """Consolidation's simulation takes Karpenter's pending pods (GetPendingPods, which
    keeps provisionable ones only): the pending web pod makes the node's replacement too
    dear, but once nominated it is not demand, and a cheaper node for the placeholder
    alone replaces it (Karpenter reads nothing else from a nomination)."""
    pending = json.loads(_disrupt(tmp_path, _text(), "-o", "json").stdout)
    assert pending["commands"] == [] and pending["nominated"] == []
    text = _text(web_status="      nominatedNodeName: ip-10-0-0-1\n")
    result = _disrupt(tmp_path, text, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, DISRUPT_SCHEMA)
    assert doc["nominated"] == [{"pod": WEB, "node": "ip-10-0-0-1"}]
    (command,) = doc["commands"]
    assert command["candidates"] == ["ip-10-0-0-1"] and len(command["replacements"]) == 1
    human = _disrupt(tmp_path, text)
    assert "1 pending pod already nominated to a node by preemption" in " ".join(
        human.stdout.split()
    )


def test_preemption_policy_never_does_not_preempt(tmp_path):
    """A pod of a PriorityClass with preemptionPolicy Never, however high its priority,
    waits for room: it gets a new NodeClaim and the placeholder stays."""
    cls = PRIORITY_CLASS.format(name="batch-high", value=1000, policy="Never")
    doc = _plan_json(tmp_path, _text(cls, web_spec="      priorityClassName: batch-high\n"))
    assert doc["preemptions"] == []
    assert _claimed(doc) == {WEB}


def test_equal_priority_never_preempts(tmp_path):
    """Only pods of strictly lower priority are victims: a pending pod at the placeholder's
    own priority (-10) does not preempt it."""
    cls = PRIORITY_CLASS.format(name="low", value=-10, policy="PreemptLowerPriority")
    doc = _plan_json(tmp_path, _text(cls, web_spec="      priorityClassName: low\n"))
    assert doc["preemptions"] == []
    assert _claimed(doc) == {WEB}


SECOND_NODE_AND_PLACEHOLDER = """apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-2
  labels:
    karpenter.sh/nodepool: general
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.xlarge
    topology.kubernetes.io/zone: us-east-1b
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: ip-10-0-0-2
spec:
  providerID: aws:///us-east-1b/i-0123456789abcdef1
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
---
apiVersion: v1
kind: Pod
metadata:
  name: spare
  namespace: buffer
  labels: {app: spare}
  ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: spare-7c9d, controller: true, uid: c}
spec:
  nodeName: ip-10-0-0-2
  priorityClassName: overprovisioning
  priority: -10
  preemptionPolicy: Never
  containers:
    - name: pause
      resources: {requests: {cpu: "3", memory: 8Gi}}
status:
  phase: Running
  startTime: "2026-11-30T08:00:00Z"
"""

#: Guards the placeholder on ip-10-0-0-1 (the node the tie between the two would pick).
GUARD = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guard, namespace: buffer}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: overprovisioning}}
"""


def test_without_a_budget_the_tie_goes_to_the_first_node(tmp_path):
    """Two equal candidates: kube-scheduler's pickOneNodeForPreemption ties (Joiner breaks
    the tie by node name)."""
    doc = _plan_json(tmp_path, _text(SECOND_NODE_AND_PLACEHOLDER))
    assert [(p["node"], p["victims"]) for p in doc["preemptions"]] == [
        ("ip-10-0-0-1", [PLACEHOLDER])
    ]


def test_victims_that_violate_a_budget_are_avoided(tmp_path):
    """DefaultPreemption prefers the node whose victims violate no PodDisruptionBudget
    (filterPodsWithPDBViolation, then the fewest violations first): the guarded
    placeholder stays, the other is preempted."""
    doc = _plan_json(tmp_path, _text(SECOND_NODE_AND_PLACEHOLDER, GUARD))
    assert [(p["node"], p["victims"]) for p in doc["preemptions"]] == [
        ("ip-10-0-0-2", ["buffer/spare"])
    ]
    assert _claimed(doc) == {"buffer/spare"}


def test_a_budget_does_not_stop_the_only_candidate(tmp_path):
    """A PodDisruptionBudget is a preference in preemption, not a block: with one
    candidate node, its guarded placeholder is preempted all the same."""
    doc = _plan_json(tmp_path, _text(GUARD))
    assert [(p["node"], p["victims"]) for p in doc["preemptions"]] == [
        ("ip-10-0-0-1", [PLACEHOLDER])
    ]


def test_a_victim_without_a_controller_is_not_recreated(tmp_path):
    """A bare Pod preempted is deleted and nothing replaces it: no NodeClaim for it."""
    text = _text().replace(
        "      ownerReferences:\n"
        "        - {apiVersion: apps/v1, kind: ReplicaSet, name: overprovisioning-6d5f7b9c8, "
        "controller: true, uid: a}\n",
        "",
    )
    # The Deployment would recreate it: leave only the bare Pod.
    start = text.index("  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: over")
    end = text.index("  - apiVersion: v1\n    kind: Pod\n    metadata:\n      name: overprov")
    doc = _plan_json(tmp_path, text[:start] + text[end:])
    (pr,) = doc["preemptions"]
    assert pr["victims"] == pr["notRecreated"] == [PLACEHOLDER]
    assert doc["nodeClaims"] == []


URGENT = """apiVersion: v1
kind: Pod
metadata:
  name: urgent
  namespace: shop
  labels: {app: urgent}
  ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: urgent-5d4c, controller: true, uid: d}
spec:
  priorityClassName: urgent
  containers:
    - name: urgent
      resources: {requests: {cpu: "2", memory: 4Gi}}
status:
  phase: Pending
"""


def test_preempting_clears_lower_priority_nominations_on_that_node(tmp_path):
    """prepareCandidate clears the nomination of lower-priority pods nominated to the
    chosen node: the web pod, nominated there, is pending demand again."""
    cls = PRIORITY_CLASS.format(name="urgent", value=1000, policy="PreemptLowerPriority")
    text = _text(cls, URGENT, web_status="      nominatedNodeName: ip-10-0-0-1\n")
    doc = _plan_json(tmp_path, text)
    assert [(p["pod"], p["node"], p["victims"]) for p in doc["preemptions"]] == [
        ("shop/urgent", "ip-10-0-0-1", [PLACEHOLDER])
    ]
    assert doc["nominated"] == []
    assert _claimed(doc) == {PLACEHOLDER, WEB}


def test_a_cordoned_node_is_not_preempted_onto(tmp_path):
    """kube-scheduler's filters run before preemption: a cordoned node (its
    node.kubernetes.io/unschedulable taint) is no candidate, so the pending pod gets a new
    NodeClaim and the placeholder keeps its node (the preemption dry run once took the
    Node's own taints, not the ones its cordon implies)."""
    text = DUMP.read_text().replace(
        "      providerID: aws:///us-east-1a/i-0123456789abcdef0\n",
        "      providerID: aws:///us-east-1a/i-0123456789abcdef0\n      unschedulable: true\n",
    )
    assert "unschedulable: true" in text
    doc = _plan_json(tmp_path, text)
    assert doc["preemptions"] == []
    assert _claimed(doc) == {WEB}
