"""Run cases on the live stack (kube-scheduler + Karpenter) and through Joiner; compare.

Written equivalence (docs/fidelity.md):

* provisioning: the same number of new NodeClaims per NodePool; the same multiset of
  (NodePool, instance type, capacity type); the same multiset of zones (for a case with
  ``zone_ties``, the same number of NodeClaims per zone, whichever zones, or Joiner's plan
  under another order of the tied zones equal zone for zone, ``tie_order_agreement``; or
  each of Karpenter's NodeClaims in a zone Joiner's launch could have taken at the same
  price, ``launch_ties_match``); the
  same pods left pending (Karpenter could not schedule them / Joiner reports them
  unschedulable), pods of the same shape (all but the name) being interchangeable.
* disruption: the same set of nodes removed; the same multiset of replacement (instance
  type, capacity type); the same reasons (Empty, Underutilized, Drifted).

A provisioning case that disagrees may be a kube-scheduler binding race rather than a rule
Joiner misses (``Trace``, ``race``, ``first_decision``). Karpenter nominates each pod to the
NodeClaim it planned for it (a Nominated event, "Pod should schedule on: nodeclaim/NAME"),
but kube-scheduler binds pods by its own rules as the nodes register. A **race** is a pod
displaced from the NodeClaim it was nominated to while that NodeClaim launched (has a
node): bound to another node, or left pending while that node holds a batch pod Karpenter
did not plan there (nominated elsewhere, or named by its "could not schedule pod" line). A
displaced pod is provisioned again in a later round (or stays pending under a limit), so
Karpenter ends with more NodeClaims, or other pending pods, than it planned. When the case
disagrees and shows a race, Joiner is compared with Karpenter's **first decision**: the
case's NodeClaims created in rounds before the first one that provisioned a displaced pod
again (a NodeClaim of a later round than the case's first holding only displaced pods,
``_provisioned_again``), and as pending the batch pods that decision left out
(``first_decision``). If that comparison agrees, the case "agrees with Karpenter's plan;
kube-scheduler race", a verdict counted apart from plain agreement; otherwise it stays a
disagreement. Karpenter's Nominated events are deduplicated per pod for 2 minutes and
rate-limited (``NOMINATED``), so a pod whose event was lost cannot show a race that way. It
can still show one by time (``_seen_first``): a pod kube-scheduler had found unschedulable
(its first FailedScheduling event) before the case's first round listed the pending pods,
which that round did not name as a pod it could not schedule, was placed by that round; if
it ends on the node of a NodeClaim of a later round, with no Nominated event, that NodeClaim
provisioned it again. A NodeClaim of a later round that launched and ended with no batch
pod bound or nominated to it (``emptied``) shows a race too: the pod it was made for found
room elsewhere, which in a batch that deletes nothing only kube-scheduler's bindings open.
Without such evidence the case stays a disagreement.

"Stable" is: no NodeClaim created, deleted or changed and no pod bound or deleted for
``QUIET_S`` seconds (``DISRUPT_QUIET_S`` after a disruption change, which covers Karpenter's
10 s poll and 15 s validation).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import durationpy
import httpx2 as httpx
import networkx as nx
import render
from cases import Case, Obj
from kubestack import KWOK_NODE_ANNOTATION
from lightkube import Client, KubeConfig
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Event, Namespace, Node, Pod
from lightkube.types import PatchType

from joiner.api import featuregates
from joiner.api.featuregates import FeatureGates
from joiner.api.manifests import load_documents
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.kwok import load_instance_types as load_kwok_types
from joiner.cloudprovider.types import InstanceType
from joiner.operator.disrupt import build_disruption_plan
from joiner.operator.plan import build_plan
from joiner.scheduling.topology import Summary

NodeClaim = create_global_resource("karpenter.sh", "v1", "NodeClaim", "nodeclaims")
NodePool = create_global_resource("karpenter.sh", "v1", "NodePool", "nodepools")
NodeOverlay = create_global_resource("karpenter.sh", "v1alpha1", "NodeOverlay", "nodeoverlays")
KWOKNodeClass = create_global_resource(
    "karpenter.kwok.sh", "v1alpha1", "KWOKNodeClass", "kwoknodeclasses"
)
QUIET_S = 20.0
DISRUPT_QUIET_S = 40.0
TIMEOUT_S = 240.0
REGION = "us-east-1"
ZONE = "topology.kubernetes.io/zone"
#: the kwok provider's zones (karpenter kwok ``cloudprovider/kwok`` instance types)
_ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
POOL = "karpenter.sh/nodepool"
#: the holder that takes a silenced node's Lease over, and for how long (seconds)
STOPPED_HOLDER = "fidelity-harness"
NODE_LEASES = "kube-node-lease"
#: the stack's kwok acts only on events of Nodes with ``KWOK_NODE_ANNOTATION`` (its
#: ``--manage-nodes-with-annotation-selector``), but keeps renewing a Lease it already holds
_UNMANAGE = {"metadata": {"annotations": {KWOK_NODE_ANNOTATION: None}}}
_TAKE_LEASE = {"spec": {"holderIdentity": STOPPED_HOLDER, "leaseDurationSeconds": 3600}}
#: the taints kube-controller-manager's node lifecycle controller puts on a Node whose Ready
#: condition is Unknown (k8s.io/api core/v1 ``TaintNodeUnreachable``)
UNREACHABLE = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}
#: how long a Node may take to go Unknown once its Lease stops: the stack's 16 s Lease, the
#: 20 s node-monitor grace and 5 s monitor period, with room for a slow machine
UNREACHABLE_TIMEOUT_S = 120.0
#: Karpenter's log line for a disruption command (v1.14: "disrupting node(s)" with the
#: command "<Reason>/<Decision>, terminating N nodes (...)").
_REASON = re.compile(r'"command"\s*:\s*"(\w+)/')
_LABEL = re.compile(r'(\w+)="([^"]*)"')
#: The gates of the harness's tests, as run.py's ``KARPENTER_FEATURE_GATES`` gives them
#: to both sides (``joiner_gates``): ``StaticCapacity`` and ``NodeOverlay`` on.
GATES = FeatureGates(static_capacity=True, node_overlay=True)
_CREATED = re.compile(r'"message":"created nodeclaim".*?"NodeClaim":\{"name":"([^"]+)"')
#: Karpenter's line for a scheduling round that plans new NodeClaims (v1.14
#: pkg/controllers/provisioning/provisioner.go ``Provisioner.Schedule``: "found provisionable
#: pod(s)", logged once per round before ``Provisioner.Create`` logs "created nodeclaim" for
#: each NodeClaim of the round; rounds run one after another, the provisioner is a singleton)
_ROUND = '"message":"found provisionable pod(s)"'
#: Karpenter's line for every scheduling round with pods to place, before it solves (v1.14
#: ``Provisioner.Schedule``: "computing scheduling decision for provisionable pod(s)", at
#: debug level, which the harness's Karpenter logs). A round that creates no NodeClaim logs
#: no ``_ROUND`` line, so rounds are numbered by this one when the log has it
#: (``_round_marker``): gen-2525-2's pods that a later round without NodeClaims could not
#: place were taken for the first round's.
_SOLVE = '"message":"computing scheduling decision for provisionable pod(s)"'
#: Karpenter's line for a pod a scheduling round could not place (v1.14
#: pkg/controllers/provisioning/scheduling/scheduler.go ``Results.Record``: "could not schedule
#: pod" with the Pod's name and namespace; logged every round, never rate-limited)
_FAILED = '"message":"could not schedule pod"'
#: Karpenter's event nominating a pod to a new NodeClaim (v1.14
#: pkg/controllers/provisioning/scheduling/events.go ``NominatePodEvent``, published by
#: ``Provisioner.Create`` for each pod of a NodeClaim it created): reason Nominated, message
#: "Pod should schedule on: nodeclaim/NAME" (", node/NODE" added for an existing node). At most
#: one per pod in 2 minutes (deduplicated by pod UID, pkg/events/recorder.go), and at most 10
#: at once then 5 a second across Karpenter (``PodNominationRateLimiter``): a pod nominated
#: again gets no second event, and a large batch loses some events.
NOMINATED = "Nominated"
_NOMINATED_CLAIM = re.compile(r"^Pod should schedule on: (?:.*\s)?nodeclaim/([^,\s]+)")
#: the component Karpenter's events come from (its event recorder's name)
KARPENTER_SOURCE = "karpenter"
#: kube-scheduler's event for a pod no node can take (k8s.io/kubernetes
#: pkg/scheduler/schedule_one.go ``handleSchedulingFailure``), from its default profile
FAILED_SCHEDULING = "FailedScheduling"
SCHEDULER_SOURCE = "default-scheduler"
#: how long before a round's listing of the pending pods a pod must have been found
#: unschedulable to count as listed by it: kube-scheduler records the event before its
#: status update reaches Karpenter's informer cache (milliseconds on this stack)
SEEN_MARGIN_S = 0.5
_LOG_TIME = re.compile(r'"time":"([^"]+)"')
_LOG_DURATION = re.compile(r'"duration":"([^"]+)"')


@dataclass
class Side:
    """What one side did for a case."""

    claims: list[tuple[str, str, str, str]] = field(default_factory=list)  # pool, type, ct, zone
    #: Joiner's side: each claim's zones where its launch could have gone at the same
    #: price (``Launch.tiedZones``, in ``claims``' order); empty: only its zone
    tied_zones: list[tuple[str, ...]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    #: the removed nodes as (NodePool, type, capacity type, zone, apps of their pods)
    removed_shapes: list[str] = field(default_factory=list)
    on_existing: int = 0
    #: Joiner's side: the pods Karpenter's round leaves out that kube-scheduler binds once
    #: the new NodeClaims register (``Placement.afterLaunch``): bound in the end, but
    #: pending in Karpenter's decision (``as_decided``)
    left_out: list[str] = field(default_factory=list)
    #: how many of ``left_out`` are bound to an existing node (counted in ``on_existing``)
    left_out_on_existing: int = 0
    error: str = ""

    def as_decided(self) -> Side:
        """This side as Karpenter's decision has it, for comparing with a round
        (``first_decision``): the pods kube-scheduler binds only once the NodeClaims
        register (``left_out``) still pending."""
        return replace(
            self,
            pending=sorted([*self.pending, *self.left_out]),
            on_existing=self.on_existing - self.left_out_on_existing,
            left_out=[],
            left_out_on_existing=0,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "nodeClaims": [
                {
                    "nodePool": p,
                    "instanceType": t,
                    "capacityType": c,
                    "zone": z,
                    **({"tiedZones": list(tied)} if len(tied) > 1 else {}),
                }
                for (p, t, c, z), tied in sorted(
                    itertools.zip_longest(self.claims, self.tied_zones, fillvalue=())
                )
            ],
            "pending": sorted(self.pending),
            "removed": sorted(self.removed),
            "reasons": sorted(set(self.reasons)),
            "methods": sorted(set(self.methods)),
            "podsOnExistingNodes": self.on_existing,
            **({"afterLaunch": sorted(self.left_out)} if self.left_out else {}),
            **({"error": self.error} if self.error else {}),
        }


@dataclass
class Trace:
    """A provisioning case on Karpenter's side, as planned and as bound: each new NodeClaim
    (NodePool, type, capacity type, zone), the scheduling round that created it (its index
    in Karpenter's log since the batch began), its node ("" if it never launched; the
    case's NodeClaims from before the batch have theirs too), the NodeClaim each batch
    pod's Nominated event names, each batch pod's node ("" if pending)
    and the round in which Karpenter first could not schedule it."""

    claims: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=dict)
    claim_node: dict[str, str] = field(default_factory=dict)
    nominated: dict[str, str] = field(default_factory=dict)
    bound: dict[str, str] = field(default_factory=dict)
    #: the nodes of the case that existed before the batch
    existing_nodes: set[str] = field(default_factory=set)
    #: batch pod -> the round of Karpenter's first "could not schedule pod" line of it
    failed: dict[str, int] = field(default_factory=dict)
    #: round -> when it listed the pending pods (epoch s: its log line's time less the
    #: round's duration); rounds whose line gives no time are absent
    round_start: dict[int, float] = field(default_factory=dict)
    #: batch pod -> when kube-scheduler first found it unschedulable (epoch s, its first
    #: FailedScheduling event); pods it bound at once are absent
    unschedulable_at: dict[str, float] = field(default_factory=dict)
    #: the pods of ``bound`` a DaemonSet owns (an existing node's, unbound at the
    #: snapshot): kube-scheduler binds each to its own node, and Karpenter never plans one
    daemon_pods: set[str] = field(default_factory=set)

    def as_json(self) -> dict[str, Any]:
        """The trace as recorded, with the raced pods."""
        return {
            "nodeClaims": {
                name: {
                    "launch": "/".join(self.claims[name]),
                    "round": self.rounds.get(name),
                    "node": self.claim_node.get(name, ""),
                }
                for name in sorted(self.claims)
            },
            "existingNodes": sorted(self.existing_nodes),
            "nominated": dict(sorted(self.nominated.items())),
            "bound": dict(sorted(self.bound.items())),
            "couldNotSchedule": dict(sorted(self.failed.items())),
            "roundStart": {str(r): t for r, t in sorted(self.round_start.items())},
            **({"daemonPods": sorted(self.daemon_pods)} if self.daemon_pods else {}),
            "unschedulableAt": dict(sorted(self.unschedulable_at.items())),
            "racedPods": race(self),
            "emptiedNodeClaims": emptied(self),
        }


@dataclass
class Result:
    """One case's outcome. ``plan_differences`` is None unless the case disagrees and
    Karpenter's side shows a kube-scheduler race; then it is what differs between Joiner
    and Karpenter's first decision (empty: they agree)."""

    case: Case
    karpenter: Side
    joiner: Side
    differences: list[str]
    seconds: float
    trace: Trace | None = None
    first: Side | None = None
    plan_differences: list[str] | None = None
    #: A zone-tie case that agrees only under another zone order (``tie_order_agreement``):
    #: that order, and what the plain comparison found (``differences`` is then empty).
    tie_order: str | None = None
    tie_differences: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return not self.differences

    @property
    def race(self) -> bool:
        """The case disagrees only through a kube-scheduler race: Joiner agrees with
        Karpenter's first decision."""
        return bool(self.differences) and self.plan_differences == []

    @property
    def verdict(self) -> str:
        """``agree``, ``race`` (agrees with Karpenter's plan; kube-scheduler race) or
        ``disagree``."""
        return "agree" if self.agree else "race" if self.race else "disagree"


def pod_shapes(case: Case) -> dict[str, str]:
    """Each batch pod's name -> its shape: the pod without its name (labels, annotations,
    spec). Pods of one shape are interchangeable: which of them stays pending is a tie that
    Karpenter breaks by creation time, then UID (random; ``queue.go``
    ``byCPUAndMemoryDescending``), and kube-scheduler by its queue order."""
    out = {}
    for p in case.pods:
        meta = {k: v for k, v in p["metadata"].items() if k != "name"}
        out[p["metadata"]["name"]] = json.dumps([meta, p["spec"]], sort_keys=True)
    return out


def compare(case: Case, k: Side, j: Side) -> list[str]:
    """The written equivalence (module docstring); returns what differs, empty if nothing."""
    diffs: list[str] = []
    if k.error or j.error:
        return [f"error: karpenter={k.error!r} joiner={j.error!r}"]
    if case.kind == "provision":
        kp, jp = Counter(c[0] for c in k.claims), Counter(c[0] for c in j.claims)
        if kp != jp:
            diffs.append(f"NodeClaims per NodePool: karpenter {dict(kp)} joiner {dict(jp)}")
        kt, jt = Counter(c[:3] for c in k.claims), Counter(c[:3] for c in j.claims)
        if kt != jt and kp == jp:
            diffs.append(f"instance/capacity types: karpenter {sorted(kt)} joiner {sorted(jt)}")
        kz, jz = Counter(c[3] for c in k.claims), Counter(c[3] for c in j.claims)
        if case.zone_ties:
            kz, jz = Counter(kz.values()), Counter(jz.values())  # the pattern, not the names
        if kz != jz and not launch_ties_match(k, j):
            diffs.append(
                f"zones: karpenter {sorted(Counter(c[3] for c in k.claims).elements())} "
                f"joiner {sorted(Counter(c[3] for c in j.claims).elements())}"
            )
        shape = pod_shapes(case)
        if Counter(shape.get(p, p) for p in k.pending) != Counter(
            shape.get(p, p) for p in j.pending
        ):
            diffs.append(f"pending pods: karpenter {sorted(k.pending)} joiner {sorted(j.pending)}")
    else:
        # Interchangeable nodes (same pool, type, zone and pods) are equal candidates:
        # which of two identical nodes goes is a tie both sides break arbitrarily.
        if sorted(k.removed_shapes or k.removed) != sorted(j.removed_shapes or j.removed):
            diffs.append(f"removed nodes: karpenter {sorted(k.removed)} joiner {sorted(j.removed)}")
        kt, jt = Counter(c[1:3] for c in k.claims), Counter(c[1:3] for c in j.claims)
        if kt != jt:
            diffs.append(f"replacements: karpenter {sorted(kt)} joiner {sorted(jt)}")
        if set(k.methods) != set(j.methods):
            diffs.append(
                f"methods: karpenter {sorted(set(k.methods))} joiner {sorted(set(j.methods))}"
            )
        elif set(k.reasons) != set(j.reasons):
            diffs.append(
                f"reasons: karpenter {sorted(set(k.reasons))} joiner {sorted(set(j.reasons))}"
            )
    return diffs


def launch_ties_match(k: Side, j: Side) -> bool:
    """Each of Karpenter's NodeClaims pairs with one of Joiner's of the same NodePool,
    instance type and capacity type whose launch could have gone to its zone at the same
    price (``Side.tied_zones``): Karpenter's kwok provider takes the zone at random among
    a NodeClaim's cheapest offerings (``kwok/cloudprovider`` ``CloudProvider.toNode``,
    ``lo.Sample``), independently of the scheduler, where Joiner names the first by name.
    A perfect matching of the two sides' NodeClaims under that relation."""
    if len(k.claims) != len(j.claims):
        return False
    graph = nx.Graph()
    graph.add_nodes_from(("k", i) for i in range(len(k.claims)))
    graph.add_nodes_from(("j", i) for i in range(len(j.claims)))
    for (ki, kc), (ji, jc) in itertools.product(enumerate(k.claims), enumerate(j.claims)):
        zones = set(j.tied_zones[ji] if ji < len(j.tied_zones) else ()) | {jc[3]}
        if kc[:3] == jc[:3] and kc[3] in zones:
            graph.add_edge(("k", ki), ("j", ji))
    top = [("k", i) for i in range(len(k.claims))]
    matching = nx.bipartite.maximum_matching(graph, top_nodes=top)
    return all(node in matching for node in top)


class Cluster:
    """The admin client and the reads the harness needs."""

    def __init__(self, kubeconfig: Path) -> None:
        # a shared 2-core machine can be slow to answer: wait, never fail on a slow list
        self.client = Client(
            KubeConfig.from_file(kubeconfig), field_manager="fidelity", timeout=httpx.Timeout(120.0)
        )
        #: every NodeClaim listed so far, by name (its last listed state)
        self.seen: dict[str, Obj] = {}

    def apply(self, docs: list[Obj]) -> None:
        for doc in docs:
            self.client.apply(from_dict(doc), force=True)

    def delete_pod(self, ns: str, name: str) -> None:
        try:
            self.client.delete(Pod, name, namespace=ns, grace_period=0)
        except ApiError as exc:
            if exc.status.code != 404:
                raise

    def delete_case(self, case: Case) -> None:
        """Delete the case's namespace, NodePools and NodeOverlays (Karpenter then drains
        and deletes their NodeClaims; ``wait_claims_gone`` waits for that)."""
        for kind, name in [
            *[(NodePool, render.pool_name(case, p)) for p in case.pools],
            *[(NodeOverlay, render.overlay_name(case, o)) for o in case.overlays],
            (Namespace, render.namespace(case)),
        ]:
            try:
                self.client.delete(kind, name)
            except ApiError as exc:
                if exc.status.code != 404:
                    raise

    def wait_claims_gone(self, cases: list[Case], timeout_s: float = TIMEOUT_S) -> float:
        """Wait until no NodeClaim of the cases' NodePools is left; returns the seconds
        waited.

        Raises:
            TimeoutError: some are left after ``timeout_s``.
        """
        pools = {render.pool_name(c, p) for c in cases for p in c.pools}
        start = time.monotonic()
        while True:
            left = [
                c["metadata"]["name"]
                for c in self.nodeclaims()
                if (c["metadata"].get("labels") or {}).get(POOL) in pools
            ]
            if not left:
                return time.monotonic() - start
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"NodeClaims {sorted(left)} left after {timeout_s:.0f} s")
            time.sleep(1.0)

    def pods(self, ns: str) -> list[Obj]:
        return [p.to_dict() for p in self.client.list(Pod, namespace=ns)]

    def events(self, ns: str) -> list[Obj]:
        """The events in ``ns``."""
        return [e.to_dict() for e in self.client.list(Event, namespace=ns)]

    def nodeclaims(self) -> list[Obj]:
        """Every NodeClaim now; each one ever listed is also kept in ``seen``."""
        found = [dict(c) for c in self.client.list(NodeClaim)]
        for c in found:
            self.seen[c["metadata"]["name"]] = c
        return found

    def nodes(self, case: Case) -> list[Obj]:
        sel = {render.CASE_LABEL: case.id}
        return [n.to_dict() for n in self.client.list(Node, labels=sel)]

    def nodepools(self, case: Case) -> list[Obj]:
        names = {render.pool_name(case, p) for p in case.pools}
        return [dict(p) for p in self.client.list(NodePool) if p["metadata"]["name"] in names]

    def fingerprint(self, namespaces: list[str]) -> tuple[object, ...]:
        claims = tuple(
            sorted(
                (
                    c["metadata"]["name"],
                    c["metadata"].get("deletionTimestamp") is not None,
                    (c.get("status") or {}).get("nodeName") or "",
                    tuple(
                        (x.get("type"), x.get("status"))
                        for x in (c.get("status") or {}).get("conditions") or []
                    ),
                )
                for c in self.nodeclaims()
            )
        )
        pods = tuple(
            sorted(
                (ns, p["metadata"]["name"], (p.get("spec") or {}).get("nodeName") or "")
                for ns in namespaces
                for p in self.pods(ns)
            )
        )
        return claims, pods

    def wait_stable(
        self, namespaces: list[str], quiet_s: float, timeout_s: float = TIMEOUT_S
    ) -> float:
        """Wait until nothing changed for ``quiet_s``; returns the seconds waited.

        Raises:
            TimeoutError: still changing after ``timeout_s``.
        """
        start = time.monotonic()
        last = self.fingerprint(namespaces)
        since = start
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            fp = self.fingerprint(namespaces)
            if fp != last:
                last, since = fp, now
            elif now - since >= quiet_s:
                return now - start
            if now - start > timeout_s:
                raise TimeoutError(f"cluster still changing after {timeout_s:.0f} s")

    def make_unreachable(self, nodes: list[str], timeout_s: float = UNREACHABLE_TIMEOUT_S) -> float:
        """Silence ``nodes`` as a kubelet that went away and wait until the node lifecycle
        controller marks each Ready Unknown with the unreachable taints; returns the seconds
        waited.

        kwok (v0.8, ``node_lease_controller.go``) keeps renewing the Lease of a Node it once
        managed, and its ``node-initialize`` stage sets Ready back to True on any Node event
        it sees. So the Node loses its kwok annotation (kwok then sees no more events of it)
        and its Lease is taken over (``STOPPED_HOLDER``, an hour long): kwok's
        ``tryAcquireOrRenew`` leaves a Lease another holder has not let expire, and the
        renew time stops moving.

        Raises:
            TimeoutError: some node is not unreachable after ``timeout_s``.
        """
        for name in nodes:
            self.client.patch(Node, name, _UNMANAGE, patch_type=PatchType.MERGE)
            self.client.patch(
                Lease, name, _TAKE_LEASE, namespace=NODE_LEASES, patch_type=PatchType.MERGE
            )
        start = time.monotonic()
        while True:
            left = [n for n in nodes if not unreachable(self.client.get(Node, n).to_dict())]
            if not left:
                return time.monotonic() - start
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"nodes {left} not unreachable after {timeout_s:.0f} s")
            time.sleep(1.0)

    def wait_pods_gone(self, ns: str, names: tuple[str, ...], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            have = {p["metadata"]["name"] for p in self.pods(ns)}
            if not have & set(names):
                return
            time.sleep(0.5)
        raise TimeoutError(f"pods {names} in {ns} not deleted after {timeout_s:.0f} s")


def unreachable(node: Obj) -> bool:
    """True when ``node`` (an API Node) has Ready ``Unknown`` and both unreachable taints."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    taints = {(t.get("key"), t.get("effect")) for t in (node.get("spec") or {}).get("taints") or []}
    return ready == "Unknown" and taints >= UNREACHABLE


def nodes_of_pods(pods: list[Obj], names: tuple[str, ...]) -> list[str]:
    """The nodes the named pods are bound to, in the order named (each once).

    Raises:
        ValueError: a named pod is missing or not bound.
    """
    bound = {p["metadata"]["name"]: (p.get("spec") or {}).get("nodeName") for p in pods}
    out: list[str] = []
    for name in names:
        node = bound.get(name)
        if not node:
            raise ValueError(f"pod {name} is {'not bound' if name in bound else 'missing'}")
        if node not in out:
            out.append(node)
    return out


def _claims_of(case: Case, claims: list[Obj]) -> dict[str, Obj]:
    pools = {render.pool_name(case, p) for p in case.pools}
    return {
        c["metadata"]["name"]: c
        for c in claims
        if (c["metadata"].get("labels") or {}).get(POOL) in pools
    }


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _claim_tuple(c: Obj) -> tuple[str, str, str, str]:
    lab = _labels(c)
    return (lab.get(POOL, ""), lab.get(IT, ""), lab.get(CT, ""), lab.get(ZONE, ""))


@dataclass
class Snapshot:
    """A case's live objects at one moment, as a dump for Joiner, and its NodeClaims."""

    docs: list[Obj]
    claims: dict[str, Obj]
    node_of_claim: dict[str, str]


def snapshot(cluster: Cluster, case: Case, with_pods: bool = True) -> Snapshot:
    """The case's NodePools, NodeClass, Nodes and Pods from the API, with its DaemonSets,
    PDBs, PriorityClasses and NodeOverlays as rendered."""
    docs: list[Obj] = [dict(render.KWOK_NODECLASS)]
    for np in cluster.nodepools(case):
        np.pop("status", None)
        docs.append(render.strip(np))
    docs += [render.strip(n) for n in cluster.nodes(case)]
    if with_pods:
        docs += [render.strip(p) for p in cluster.pods(render.namespace(case))]
    kept = ("DaemonSet", "PodDisruptionBudget", "PriorityClass", "NodeOverlay")
    docs += [d for d in render.base_objects(case) if d["kind"] in kept]
    docs += [d for d in render.before_pods(case) if d["kind"] == "Deployment"]
    claims = _claims_of(case, cluster.nodeclaims())
    nodes = {k: (v.get("status") or {}).get("nodeName", "") for k, v in claims.items()}
    return Snapshot(docs, claims, nodes)


def node_shapes(snap: Snapshot) -> dict[str, str]:
    """Each node of a snapshot as ``pool/type/capacity type/zone[apps of its pods]``."""
    apps: dict[str, list[str]] = {}
    for d in snap.docs:
        if d.get("kind") == "Pod" and (d.get("spec") or {}).get("nodeName"):
            app = ((d.get("metadata") or {}).get("labels") or {}).get("app", "?")
            apps.setdefault(d["spec"]["nodeName"], []).append(app)
    out = {}
    for d in snap.docs:
        if d.get("kind") == "Node":
            name = d["metadata"]["name"]
            lab = d["metadata"].get("labels") or {}
            where = "/".join(lab.get(k, "") for k in (POOL, IT, CT, ZONE))
            out[name] = f"{where}[{','.join(sorted(apps.get(name, [])))}]"
    return out


def joiner_gates(karpenter_gates: str) -> FeatureGates:
    """The gates Joiner runs with, read from Karpenter's ``FEATURE_GATES`` text (run.py), so
    both sides run with the same gates. A gate Joiner does not know is dropped when off;
    on, it is an error (Joiner would silently run without it).

    Raises:
        ValueError: a gate Joiner does not know is on.
        InputError: the text is not ``Name=bool,...`` (``featuregates.parse``).
    """
    known, unknown = [], []
    for part in (p.strip() for p in karpenter_gates.split(",") if p.strip()):
        name, _, value = part.partition("=")
        if name.strip() in featuregates.KNOWN:
            known.append(part)
        elif featuregates.PARSE_BOOL.get(value.strip()) is not False:
            unknown.append(part)
    if unknown:
        raise ValueError(f"Karpenter runs with gates Joiner does not model: {unknown}")
    return featuregates.parse(",".join(known), field="FEATURE_GATES")


def _load(docs: list[Obj], name: str) -> Any:
    return load_documents(docs, name)


def static_pools(case: Case) -> set[str]:
    """The rendered names of the case's static NodePools (``spec.replicas``)."""
    return {render.pool_name(case, n) for n, spec in case.pools.items() if "replicas" in spec}


def joiner_plan(
    case: Case, before: Snapshot, types: list[InstanceType], out_dir: Path, gates: FeatureGates
) -> Side:
    """``joiner plan`` over the snapshot plus the batch's pods (pending), with ``gates``. A
    static pool's nodes are left out of the snapshot: Karpenter's static provisioning
    starts as soon as the pool is applied, so both sides count its NodeClaims from there
    (``static_pools``)."""
    static = static_pools(case)
    docs = [
        d
        for d in [*before.docs, *render.batch_pods(case)]
        if not (d.get("kind") == "Node" and _labels(d).get(POOL) in static)
    ]
    write_input(out_dir / f"{case.id}.plan-input.json", docs)
    return plan_side(case, docs, types, gates)


def expected_claims(case: Case, types: list[InstanceType], gates: FeatureGates) -> int:
    """How many NodeClaims Joiner's plan launches for ``case`` on an empty cluster (its
    NodePools, DaemonSets and overlays as rendered, and its pods, those that make the
    existing nodes with the batch's): an estimate, from above where existing nodes would
    take pods, of what Karpenter launches in the case's scheduling round, for batching
    (``run.ROUND_CLAIMS_MAX``). 0 when the plan fails (the case then shows the error)."""
    kept = ("NodePool", "DaemonSet", "PodDisruptionBudget", "PriorityClass", "NodeOverlay")
    docs = [dict(render.KWOK_NODECLASS)]
    docs += [d for d in render.base_objects(case) if d["kind"] in kept]
    docs += [*render.before_pods(case), *render.batch_pods(case)]
    side = plan_side(case, docs, types, gates)
    return len(side.claims)


def write_input(path: Path, docs: list[Obj]) -> None:
    """Write ``docs`` as ``kubectl get -o json`` writes several objects (a ``v1`` ``List``),
    so ``joiner plan -f``/``joiner disrupt -f`` replay the case as the harness ran it."""
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, default=str))


