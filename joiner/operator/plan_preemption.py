"""kube-scheduler's preemption in ``joiner plan``: which pending pods take an existing node by
deleting lower-priority pods there, before Karpenter provisions for what is left.

kube-scheduler's ``DefaultPreemption`` PostFilter plugin runs for a pod that fits no node:
it deletes lower-priority pods on one node so the pod fits, and nominates the pod there
(``status.nominatedNodeName``). Karpenter does not provision for a nominated pod
(sigs.k8s.io/karpenter ``pkg/utils/pod/scheduling.go`` ``IsProvisionable``,
``IsPreempting``); the victims' controllers create replacements, which are pending pods
Karpenter provisions for.

The rules are the simulation's (``sim.preemption``: ``eligible``, ``SelectVictimsOnNode``,
``pickOneNodeForPreemption``, ``prepareCandidate``), run on a cluster state built from the
plan's target nodes and the pods on them. Pods are tried in kube-scheduler's queue order
(``PrioritySort``: higher priority first, then the order they were read). A victim owned
by a controller is replaced by a pending pod of the same name and template; a victim
without one (a bare Pod) is deleted and nothing replaces it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from joiner.api import quantity
from joiner.api.manifests import ManifestSet
from joiner.api.objects import ClusterNode, PodTemplate, StandalonePod
from joiner.api.plan_output import Preemption
from joiner.api.requirements import Requirements
from joiner.sim import preemption
from joiner.sim.running import static_node
from joiner.state.cluster import ClusterState, Pod


@dataclass
class PreemptionRound:
    """What the preemption pass decided.

    Attributes:
        preemptions: each preemptor with its node and victims, in queue order.
        placed: preemptor uid -> (node, template): it runs there once its victims are gone.
        victims: victim key -> (node, the dump's Pod).
        released: pods the dump showed nominated whose nomination a preemption cleared
            (``prepareCandidate``): pending again, as (key, template).
        displaced: pod key -> (node, Pod) of the new pods the plan's kube-scheduler pass
            bound where a new pod of higher priority then preempted: kube-scheduler's queue
            (``PrioritySort``) tries that one first, so they were never bound there and
            are pending again, not victims.
    """

    preemptions: list[Preemption] = field(default_factory=list)
    placed: dict[str, tuple[str, PodTemplate]] = field(default_factory=dict)
    victims: dict[str, tuple[str, StandalonePod]] = field(default_factory=dict)
    released: list[tuple[str, PodTemplate]] = field(default_factory=list)
    displaced: dict[str, tuple[str, StandalonePod]] = field(default_factory=dict)


def _start_s(p: StandalonePod) -> float:
    """``status.startTime`` in epoch seconds; unknown: the latest possible (kube-scheduler
    ``util.GetPodStartTime`` takes the current time for a pod without one)."""
    return p.started_at.timestamp() if p.started_at is not None else math.inf


def _cluster(
    pods: Sequence[StandalonePod],
    m: ManifestSet,
    targets: Mapping[str, ClusterNode],
    room: Mapping[str, quantity.Resources],
    volume_terms: Mapping[PodTemplate, tuple[Requirements, ...]],
) -> ClusterState:
    """The target nodes (``room``: allocatable less the DaemonSet pods still to come) with
    the live ``pods`` bound to them and those the dump shows nominated to them."""
    state = ClusterState()
    state.pdbs = list(m.pdbs)
    state.volume_terms = dict(volume_terms)
    for name in sorted(targets):
        state.nodes[name] = static_node(targets[name], room[name])
    for order, p in enumerate(pods):
        if p.terminal:
            continue
        bound = p.node_name in targets
        nominated = p.preempting and p.nominated_node_name in targets
        if not (bound or nominated):
            continue
        pod = Pod(
            uid=p.key,
            namespace=p.namespace,
            name=p.name,
            template=p.template,
            owner=p.owner or f"Pod/{p.key}",
            created_at_s=0.0,
            order=order,
            daemon=(p.owner or "").startswith("DaemonSet/"),
        )
        if bound:
            pod.node_name = p.node_name
            pod.bound_at_s = _start_s(p)
            if p.deleting:
                pod.terminating_until_s = 0.0
        else:
            pod.nominated_node_name = p.nominated_node_name
        state.pods[pod.uid] = pod
    return state


def _add_pending(
    state: ClusterState, pending: Sequence[tuple[str, PodTemplate]], first_order: int
) -> list[Pod]:
    """The pods to try, added pending in kube-scheduler's queue order."""
    pods = []
    for i, (uid, template) in enumerate(pending):
        namespace, _, name = uid.partition("/")
        pod = Pod(uid, namespace, name, template, f"Pod/{uid}", 0.0, first_order + i)
        state.pods[uid] = pod
        pods.append(pod)
    pods.sort(key=lambda p: (-p.template.priority_value, p.order))
    return pods


def preempt(
    m: ManifestSet,
    targets: Mapping[str, ClusterNode],
    room: Mapping[str, quantity.Resources],
    pending: Sequence[tuple[str, PodTemplate]],
    volume_terms: Mapping[PodTemplate, tuple[Requirements, ...]] | None = None,
    bound: Sequence[StandalonePod] = (),
    fresh: Collection[str] = (),
) -> PreemptionRound:
    """Run kube-scheduler's preemption for the ``pending`` pods (uid ``namespace/name``,
    template) that fit no existing node, over the ``targets`` nodes, each with ``room``
    (allocatable less the DaemonSet pods to come). See the module docstring.

    ``volume_terms``: each pod template's volume node requirements, as the plan solved.
    ``bound``: pods the plan's kube-scheduler passes bound to target nodes (``node_name``
    set) before this one; they run there like the dump's, and may be victims, but for a
    preemptor in ``fresh`` (pods kube-scheduler has not tried yet) those of them it had not
    tried either are displaced instead (``PreemptionRound.displaced``).
    """
    pods = (*m.pods, *bound)
    state = _cluster(pods, m, targets, room, volume_terms or {})
    lowest = min(
        (p.template.priority_value for p in state.live_pods() if p.node_name and not p.daemon),
        default=None,
    )
    out = PreemptionRound()
    if lowest is None:
        return out
    dump_nominated = {p.uid: p.nominated_node_name for p in state.pending_pods()}
    by_key = {p.key: p for p in pods}
    new_bound = {p.key for p in bound if not p.scheduler_tried}
    failed: set[int] = set()  # templates that found no candidate: identical pods find none
    verdicts: preemption.Verdicts = {}  # the nodes and templates stay as they are meanwhile
    for pod in _add_pending(state, pending, len(pods)):
        if pod.template.priority_value <= lowest or id(pod.template) in failed:
            continue
        candidate = preemption.find(state, pod, verdicts)
        if candidate is None:
            failed.add(id(pod.template))
            continue
        preemption.nominate(state, pod, candidate)
        unwound = new_bound if pod.uid in fresh else set()
        victims = [v.uid for v in candidate.victims if v.uid not in unwound]
        for victim in candidate.victims:
            victim.deleted_at_s = 0.0
            taken = out.displaced if victim.uid in unwound else out.victims
            taken[victim.uid] = (candidate.node, by_key[victim.uid])
        out.placed[pod.uid] = (candidate.node, pod.template)
        out.preemptions.append(
            Preemption(
                pod=pod.uid,
                node=candidate.node,
                victims=victims,
                notRecreated=[v for v in victims if by_key[v].owner is None],
            )
        )
    out.released = [
        (uid, state.pods[uid].template)
        for uid in dump_nominated
        if state.pods[uid].nominated_node_name is None
    ]
    return out
