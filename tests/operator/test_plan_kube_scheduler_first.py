"""kube-scheduler tries a new pod on the existing nodes before Karpenter sees it
(``operator/plan.py`` ``_bind_fresh``).

The regression (generated differential case gen-909-8, seed 909, 2026-12-06): four new pods
of 250m and 3Gi that prefer zone c, and an existing node in zone a with room for two.
kube-scheduler weighs a preferred node affinity as a score, so it bound two pods to the
existing node as soon as they were created, and Karpenter, which provisions only for the pods
kube-scheduler marked unschedulable, launched one node in zone c for the other two. Joiner
took all four as Karpenter's demand and planned a larger node in zone c for them."""

from __future__ import annotations

from joiner.api.plan_output import Plan
from tests.manifests import daemonset, deployment, existing_node, on_demand_plan


def _running(name: str, node: str, cpu: str, memory: str) -> str:
    """A running Pod ``default/<name>`` (label ``app: <name>``) on ``node``."""
    return f"""\
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}
spec:
  nodeName: {node}
  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}}}]
status: {{phase: Running}}
"""


_NODE = existing_node("{cpu: 1900m, memory: 7Gi, pods: '29'}") + _running(
    "db", "old", "500m", "512Mi"
)

_PREFERS_C = """\
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            preference:
              matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}
      containers: [{name: c, resources: {requests: {cpu: 250m, memory: 3Gi}}}]
"""


def _pending_pod(i: int, status: str) -> str:
    spec = "\n".join(line[4:] for line in _PREFERS_C.splitlines())
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, namespace: default, labels: {{app: web}}}}
spec:
{spec}
{status}"""


def _plan(workload: str) -> Plan:
    return on_demand_plan(_NODE + workload)


def test_new_pods_are_bound_to_an_existing_node_before_karpenter_provisions() -> None:
    plan = _plan("---\n" + deployment(_PREFERS_C, replicas=4))
    on_old = [p.pod for p in plan.placements if p.node == "old"]
    assert len(on_old) == 2, plan.placements
    assert {p.boundBy for p in plan.placements} == {"kube-scheduler"}
    assert [c.launch.zone for c in plan.nodeClaims] == ["us-east-1c"]
    assert sorted(len(c.pods) for c in plan.nodeClaims) == [2]
    assert plan.unschedulable == []


def test_pods_kube_scheduler_already_refused_are_karpenters_demand() -> None:
    """Pending pods of a dump that kube-scheduler found unschedulable: Karpenter plans for
    all of them, trying the preference first (a new node in zone c)."""
    refused = (
        "status:\n  phase: Pending\n  conditions:\n"
        "  - {type: PodScheduled, status: 'False', reason: Unschedulable}\n"
    )
    plan = _plan("".join(_pending_pod(i, refused) for i in range(4)))
    assert plan.placements == []
    assert {c.launch.zone for c in plan.nodeClaims} == {"us-east-1c"}
    assert sum(len(c.pods) for c in plan.nodeClaims) == 4
    # the same Pods written without a status are new: kube-scheduler binds two first
    fresh = _plan("".join(_pending_pod(i, "") for i in range(4)))
    assert sorted(p.pod for p in fresh.placements) == ["default/web-0", "default/web-1"]
    assert sum(len(c.pods) for c in fresh.nodeClaims) == 2


def test_kube_scheduler_binds_a_new_pod_to_the_least_allocated_node() -> None:
    """Regression (new user): the kube-scheduler pass saw no node's allocatable, so every
    LeastAllocated score was 0 and pods went to the nodes in name order. ``old`` has 1400m
    of 1900m free, ``roomy`` 3900m of 3900m: kube-scheduler's NodeResourcesFit
    LeastAllocated prefers ``roomy`` (Kubernetes
    pkg/scheduler/framework/plugins/noderesources/least_allocated.go)."""
    roomy = "---\n" + existing_node("{cpu: 3900m, memory: 15Gi, pods: '58'}", name="roomy")
    plain = "      containers: [{name: c, resources: {requests: {cpu: 250m, memory: 256Mi}}}]\n"
    plan = _plan(roomy + "---\n" + deployment(plain, replicas=1))
    assert [p.node for p in plan.placements] == ["roomy"], plan.placements
    assert plan.nodeClaims == []


_PREEMPTION = """\
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: default}
spec:
  priorityClassName: high
  containers: [{name: c, resources: {requests: {cpu: 1500m, memory: 512Mi}}}]
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable}]
"""


def test_a_preemption_sees_the_pods_kube_scheduler_bound_first() -> None:
    """A new replica (500m) is bound to the existing node beside db (500m of 1900m); a
    pod of priority 1000 that kube-scheduler refused (1500m) then fits only by preempting
    both. The preemption saw the dump's pods alone: it deleted db only and left the replica
    there, 2000m on a 1900m node. The replica, deleted, is replaced and provisioned for."""
    spec = "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]\n"
    plan = _plan("---\n" + deployment(spec) + _PREEMPTION)
    (preemption,) = plan.preemptions
    assert (preemption.pod, preemption.node) == ("default/high", "old")
    assert sorted(preemption.victims) == ["default/db", "default/web-1"]
    assert preemption.notRecreated == ["default/db"]
    assert plan.placements == []
    assert [c.pods for c in plan.nodeClaims] == [["default/web-1"]]


def test_a_new_pod_of_higher_priority_preempts_before_new_pods_of_lower_bind() -> None:
    """The same pod of priority 1000 written as new (no status): kube-scheduler's queue
    tries it before the new replica, so it preempts db alone and the replica, finding no
    room beside it, is Karpenter's demand; it is no victim of the preemption."""
    spec = "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]\n"
    fresh = _PREEMPTION.split("status:")[0]
    plan = _plan("---\n" + deployment(spec) + fresh)
    assert [(p.pod, p.node, p.victims) for p in plan.preemptions] == [
        ("default/high", "old", ["default/db"])
    ]
    assert plan.placements == []
    assert [c.pods for c in plan.nodeClaims] == [["default/web-1"]]