def read_input(path: Path) -> list[Obj]:
    """The objects ``write_input`` wrote to ``path`` (or a bare JSON array of them, as runs
    before 2026-12-07 wrote).

    Raises:
        ValueError: neither a ``List`` nor an array.
    """
    data = json.loads(path.read_text())
    if isinstance(data, dict) and data.get("kind") == "List":
        data = data.get("items") or []
    if not isinstance(data, list):
        raise ValueError(f"{path}: neither a List nor a JSON array of objects")
    return data


def plan_side(case: Case, docs: list[Obj], types: list[InstanceType], gates: FeatureGates) -> Side:
    """Joiner's side of a provisioning case: ``build_plan`` over ``docs`` (the snapshot and
    the batch's pods) with the kwok ``types`` and ``gates``."""
    try:
        plan = build_plan(
            _load(docs, f"fidelity:{case.id}"),
            Catalog.load(),
            REGION,
            kwok_types=types,
            feature_gates=gates,
        )
    except Exception as exc:  # recorded as the case's error, never hidden
        return Side(error=f"{type(exc).__name__}: {exc}")
    ns = render.namespace(case) + "/"
    return Side(
        claims=[
            (c.nodePool, c.launch.instanceType, c.launch.capacityType, c.launch.zone)
            for c in [*plan.nodeClaims, *plan.staticNodeClaims]
        ],
        tied_zones=[tuple(c.launch.tiedZones) for c in [*plan.nodeClaims, *plan.staticNodeClaims]],
        pending=sorted(u.pod.removeprefix(ns) for u in plan.unschedulable),
        # A preemptor runs on its existing node once its victims are gone, as
        # kube-scheduler binds it there on Karpenter's side.
        # A pod kube-scheduler binds to a planned NodeClaim once it registers is on a new
        # node, as on Karpenter's side.
        on_existing=sum(not p.onNodeClaim for p in plan.placements) + len(plan.preemptions),
        left_out=sorted(p.pod.removeprefix(ns) for p in plan.placements if p.afterLaunch),
        left_out_on_existing=sum(p.afterLaunch and not p.onNodeClaim for p in plan.placements),
    )