def _pinned(name: str, node: str, cpu: str, status: str = "") -> str:
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{
    nodeSelectorTerms: [matchFields: [{{key: metadata.name, operator: In, values: [{node}]}}]]
  }}}}}}
  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}}}]
{status}"""


def test_a_new_pod_pinned_by_name_is_bound_to_its_node_when_it_fits() -> None:
    """kube-scheduler binds a new pod whose matchFields name an existing node there; it was
    listed unschedulable ('Karpenter does not provision for it') however much room the node
    had. One that does not fit, or names no node, is still unschedulable, and so is one
    kube-scheduler already refused."""
    refused = "status:\n  conditions: [{type: PodScheduled, status: 'False'}]\n"
    plan = _plan(
        _pinned("fits", "old", "500m")
        + _pinned("too-big", "old", "1500m")
        + _pinned("no-node", "gone", "100m")
        + _pinned("refused", "old", "100m", refused)
    )
    assert [(p.pod, p.node) for p in plan.placements] == [("default/fits", "old")]
    reasons = {u.pod: u.reason for u in plan.unschedulable}
    assert reasons == {
        "default/too-big": "pinned to a node by name (matchFields) that kube-scheduler's "
        "filters refuse (room, taints, affinity); Karpenter does not provision for it",
        "default/no-node": "pinned to a node by name (matchFields) that is not among the "
        "nodes; Karpenter does not provision for it",
        "default/refused": "pinned to a node by name (matchFields); Karpenter does not "
        "provision for it",
    }
    assert plan.nodeClaims == []


def test_a_pod_karpenter_never_provisions_for_stays_unschedulable_when_displaced() -> None:
    """A new pod pinned to the node by name is bound there, then displaced by a new pod of
    priority 1000 that preempts db: pending again, it was Karpenter's demand and got a
    NodeClaim, though Karpenter never provisions for a pod pinned by name."""
    plan = _plan(_pinned("pinned", "old", "500m") + _PREEMPTION.split("status:")[0])
    assert [(p.pod, p.victims) for p in plan.preemptions] == [("default/high", ["default/db"])]
    assert plan.nodeClaims == [] and plan.placements == []
    assert [(u.pod, u.reason) for u in plan.unschedulable] == [
        (
            "default/pinned",
            "pinned to a node by name (matchFields); Karpenter does not provision for it",
        )
    ]


def test_the_plan_says_who_places_a_pod_on_an_existing_node() -> None:
    """A pod kube-scheduler refused that fits an existing node now (its room came after)
    is placed there by Karpenter's simulation (``boundBy: karpenter``); a new one is bound
    by kube-scheduler first (``boundBy: kube-scheduler``)."""
    refused = (
        "status:\n  phase: Pending\n  conditions:\n"
        "  - {type: PodScheduled, status: 'False', reason: Unschedulable}\n"
    )
    plain = "      containers: [{name: c, resources: {requests: {cpu: 250m, memory: 256Mi}}}]\n"
    spec = "\n".join(line[4:] for line in plain.splitlines())
    pod = f"""---