def _renamed(text: str, names: dict[str, str]) -> str:
    """``text`` with each zone name replaced by ``names[zone]`` (all at once)."""
    marked = text
    for i, zone in enumerate(names):
        marked = marked.replace(f'"{zone}"', f'"\x00{i}\x00"')
    for i, zone in enumerate(names):
        marked = marked.replace(f'"\x00{i}\x00"', f'"{names[zone]}"')
    return marked


def tie_order_agreement(
    case: Case,
    karpenter: Side,
    docs: list[Obj],
    types_file: Path,
    gates: FeatureGates,
    *,
    decided: bool = False,
) -> str | None:
    """For a case whose zone choices are ties Karpenter breaks in Go map order
    (``case.zone_ties``; ``topologygroup.go`` ``nextDomainTopologySpread`` keeps the first
    min-count zone it meets, Joiner the first by name): the zone order, as "b, a, c", under
    which Joiner's plan equals Karpenter's outcome exactly (zones compared by name), or None.
    Each order is run by renaming the zones in Joiner's input (the snapshot, the pods, the
    instance types' offerings, their prices with them), so only which zone wins a tie
    changes; the plan's zones are named back. The identity order is not tried (the plain
    comparison has). ``decided``: ``karpenter`` is a round's decision (``first_decision``),
    compared with Joiner's plan ``as_decided``."""
    zones = sorted({z for c in karpenter.claims for z in [c[3]] if z} | set(_ZONES))
    exact = replace(case, zone_ties="")
    text = json.dumps(docs, default=str)
    types_text = types_file.read_text()
    for order in itertools.permutations(zones):
        if list(order) == zones:
            continue
        # the zone that must win ties first is renamed to sort first
        names = {z: zones[i] for i, z in enumerate(order)}
        back = {v: k for k, v in names.items()}
        renamed = types_file.with_name(f".{case.id}.tie-types.json")
        renamed.write_text(_renamed(types_text, names))
        side = plan_side(case, json.loads(_renamed(text, names)), load_kwok_types(renamed), gates)
        renamed.unlink()
        side.claims = [(p, t, ct, back.get(z, z)) for p, t, ct, z in side.claims]
        side.tied_zones = [tuple(sorted(back.get(z, z) for z in t)) for t in side.tied_zones]
        if not side.error and not compare(exact, karpenter, side.as_decided() if decided else side):
            return ", ".join(z.removeprefix("test-zone-") for z in order)
    return None