apiVersion: v1
kind: Pod
metadata: {{name: late, namespace: default, labels: {{app: late}}}}
spec:
{spec}
"""
    by_karpenter = _plan(pod + refused)
    assert [(p.pod, p.boundBy) for p in by_karpenter.placements] == [("default/late", "karpenter")]
    by_kube = _plan(pod)
    assert [(p.pod, p.boundBy) for p in by_kube.placements] == [("default/late", "kube-scheduler")]


#: The pod of priority 1000 as a dump shows it once a preemption nominated it to ``old``
#: (1000m), and a PriorityClass above it.
_NOMINATED = (
    _PREEMPTION.replace("cpu: 1500m", "cpu: 1000m").replace(
        "  phase: Pending\n", "  phase: Pending\n  nominatedNodeName: old\n"
    )
    + """---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: higher}
value: 2000
"""
)


def test_a_pod_nominated_to_a_node_holds_its_room_against_new_pods_of_lower_priority() -> None:
    """A pod of priority 1000 (1000m) waits on the existing node, nominated there by a
    preemption; the node has 1400m left beside db. kube-scheduler filters a new replica
    (500m, priority 0) with the nominated pod added (framework.go
    ``RunFilterPluginsWithNominatedPods``), so it refuses the replica there, which makes
    it Karpenter's demand. Karpenter counts only bound pods on a node (``StateNode``; a
    nominated pod is no provisioning demand, ``IsProvisionable``), so its round places the
    replica on the node and launches nothing. Joiner had kube-scheduler bind it there."""
    spec = "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]\n"
    plan = _plan("---\n" + deployment(spec) + _NOMINATED)
    assert [(n.pod, n.node) for n in plan.nominated] == [("default/high", "old")]
    assert [(p.pod, p.node, p.boundBy) for p in plan.placements] == [
        ("default/web-1", "old", "karpenter")
    ]
    assert plan.nodeClaims == []


def test_a_new_pod_of_higher_priority_than_the_nominated_one_takes_the_room() -> None:
    """The same replica at priority 2000: kube-scheduler adds only the nominated pods of
    higher or equal priority, so it binds the replica to the node."""
    spec = (
        "      priorityClassName: higher\n"
        "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]\n"
    )
    plan = _plan("---\n" + deployment(spec) + _NOMINATED)
    assert [(p.pod, p.node, p.boundBy) for p in plan.placements] == [
        ("default/web-1", "old", "kube-scheduler")
    ]
    assert plan.nodeClaims == []


_AGENT = (
    "---\n"
    + daemonset(
        "      priorityClassName: system-node-critical\n"
        "      containers: [{name: c, resources: {requests: {cpu: 1000m, memory: 64Mi}}}]\n"
    )
    + """\
---
apiVersion: v1
kind: Pod
metadata:
  name: agent-old
  namespace: kube-system
  labels: {app: agent}
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}]
spec:
  priorityClassName: system-node-critical
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {
    nodeSelectorTerms: [matchFields: [{key: metadata.name, operator: In, values: [old]}]]}}}
  containers: [{name: c, resources: {requests: {cpu: 1000m, memory: 64Mi}}}]
status:
  phase: Pending
  nominatedNodeName: old
  conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable}]
"""
)


def test_a_nominated_daemonset_pod_is_held_once() -> None:
    """Regression: the DaemonSet's pod for ``old`` (1000m), nominated there, was held twice,
    as a DaemonSet pod still to come and as a nominated pod, so a new replica of 300m
    (400m left beside db and the agent) was refused by kube-scheduler and placed by
    Karpenter's round instead."""
    spec = "      containers: [{name: c, resources: {requests: {cpu: 300m, memory: 512Mi}}}]\n"
    plan = _plan("---\n" + deployment(spec) + _AGENT)
    assert [(n.pod, n.node) for n in plan.nominated] == [("kube-system/agent-old", "old")]
    assert [(p.pod, p.node, p.boundBy) for p in plan.placements] == [
        ("default/web-1", "old", "kube-scheduler")
    ]
    # 500m does not fit beside db and the agent, counted once: Karpenter launches for it
    plan = _plan("---\n" + deployment(spec.replace("300m", "500m")) + _AGENT)
    assert plan.placements == [] and [c.pods for c in plan.nodeClaims] == [["default/web-1"]]


def test_a_nominated_pods_room_is_held_by_the_filters_not_the_score() -> None:
    """Regression: ``old`` (3900m, 15Gi) holds a nominated pod of 3000m and 12Gi; a new
    replica of 200m and 256Mi still passes the filters there (900m and 3Gi left).
    kube-scheduler scores the nodes without their nominated pods (schedule_one.go
    ``prioritizeNodes``), so ``old`` (about 97% free after the replica) beats ``roomy``
    (1900m, 7Gi, 600m and 2Gi in use: about 63%). Joiner scored ``old`` with the held room
    taken (about 18%) and bound the replica to ``roomy``."""
    old = existing_node("{cpu: 3900m, memory: 15Gi, pods: '58'}")
    roomy = "---\n" + existing_node("{cpu: 1900m, memory: 7Gi, pods: '29'}", name="roomy")
    busy = _running("busy", "roomy", "600m", "2Gi")
    nominated = _NOMINATED.replace("cpu: 1000m, memory: 512Mi", "cpu: 3000m, memory: 12Gi")
    spec = "      containers: [{name: c, resources: {requests: {cpu: 200m, memory: 256Mi}}}]\n"
    plan = on_demand_plan(old + roomy + busy + nominated + "---\n" + deployment(spec))
    assert [(n.pod, n.node) for n in plan.nominated] == [("default/high", "old")]
    assert [(p.pod, p.node, p.boundBy) for p in plan.placements] == [
        ("default/web-1", "old", "kube-scheduler")
    ]
    # a replica of 1000m does not pass the filters on old beside the nominated pod: roomy
    plan = on_demand_plan(
        old + roomy + busy + nominated + "---\n" + deployment(spec.replace("200m", "1000m"))
    )
    assert [(p.pod, p.node) for p in plan.placements] == [("default/web-1", "roomy")]


def test_a_pod_nominated_to_a_node_not_in_the_dump_is_named() -> None:
    """A dump that left out the node a pod is nominated to: the plan listed the pod as
    nominated there and bound the new replica to ``old`` with no word that the nominated
    pod's room was held nowhere."""
    spec = "      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]\n"
    ghost = _NOMINATED.replace("nominatedNodeName: old", "nominatedNodeName: ghost")
    plan = _plan("---\n" + deployment(spec) + ghost)
    assert [(n.pod, n.node) for n in plan.nominated] == [("default/high", "ghost")]
    assert [(p.pod, p.node, p.boundBy) for p in plan.placements] == [
        ("default/web-1", "old", "kube-scheduler")
    ]
    assert [w for w in plan.warnings if "nominated" in w] == [
        "1 pod nominated to nodes not in the manifests: the room they wait for is not held, "
        "and Karpenter does not provision for them while they are nominated: "
        "default/high (node ghost)"
    ]
    # nominated to a node in the dump: no such warning
    plan = _plan("---\n" + deployment(spec) + _NOMINATED)
    assert [w for w in plan.warnings if "nominated" in w] == []