#: At most this many plans are tried per case over Karpenter's independent tie-breaks
#: (``tie_choice_agreement``).
TIE_CHOICES_MAX = 64


#: Joiner's own tie-break (by name), which ``_TieChooser`` reorders.
_JOINER_ORDER = Summary._ordered


class _TieChooser:
    """Stands in for ``topology.Summary._ordered`` in one plan: at the k-th tie (several
    least-loaded domains) the tied domain ``forced[k]`` (an index among them, by name; 0
    past the end) goes first. Records how many domains tied at each tie (``seen``) and
    which one went first (``chosen``)."""

    def __init__(self, forced: tuple[int, ...]) -> None:
        self.forced = forced
        self.seen: list[int] = []
        self.chosen: list[str] = []

    def __call__(self, candidates: list[str], counts: dict[str, int]) -> list[str]:
        out = _JOINER_ORDER(candidates, counts)
        tied = [v for v in out if out and counts.get(v, 0) == counts.get(out[0], 0)]
        if len(tied) < 2:
            return out
        k = len(self.seen)
        self.seen.append(len(tied))
        pick = tied[self.forced[k] if k < len(self.forced) else 0]
        self.chosen.append(pick)
        out.remove(pick)
        return [pick, *out]


def _branches(forced: tuple[int, ...], seen: list[int]) -> list[tuple[int, ...]]:
    """The tie choices that differ from a plan's (``forced``, then the first domain at
    each later tie ``seen``) first at one of its later ties: each is a new branch."""
    out = []
    for i in range(len(forced), len(seen)):
        first = (*forced, *(0,) * (i - len(forced)))
        out += [(*first, alt) for alt in range(1, seen[i])]
    return out


def tie_choice_agreement(
    case: Case,
    karpenter: Side,
    docs: list[Obj],
    types: list[InstanceType],
    gates: FeatureGates,
    *,
    decided: bool = False,
) -> str | None:
    """For a case with ``zone_ties`` that no one zone order explains
    (``tie_order_agreement``): the domains, tie by tie, as "per tie: c, a", with which
    Joiner's plan equals Karpenter's outcome exactly, or None. Karpenter draws Go's map
    order afresh at every tie (``topology.Summary._ordered``), so two ties of one round may
    go opposite ways, which no renaming of zones can reproduce; this walks the tree of tie
    choices depth first (each plan's ties past the forced ones take the first domain by
    name), at most ``TIE_CHOICES_MAX`` plans. ``decided`` as in ``tie_order_agreement``."""
    exact = replace(case, zone_ties="")
    original = Summary.__dict__["_ordered"]
    todo: list[tuple[int, ...]] = [()]
    tried = 0
    try:
        while todo and tried < TIE_CHOICES_MAX:
            forced = todo.pop()
            chooser = _TieChooser(forced)
            Summary._ordered = staticmethod(chooser)  # type: ignore[method-assign]
            side = plan_side(case, docs, types, gates)
            tried += 1
            got = side.as_decided() if decided else side
            if forced and not side.error and not compare(exact, karpenter, got):
                return "per tie: " + ", ".join(z.removeprefix("test-zone-") for z in chooser.chosen)
            todo += _branches(forced, chooser.seen)
    finally:
        Summary._ordered = original  # type: ignore[method-assign]
    return None


def joiner_disrupt(
    case: Case, snap: Snapshot, types: list[InstanceType], out_dir: Path, gates: FeatureGates
) -> Side:
    """``joiner disrupt`` over the snapshot taken right after the change, with ``gates``."""
    write_input(out_dir / f"{case.id}.disrupt-input.json", snap.docs)
    try:
        plan = build_disruption_plan(
            _load(snap.docs, f"fidelity:{case.id}"),
            Catalog.load(),
            REGION,
            at=datetime.now(UTC),
            kwok_types=types,
            feature_gates=gates,
        )
    except Exception as exc:  # recorded as the case's error, never hidden
        return Side(error=f"{type(exc).__name__}: {exc}")
    removed = [n for c in plan.commands for n in c.candidates]
    return Side(
        claims=[
            ("", r.instanceType, r.capacityType, r.zone)
            for c in plan.commands
            for r in c.replacements
        ],
        removed=removed,
        reasons=[c.reason for c in plan.commands],
        methods=[c.method for c in plan.commands],
    )


def _new_claims(cluster: Cluster, case: Case, before: Snapshot) -> dict[str, Obj]:
    """The case's NodeClaims now that were not there at ``before`` (a static pool's all)."""
    now = _claims_of(case, cluster.nodeclaims())
    static = static_pools(case)
    return {
        name: c
        for name, c in now.items()
        if name not in before.claims or _labels(c).get(POOL) in static
    }


def demand_names(case: Case, before: Snapshot) -> set[str]:
    """The pods a provisioning case's plan has as demand: the batch's, and those of the
    case still unbound at ``before`` (a pod the existing nodes were made for that no
    NodeClaim took: ``joiner plan`` reads it pending from the snapshot, so Karpenter's side
    must count it too)."""
    unbound = {
        str(d["metadata"]["name"])
        for d in before.docs
        if d.get("kind") == "Pod" and not (d.get("spec") or {}).get("nodeName")
    }
    return {str(p["metadata"]["name"]) for p in case.pods} | unbound


def _batch_pods(cluster: Cluster, case: Case, before: Snapshot) -> list[Obj]:
    """The case's pods now that ``demand_names`` names."""
    names = demand_names(case, before)
    return [p for p in cluster.pods(render.namespace(case)) if p["metadata"]["name"] in names]


def karpenter_provisioned(cluster: Cluster, case: Case, before: Snapshot) -> Side:
    """What Karpenter (with kube-scheduler) did for the batch since ``before``."""
    new = list(_new_claims(cluster, case, before).values())
    existing_nodes = set(before.node_of_claim.values())
    pods = _batch_pods(cluster, case, before)
    return Side(
        claims=[_claim_tuple(c) for c in new],
        pending=sorted(p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")),
        on_existing=sum(1 for p in pods if p["spec"].get("nodeName") in existing_nodes),
    )


def karpenter_trace(cluster: Cluster, case: Case, before: Snapshot, log_text: str) -> Trace:
    """How Karpenter planned the batch for ``case`` and how kube-scheduler bound it:
    ``log_text`` is Karpenter's log since the batch began (its scheduling rounds), the
    Nominated events come from the case's namespace."""
    new = _new_claims(cluster, case, before)
    rounds, failed = provisioning_rounds(log_text, render.namespace(case))
    batch = {p["metadata"]["name"] for p in case.pods}
    events = cluster.events(render.namespace(case))
    unschedulable = first_unschedulable(events)
    pods = _batch_pods(cluster, case, before)
    return Trace(
        claims={name: _claim_tuple(c) for name, c in new.items()},
        rounds={name: rounds[name] for name in new if name in rounds},
        failed={p: r for p, r in failed.items() if p in batch},
        claim_node={
            **before.node_of_claim,
            **{name: (c.get("status") or {}).get("nodeName") or "" for name, c in new.items()},
        },
        nominated=nominations(events),
        bound={p["metadata"]["name"]: (p.get("spec") or {}).get("nodeName") or "" for p in pods},
        existing_nodes=set(before.node_of_claim.values()),
        round_start=round_starts(log_text),
        unschedulable_at={p: t for p, t in unschedulable.items() if p in batch},
        daemon_pods={
            p["metadata"]["name"]
            for p in pods
            if any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
        },
    )


def _round_marker(log_text: str) -> str:
    """The line each scheduling round starts with: ``_SOLVE`` (every round), or
    ``_ROUND`` (only rounds that create NodeClaims) in a log without debug lines."""
    return _SOLVE if _SOLVE in log_text else _ROUND


def provisioning_rounds(log_text: str, namespace: str) -> tuple[dict[str, int], dict[str, int]]:
    """Each NodeClaim a "created nodeclaim" line names -> its scheduling round (the number
    of round lines before it, ``_round_marker``), and each pod of ``namespace`` a "could
    not schedule pod" line names -> the round of its first such line."""
    claims: dict[str, int] = {}
    failed: dict[str, int] = {}
    count = 0
    marker = _round_marker(log_text)
    for line in log_text.splitlines():
        if marker in line:
            count += 1
        elif m := _CREATED.search(line):
            claims.setdefault(m.group(1), count)
        elif _FAILED in line and (pod := _failed_pod(line, namespace)):
            failed.setdefault(pod, count)
    return claims, failed


def round_starts(log_text: str) -> dict[int, float]:
    """Each scheduling round that created NodeClaims (numbered as ``provisioning_rounds``
    numbers them) -> when it listed the pending pods, in epoch seconds: its "found
    provisionable pod(s)" line's time less the line's ``duration`` (v1.14
    ``Provisioner.Schedule`` measures it from before ``GetPendingPods``). A line without a
    readable time or duration is left out."""
    out: dict[int, float] = {}
    count = 0
    marker = _round_marker(log_text)
    for line in log_text.splitlines():
        if marker in line:
            count += 1
        if _ROUND not in line:
            continue
        when, took = _LOG_TIME.search(line), _LOG_DURATION.search(line)
        if when is None or took is None:
            continue
        try:
            start = _instant(when.group(1)) - durationpy.from_str(took.group(1)).total_seconds()
        except ValueError:  # durationpy.DurationError is one
            continue
        out[count] = start
    return out


def _instant(text: str) -> float:
    """An RFC 3339 time (``Z`` or an offset, any fraction) in epoch seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def first_unschedulable(events: list[Obj]) -> dict[str, float]:
    """Each pod -> the time (epoch s) of kube-scheduler's earliest FailedScheduling event
    of it: ``eventTime`` (events.k8s.io, microseconds), else ``firstTimestamp``."""
    out: dict[str, float] = {}
    for event in events:
        obj = event.get("involvedObject") or event.get("regarding") or {}
        if event.get("reason") != FAILED_SCHEDULING or obj.get("kind") != "Pod":
            continue
        if _event_source(event) != SCHEDULER_SOURCE:
            continue
        text = event.get("eventTime") or event.get("firstTimestamp")
        if not text:
            continue
        name, when = str(obj.get("name")), _instant(str(text))
        out[name] = min(when, out.get(name, when))
    return out


def _failed_pod(line: str, namespace: str) -> str:
    """The name of the pod of ``namespace`` a "could not schedule pod" line names ("" for
    another namespace's or an unreadable line)."""
    try:
        ref = json.loads(line).get("Pod") or {}
    except (json.JSONDecodeError, AttributeError):
        return ""
    return str(ref.get("name") or "") if ref.get("namespace") == namespace else ""


def _event_source(event: Obj) -> str:
    return (
        (event.get("source") or {}).get("component")
        or event.get("reportingComponent")
        or event.get("reportingController")
        or ""
    )


def _event_time(event: Obj) -> str:
    meta = event.get("metadata") or {}
    return str(event.get("firstTimestamp") or meta.get("creationTimestamp") or "")


def nominations(events: list[Obj]) -> dict[str, str]:
    """Each pod -> the NodeClaim named by Karpenter's earliest Nominated event of it (pods
    without one are left out)."""
    out: dict[str, str] = {}
    for event in sorted(events, key=_event_time):
        obj = event.get("involvedObject") or {}
        if event.get("reason") != NOMINATED or obj.get("kind") != "Pod":
            continue
        m = _NOMINATED_CLAIM.match(event.get("message") or "")
        if m and _event_source(event) == KARPENTER_SOURCE:
            out.setdefault(str(obj.get("name")), m.group(1))
    return out


def race(trace: Trace) -> list[str]:
    """The pods kube-scheduler displaced from the NodeClaim Karpenter nominated them to,
    while that NodeClaim launched: bound to another node, or left pending while its node
    holds a batch pod Karpenter did not plan there (nominated to another NodeClaim, or one
    it could not schedule)."""
    out = []
    for pod, claim in trace.nominated.items():
        planned, node = trace.claim_node.get(claim, ""), trace.bound.get(pod, "")
        if planned and (node != planned if node else _intruded(trace, planned)):
            out.append(pod)
    return sorted(out + _provisioned_again_by_time(trace) + _left_pending_by_time(trace))


def _first_round(trace: Trace) -> int:
    """The case's first scheduling round: the earliest that created one of its NodeClaims."""
    return min((trace.rounds.get(c, 0) for c in trace.claims), default=0)


def _seen_first(trace: Trace, pod: str) -> bool:
    """kube-scheduler had found ``pod`` unschedulable before the case's first round listed
    the pending pods (``SEEN_MARGIN_S`` earlier at least), so that round decided it."""
    when, start = trace.unschedulable_at.get(pod), trace.round_start.get(_first_round(trace))
    return when is not None and start is not None and when + SEEN_MARGIN_S <= start


def _late(trace: Trace, pod: str) -> bool:
    """The case's first round is known not to have listed ``pod`` (it is known when it
    became unschedulable, and that was after the round's listing)."""
    return pod in trace.unschedulable_at and not _seen_first(trace, pod)


def _provisioned_again_by_time(trace: Trace) -> list[str]:
    """Pods with no Nominated event that the case's first round placed (``_seen_first``,
    never named by its "could not schedule pod" line) but that are bound to the node of a
    NodeClaim created in a later round: kube-scheduler displaced them and Karpenter
    provisioned them again."""
    first = _first_round(trace)
    later = {
        trace.claim_node[c]
        for c in trace.claims
        if trace.rounds.get(c, first) > first and trace.claim_node.get(c)
    }
    return [
        p
        for p, node in trace.bound.items()
        if node in later
        and p not in trace.nominated
        and trace.failed.get(p, first + 1) > first
        and _seen_first(trace, p)
    ]


def _left_pending_by_time(trace: Trace) -> list[str]:
    """Pods with no Nominated event that the case's first round placed (``_seen_first``,
    never named by its "could not schedule pod" line) but that are pending at the end,
    while every NodeClaim of that round launched and a node of that round (or one from
    before the batch) holds a pod Karpenter did not plan there (``_intruded``):
    kube-scheduler took their room."""
    first = _first_round(trace)
    claims = [c for c in trace.claims if trace.rounds.get(c) == first]
    if not claims or not all(trace.claim_node.get(c) for c in claims):
        return []
    nodes = {trace.claim_node[c] for c in claims} | trace.existing_nodes
    if not any(_intruded(trace, n) for n in nodes):
        return []
    return [
        p
        for p, node in trace.bound.items()
        if not node
        and p not in trace.nominated
        and trace.failed.get(p, first + 1) > first
        and _seen_first(trace, p)
    ]


def _intruded(trace: Trace, node: str) -> bool:
    """``node`` holds a batch pod nominated to another NodeClaim's node or one Karpenter
    could not schedule."""
    for pod, bound in trace.bound.items():
        nominated = trace.nominated.get(pod)
        if bound == node and nominated is not None and trace.claim_node.get(nominated) != node:
            return True
        if bound == node and nominated is None and pod in trace.failed:
            return True
    return False


def _provisioned_again(trace: Trace, claim: str) -> bool:
    """``claim`` holds only displaced pods: some pod is bound to its node, none was
    nominated to it (a pod nominated again gets no new event), and each was nominated to
    another NodeClaim or never left out by Karpenter (a pod an earlier round could not
    schedule is provisioned for the first time, its event perhaps rate-limited away)."""
    node = trace.claim_node.get(claim, "")
    pods = [p for p, n in trace.bound.items() if node and n == node]
    return bool(pods) and all(_displaced_there(trace, p, claim) for p in pods)


def _emptied(trace: Trace, claim: str) -> bool:
    """``claim`` launched, yet no batch pod is bound to its node and none is nominated to
    it: kube-scheduler did not bind the pods Karpenter made it for there. Of a round after
    the case's first, its pod was bound elsewhere once it was made; in a batch that
    deletes nothing, room elsewhere opens for such a pod only when kube-scheduler moves
    pods off the nodes Karpenter planned for them, so the round answers a race
    (gen-1616-10: the first round made Joiner's five NodeClaims for all twelve pods; the
    next made one more for a pod that kube-scheduler then bound to a node of the first
    round, and it stayed empty). Of the first round, its pods went to other nodes of the
    round or stayed pending (gen-1919-14: kube-scheduler bound two pods of a zone-spread
    group to one c-2x, the other c-2x planned for them kept none, and the two pods that
    needed a partner of that group on their node stayed pending). Karpenter names at most
    five pods per "found provisionable pod(s)" line, so which pods a NodeClaim was made
    for is not in the log."""
    node = trace.claim_node.get(claim, "")
    return (
        bool(node)
        and not any(n == node for n in trace.bound.values())
        and claim not in trace.nominated.values()
    )


def emptied(trace: Trace) -> list[str]:
    """The case's new NodeClaims (of a known round) that launched and ended empty
    (``_emptied``): each shows a race even where no pod's event or timing does
    (gen-1515-19: the first round made Joiner's one NodeClaim for all six pods, the next
    one more for a 100m pod, which kube-scheduler bound to the first round's node)."""
    return sorted(c for c in trace.claims if c in trace.rounds and _emptied(trace, c))


def _displaced_there(trace: Trace, pod: str, claim: str) -> bool:
    """``pod`` on ``claim``'s node was planned elsewhere: nominated to another NodeClaim,
    or without an event, never left out by Karpenter and not known to have come after the
    case's first round (``_late``)."""
    nominated = trace.nominated.get(pod)
    if nominated is not None:
        return nominated != claim
    return pod not in trace.failed and not _late(trace, pod)


def first_decision(trace: Trace) -> Side:
    """Karpenter's first decision for the batch: the NodeClaims created in rounds before the
    first one, after the case's first round, that provisioned a displaced pod again
    (``_provisioned_again``) or made a NodeClaim that ended empty (``_emptied``), or only
    the first round's when one of its NodeClaims ended empty or a pod it placed lost its
    room (``_left_pending_by_time``); pending,
    the batch pods it left out: neither nominated to one of its NodeClaims nor bound to a
    node that existed before, and either not bound to one of its nodes or bound there by
    kube-scheduler after Karpenter could not schedule them (a pod bound there with neither
    event nor failure counts as placed: its event may have been rate-limited away). A
    DaemonSet's pod is never part of the decision (``Trace.daemon_pods``; Joiner's side
    leaves it out too, ``compare_with_plan``): Karpenter reserves its room on its node,
    and one left pending lost that room to pods kube-scheduler bound there (gen-2222-15)."""
    first = _first_round(trace)
    again = [
        trace.rounds[c]
        for c in trace.claims
        if trace.rounds.get(c, first) > first
        and (_provisioned_again(trace, c) or _emptied(trace, c))
    ]
    if _left_pending_by_time(trace) or any(
        trace.rounds.get(c) == first and _emptied(trace, c) for c in trace.claims
    ):
        # a pod the first round placed lost its room, or a NodeClaim of that round kept
        # none of its pods: later rounds answer the race
        again.append(first + 1)
    cutoff = min(again, default=None)
    kept = [c for c in trace.claims if cutoff is None or trace.rounds.get(c, first) < cutoff]
    nodes = {trace.claim_node[c] for c in kept if trace.claim_node.get(c)}
    left_out = {p for p, r in trace.failed.items() if cutoff is None or r < cutoff}
    placed = {
        p
        for p, c in trace.nominated.items()
        if c in kept and not _nominated_after_decision(trace, p, c, cutoff)
    }
    placed |= {p for p, n in trace.bound.items() if n in trace.existing_nodes}
    placed |= {p for p, n in trace.bound.items() if n in nodes and p not in left_out}
    # listed by the first round and never left out: it placed them (their events lost)
    placed |= {p for p in trace.bound if p not in left_out and _seen_first(trace, p)}
    return Side(
        claims=[trace.claims[c] for c in sorted(kept)],
        pending=sorted(p for p in trace.bound if p not in placed and p not in trace.daemon_pods),
    )


def _nominated_after_decision(trace: Trace, pod: str, claim: str, cutoff: int | None) -> bool:
    """``pod``'s nomination to ``claim`` came after the first decision, which ends before
    round ``cutoff``: the decision's last round could not schedule ``pod``, and ``claim``
    is of that round or an earlier one. A round places a pod or fails it, never both, so
    a later round, ``cutoff`` or after, nominated it to ``claim`` as an existing node
    (gen-1919-10: round 2 could not schedule two pods under minValues and made a c-2x for
    another; round 3 nominated the two to that c-2x, where minValues no longer applies,
    and made one more NodeClaim). Karpenter's events do not say which round sent them, so
    a pod failed earlier in the decision keeps its nomination as placed."""
    failed = trace.failed.get(pod)
    return cutoff is not None and failed == cutoff - 1 and trace.rounds.get(claim, cutoff) <= failed


def compare_with_plan(
    case: Case, trace: Trace | None, joiner: Side
) -> tuple[Side | None, list[str] | None]:
    """Karpenter's first decision and what differs between Joiner and it, when ``trace``
    shows a race; (None, None) without a trace or a race."""
    if trace is None or not (race(trace) or emptied(trace)):
        return None, None
    first = first_decision(trace)
    decided = joiner.as_decided()
    decided.pending = [p for p in decided.pending if p not in trace.daemon_pods]
    return first, compare(case, first, decided)


def decisions(metrics_text: str, pools: set[str]) -> Counter[tuple[str, str]]:
    """``karpenter_voluntary_disruption_decisions_by_nodepool_total`` of ``pools`` as
    (reason, consolidation type) counts."""
    out: Counter[tuple[str, str]] = Counter()
    for line in metrics_text.splitlines():
        if not line.startswith("karpenter_voluntary_disruption_decisions_by_nodepool_total{"):
            continue
        labels = dict(_LABEL.findall(line))
        if labels.get("nodepool") in pools:
            value = float(line.rsplit(" ", 1)[1])
            out[(labels.get("reason", ""), labels.get("consolidation_type", ""))] += int(value)
    return out


def method_of(reason: str, consolidation_type: str) -> str:
    """Karpenter's method name from a decision's reason and consolidation type."""
    if reason == "empty":
        return "Emptiness"
    if reason == "drifted":
        return "Drift"
    return "MultiNodeConsolidation" if consolidation_type == "multi" else "SingleNodeConsolidation"


def karpenter_disrupted(
    cluster: Cluster,
    case: Case,
    before: Snapshot,
    log: Path,
    log_offset: int,
    metrics_delta: Counter[tuple[str, str]],
) -> Side:
    """What Karpenter's disruption did to the case's pre-change nodes since the change: its
    "disrupting node(s)" commands naming one of them (reason and nodes), the NodeClaims it
    launched meanwhile (even ones gone again), and the methods from its per-NodePool
    decision counter."""
    pre_nodes = set(before.node_of_claim.values())
    reasons: list[str] = []
    removed: set[str] = set()
    text = log.read_bytes()[log_offset:].decode(errors="replace")
    for line in text.splitlines():
        if "disrupting node(s)" not in line:
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        nodes = {str((d.get("Node") or {}).get("name")) for d in entry.get("disrupted-nodes") or []}
        if not nodes & pre_nodes:
            continue
        m = _REASON.search(line)
        reasons.append(_normalise_reason(m.group(1)) if m else "?")
        removed |= nodes & pre_nodes
    now = _claims_of(case, cluster.nodeclaims())
    removed |= {before.node_of_claim[n] for n in before.claims if n not in now}
    new = [
        c
        for n, c in _claims_of(case, list(cluster.seen.values())).items()
        if n not in before.claims
    ]
    methods = sorted(
        method_of(r, t) for (r, t), n in metrics_delta.items() for _ in range(n) if r != "empty"
    )
    if "Empty" in reasons:
        methods.append("Emptiness")
    return Side(
        claims=[
            ("", *_claim_tuple(c)[1:]) for c in new if c["metadata"]["name"] in _replacements(text)
        ],
        removed=sorted(removed),
        reasons=reasons,
        methods=methods,
    )


def _replacements(log_text: str) -> set[str]:
    """NodeClaims Karpenter launched as disruption replacements (its "created nodeclaim"
    lines carry no reason, so every NodeClaim created after the change counts)."""
    return set(_CREATED.findall(log_text))


def _normalise_reason(reason: str) -> str:
    return {"empty": "Empty", "underutilized": "Underutilized", "drifted": "Drifted"}.get(
        reason.lower(), reason
    )
