"""The Cluster Autoscaler baseline: CA's control loop over Auto Scaling groups, in virtual time.

One scan every ``scan_interval_s`` (CA ``RunOnce``), skipped while nothing changed and no
timer is due:

1. **Provision timeouts.** A group with fewer registered nodes than desired for
   ``max_node_provision_time_s`` has failed: CA drops the missing nodes (desired = registered,
   unregistered instances deleted) and backs the group off (5 min, doubling to 30 min, reset
   after 3 h without failure).
2. **Scale-up.** Pending pods that fit neither Ready nodes nor the upcoming ones (desired
   minus Ready, as template nodes) are packed onto new template nodes of each group not in
   backoff, with ``joiner.scheduling.Scheduler`` (CA's binpacking estimator over the real
   predicates); the expander picks one option and that group's desired capacity grows by the
   estimate; with ``--balance-similar-node-groups`` the estimate is split across the groups
   similar to the chosen one that could take the pods, smallest first (CA
   ``nodegroupset.BalanceScaleUpBetweenGroups``). The fit check chooses nodes as CA's
   ``FilterOutSchedulable`` does (``scheduling.FirstFit``): filters only, a pod's node from
   the last check first (its hint), else the first node that passes, the walk starting just
   after the node the previous search found; once a pod fails, a pod alike to it (same
   template) is not searched for again in that check, only its hint is tried (CA
   ``SimilarPodsScheduling``); old hints drop after every scan that ran, pending pods or
   not. The walk is over the snapshot's order (Ready
   nodes by name, then the upcoming ones, named per group and index so a hint to one
   survives while it is upcoming) where CA walks its own snapshot's list.
3. **Scale-down**, only when there was no scale-up in this scan. A Ready node whose
   ``max(cpu, memory)`` requests over allocatable (DaemonSet pods included) is under the
   threshold is *unneeded*; after ``scale_down_unneeded_time_s``, and not within the
   delays after an add, a delete or a failure, up to ``max_scale_down_parallelism`` nodes are
   removed at once, deletions in progress included, empty ones first and of the others up to
   ``max_drain_parallelism`` (CA 1.36 ``budgets.CropNodes``), when every pod is replicated,
   fits elsewhere (simulated) and its PodDisruptionBudgets allow the eviction. A removed
   node is drained through the Eviction API and its group's desired capacity decremented.
   CA's drain rules (``utils/drain``, ``simulator/drain.go``) block a node with a pod
   annotated ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``, a kube-system pod
   without a PDB (``--skip-nodes-with-system-pods``), a pod with local storage
   (``--skip-nodes-with-local-storage``) or a bare pod, unless the pod is annotated
   ``safe-to-evict: "true"``; a node annotated
   ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`` is never removed.

The ASGs themselves (launch activities, AZ balancing, the mixed-instances policy, replacing
lost instances, Capacity Rebalancing) are ``asg.AutoScalingGroups``; CA hears of a lost
instance only through the pending pods (kubernetes/autoscaler#4071).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels, quantity
from joiner.api.clock import Clock
from joiner.api.quantity import Resources
from joiner.api.timeline import Timeline
from joiner.cloudprovider.events import REBALANCE_RECOMMENDATION, CloudEvent
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.termination.controller import Terminator, cordon
from joiner.scheduling import (
    BoundPod,
    CreationTieScheduler,
    ExistingNode,
    FirstFit,
    PodRequest,
    SchedulingInput,
)
from joiner.scheduling.daemonsets import overhead_on_node
from joiner.sim.baseline.asg import AutoscalerStats, AutoScalingGroups
from joiner.sim.baseline.estimator import TEMPLATE_STATIC_PODS, Estimate, Estimator
from joiner.sim.baseline.expander import Expander, Option
from joiner.sim.baseline.groups import NodeGroup
from joiner.sim.baseline.limits import ClusterLimits, Usage, allowed_nodes, removal_allowed
from joiner.sim.baseline.limits import describe as _limits_text
from joiner.sim.baseline.pending import all_new, old_enough
from joiner.sim.baseline.scaledown import movable, unblocks_at, utilisation
from joiner.sim.baseline.settings import AutoscalerSettings
from joiner.state.cluster import ClusterState, Node, NodeClaim, Pod
from joiner.state.snapshot import pod_requests, ready_snapshot

log = logging.getLogger(__name__)

#: Timeline kinds the baseline adds.
SCALE_UP = "scaleUp"
SCALE_DOWN = "scaleDown"
PROVISION_TIMEOUT = "provisionTimeout"
#: CA ``--expendable-pods-priority-cutoff`` default: lower-priority pods are expendable.
EXPENDABLE_PODS_PRIORITY_CUTOFF = -10


@dataclass
class _Scan:
    """What one scan needs repeatedly."""

    existing: list[ExistingNode] = field(default_factory=list)
    bound: list[BoundPod] = field(default_factory=list)
    #: Nodes, cores and memory of the Ready and upcoming nodes (the cluster-wide limits').
    usage: Usage = field(default_factory=Usage)
    #: Ready nodes (``--max-nodes-total`` stops every scale-up at this many).
    ready: int = 0


class ClusterAutoscaler:
    """CA plus the ASGs it drives; ``start`` schedules the scans, ``wake`` notes a change."""

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        lifecycle: Lifecycle,
        clock: Clock,
        rng: random.Random,
        terminator: Terminator,
        timeline: Timeline,
        settings: AutoscalerSettings,
        groups: Sequence[NodeGroup],
    ) -> None:
        self._state = state
        self._clock = clock
        self._terminator = terminator
        self._timeline = timeline
        self.settings = settings
        self.groups = list(groups)
        self._by_name = {g.name: g for g in self.groups}
        self.stats = AutoscalerStats()
        self._asgs = AutoScalingGroups(
            state, cloud, lifecycle, clock, rng, terminator, settings, self.stats
        )
        self._unneeded: dict[str, float] = {}
        #: Each node's last utilisation with what it was computed from (the node, its
        #: allocatable and its pods, compared by identity): a scan recomputes only the
        #: nodes whose pods changed since.
        self._util: dict[str, tuple[Node, Resources, list[Pod], float]] = {}
        self._removing: set[str] = set()
        #: Of those, the ones drained (not empty when chosen): ``--max-drain-parallelism``.
        self._draining: set[str] = set()
        self._scheduler = CreationTieScheduler()  # CA's estimator order, not Karpenter's ties
        self._estimator = Estimator(self._scheduler)
        #: The fit check's hints and rotating start, kept across scans as CA keeps them.
        self._first_fit = FirstFit()
        self._last_scale_up_s = -math.inf
        self._last_delete_s = -math.inf
        self._last_failure_s = -math.inf
        self._seen: tuple[int, ...] | None = None
        self._next_due_s = 0.0
        self._end_s = 0.0
        self._expander = Expander(settings, rng, self._pod_requests)
        #: Whether a pod belongs to a controller that recreates it (CA will not remove a
        #: node running a bare pod); the runtime knows its controllers.
        self.replicated: Callable[[Pod], bool] = lambda _pod: True
        terminator.on_terminated.append(self._terminated)

    def describe(self) -> dict[str, Any]:
        """The summary's ``policy`` block: name, every parameter, node groups, counters."""
        params = self.settings.parameters()
        params["nodeGroups"] = [
            {
                "name": g.name,
                "nodePool": g.spec.nodepool,
                "instanceTypes": list(g.spec.instance_types),
                "onDemandBaseCapacity": g.spec.on_demand_base,
                "onDemandPercentageAboveBaseCapacity": g.spec.on_demand_percentage,
                "spotAllocationStrategy": g.spec.spot_allocation_strategy,
                "onDemandAllocationStrategy": g.spec.on_demand_allocation_strategy,
                "minSize": g.spec.min_size,
                "maxSize": g.spec.max_size,
                "zones": list(g.zones),
            }
            for g in self.groups
        ]
        st = self.stats
        return {
            "name": "cluster-autoscaler",
            "parameters": params,
            "stats": {
                "scans": st.scans,
                "scansSkipped": st.scans_skipped,
                "scaleUps": st.scale_ups,
                "nodesRequested": st.nodes_requested,
                "launches": st.launches,
                "launchFailures": st.launch_failures,
                "asgReplacements": st.replacements,
                "scaleDowns": st.scale_downs,
                "provisionTimeouts": st.provision_timeouts,
            },
        }

    # -- the loop --------------------------------------------------------------------------

    def start(self, end_s: float) -> None:
        """Schedule scans from t=0 to ``end_s``; groups below ``min_size`` grow at once.
        The NodeClaims running at the start (``sim.running.adopt``) join their groups
        first (``adopt_running``)."""
        self._end_s = end_s
        for name in self.adopt_running():
            log.info("running nodeclaim outside every node group claim=%s", name)
        for g in self.groups:
            if g.desired < g.spec.min_size:
                self._set_desired(g, g.spec.min_size)
        self._clock.after(0.0, self._tick, label="ca-scan")

    def adopt_running(self) -> list[str]:
        """Make each live NodeClaim no group owns (adopted from the running cluster) a member
        of the group that would have launched it: the group of its NodePool whose
        instance types include its type, whose zones include its zone and whose capacity
        type may be its (a group with a spot share for spot, one with an on-demand share or
        base otherwise; the first such group in CA's order: spot groups first), so CA
        counts it and can scale it down, as CA does with
        an ASG's running instances. Returns the claims no group fits (they stay, outside
        CA's groups, as static capacity does)."""
        left: list[str] = []
        for claim in sorted(self._state.live_nodeclaims(), key=lambda c: c.name):
            if self._asgs.owner(claim.name) is not None or claim.instance is None:
                continue
            g = self._group_of(claim)
            if g is None:
                left.append(claim.name)
            else:
                self._asgs.adopt(g, claim)
        return left

    def _group_of(self, claim: NodeClaim) -> NodeGroup | None:
        """The first group that could have launched ``claim``'s instance (``adopt_running``)."""
        assert claim.instance is not None
        offering = claim.instance.offering
        spot = offering.capacity_type == "spot"
        for g in self.groups:
            if (
                g.pool.name == claim.nodepool
                and claim.instance.instance_type.name in g.spec.instance_types
                and offering.zone in g.zones
                and (
                    g.spec.on_demand_percentage < 100
                    if spot
                    else g.spec.on_demand_percentage > 0 or g.spec.on_demand_base > 0
                )
            ):
                return g
        return None

    def wake(self) -> None:
        """Something changed (a pod became pending, a node went away): scan at the next tick."""
        self._seen = None

    def _tick(self) -> None:
        now = self._clock.now()
        fingerprint = self._state.change_key()
        if fingerprint == self._seen and now < self._next_due_s:
            self.stats.scans_skipped += 1
        else:
            self._seen = fingerprint
            self._scan()
            # The scan itself may have changed state (desired capacity, drains).
            self._seen = self._state.change_key()
        nxt = now + self.settings.scan_interval_s
        if nxt <= self._end_s:
            self._clock.after(nxt - now, self._tick, label="ca-scan")

    def _scan(self) -> None:
        self.stats.scans += 1
        now = self._clock.now()
        self._next_due_s = math.inf
        self._check_provision_timeouts(now)
        scaled = self._scale_up(now)
        if scaled:
            # One group per scan: pods the chosen group did not take wait for the next one.
            self._due(now + self.settings.scan_interval_s)
        # Unneeded nodes are tracked every scan; removal only in a scan without scale-up.
        self._scale_down(now, allow_removal=not scaled)
        for g in self.groups:
            if g.waiting_since_s is not None:
                self._due(g.waiting_since_s + self.settings.max_node_provision_time_s)

    def _due(self, at_s: float) -> None:
        self._next_due_s = min(self._next_due_s, at_s)

    # -- provision timeouts and backoff ----------------------------------------------------

    def _registered(self, g: NodeGroup) -> list[NodeClaim]:
        return [
            c
            for c in (self._state.nodeclaims[m] for m in g.members)
            if c.registered_at_s is not None
        ]

    def _check_provision_timeouts(self, now: float) -> None:
        for g in self.groups:
            registered = len(self._registered(g)) if g.desired > 0 else 0
            if registered >= g.desired:
                g.waiting_since_s = None
                continue
            if g.waiting_since_s is None:
                g.waiting_since_s = now
                continue
            if now - g.waiting_since_s < self.settings.max_node_provision_time_s:
                continue
            # CA: the nodes never registered; drop them and back the group off.
            missing = g.desired - registered
            self.stats.provision_timeouts += 1
            self._timeline.record(
                PROVISION_TIMEOUT, node=g.name, detail=f"{missing} node(s) never registered"
            )
            for name in list(g.members):
                claim = self._state.nodeclaims[name]
                if claim.registered_at_s is None:
                    self._terminator.delete_unregistered(claim, "max-node-provision-time")
                    self._asgs.forget(g, name)
            g.desired = registered
            g.launching = 0
            g.waiting_since_s = None
            self._back_off(g, now)

    def _back_off(self, g: NodeGroup, now: float) -> None:
        s = self.settings
        if g.last_failure_s is None or now - g.last_failure_s > s.node_group_backoff_reset_s:
            g.backoff_s = s.initial_node_group_backoff_s
        else:
            g.backoff_s = min(
                max(g.backoff_s, s.initial_node_group_backoff_s) * 2, s.max_node_group_backoff_s
            )
        g.last_failure_s = now
        g.backoff_until_s = now + g.backoff_s
        self._last_failure_s = now

    # -- scale-up --------------------------------------------------------------------------

    def _ready_usage(self) -> Usage:
        """Nodes, cores and memory of the Ready nodes, for the cluster-wide limits; none
        counted while the limits are CA's defaults (nothing to check them against)."""
        usage = Usage()
        if self.settings.limits.bounded:
            for node in self._state.ready_nodes():
                usage = usage.plus(node.capacity)
        return usage

    def _snapshot(self) -> _Scan:
        existing, bound = ready_snapshot(self._state)  # cached while nothing changed
        scan = _Scan(existing=list(existing), bound=list(bound))
        scan.usage = self._ready_usage()
        scan.ready = scan.usage.nodes
        # A template node carries the DaemonSet pods that would run on it and CA's static
        # kube-proxy pod (``estimator.TEMPLATE_STATIC_PODS``).
        daemonsets = [self._state.daemonsets[k] for k in sorted(self._state.daemonsets)]
        daemonsets += TEMPLATE_STATIC_PODS
        for g in self.groups:
            ready = sum(
                1
                for m in g.members
                if (n := self._node(m)) is not None and n.ready and not n.deleting
            )
            upcoming = g.desired - ready
            if upcoming <= 0:
                continue
            if self.settings.limits.bounded:
                scan.usage = scan.usage.plus(g.template.capacity, upcoming)
            node_labels = g.template_labels()
            taints = g.pool.taints
            alloc = g.template.allocatable
            available = quantity.subtract(alloc, overhead_on_node(node_labels, taints, daemonsets))
            for i in range(upcoming):
                scan.existing.append(
                    ExistingNode(
                        name=f"upcoming-{g.name}-{i}",
                        labels=tuple(
                            sorted(
                                {**node_labels, labels.HOSTNAME: f"upcoming-{g.name}-{i}"}.items()
                            )
                        ),
                        taints=taints,
                        available=available,
                        initialized=False,
                        allocatable=alloc,
                    )
                )
        return scan

    def _scale_up(self, now: float) -> bool:
        # CA ``podlistprocessor/filter_out_expendable.go``: pods below
        # ``--expendable-pods-priority-cutoff`` (-10) never trigger a scale-up, and a pod
        # waiting for its preemption victims (nominated to a node) is not unschedulable.
        # A pod whose claims cannot be used fits no node, new or not: CA's simulated
        # scheduling runs kube-scheduler's VolumeBinding filter (Kubernetes
        # pkg/scheduler/framework/plugins/volumebinding/volume_binding.go
        # ``VolumeBinding.PreFilter``).
        self._volume_waits()
        pending = [
            p
            for p in self._state.placeable_pending_pods()
            if p.nominated_node_name is None
            and p.template.priority_value >= EXPENDABLE_PODS_PRIORITY_CUTOFF
        ]
        if not pending:
            # CA's FilterOutSchedulable runs every loop and drops old hints even when no
            # pod is unschedulable (``filterOutSchedulableByPacking``).
            self._first_fit.drop_old()
            return False
        scan = self._snapshot()
        state = self._state
        requests = pod_requests(state, pending)
        daemonsets = tuple(state.daemonsets[k] for k in sorted(state.daemonsets))
        fits = self._scheduler.solve(
            SchedulingInput(
                pods=requests,
                existing=tuple(scan.existing),
                bound_pods=tuple(scan.bound),
                daemonsets=daemonsets,
                mode="kube-scheduler",
                first_fit=self._first_fit,
            )
        )
        self._first_fit.drop_old()
        placed = {uid for uid, _ in fits.existing_placements}
        left = old_enough(
            state,
            tuple(r for r in requests if r.uid not in placed),
            now,
            self.settings.new_pod_scale_up_delay_s,
            self._due,
        )
        limits = self.settings.limits
        if not left:
            return False
        if limits.max_nodes_total and scan.ready >= limits.max_nodes_total:
            self._unschedulable(left, f"cluster-wide limit reached ({_limits_text(limits)})")
            return False
        if all_new(state, left, now):
            # CA waits one loop for more pods, and removes nothing in it (``RunOnce``).
            return True
        candidates, limited = self._scale_up_candidates(now, scan.usage)
        estimates = self._estimator.estimate(
            candidates, left, tuple(scan.bound), daemonsets + TEMPLATE_STATIC_PODS
        )
        options = _options(candidates, estimates, limits, scan.usage)
        if not options:
            self._unschedulable(
                left,
                f"cluster-wide limit reached ({_limits_text(limits)})"
                if limited
                else "no node group can take this pod (Cluster Autoscaler)",
            )
            return False
        best = self._expand(options)
        capped = allowed_nodes(limits, scan.usage, best.group.template.capacity, best.nodes)
        if capped <= 0:
            self._unschedulable(left, f"cluster-wide limit reached ({_limits_text(limits)})")
            return False
        if capped < best.nodes:
            # The pods the capped nodes take (CA keeps the option's pods; the timeline says
            # how many the nodes asked for serve).
            claims = estimates[best.group.name].nodes[:capped]
            best = Option(best.group, capped, tuple(uid for c in claims for uid in c))
        self.stats.scale_ups += 1
        self.stats.nodes_requested += best.nodes
        self._last_scale_up_s = now
        for g, nodes in self._balance(best, options):
            self._timeline.record(
                SCALE_UP,
                node=g.name,
                detail=f"+{nodes} for {len(best.pods)} pod(s)",
            )
            log.info("scale-up group=%s nodes=%d pods=%d", g.name, nodes, len(best.pods))
            self._set_desired(g, g.desired + nodes)
        return True

    def _scale_up_candidates(self, now: float, usage: Usage) -> tuple[list[NodeGroup], bool]:
        """The groups a scale-up may grow: out of backoff (else a wake-up is due when it
        ends), below their maximum size, with room for one node under the cluster-wide
        limits; and whether a limit left some group out."""
        candidates = []
        limited = False
        for g in self.groups:
            if g.backoff_until_s > now:
                self._due(g.backoff_until_s)
                continue
            if g.spec.max_size - g.desired <= 0:
                continue
            if allowed_nodes(self.settings.limits, usage, g.template.capacity, 1):
                candidates.append(g)
            else:
                limited = True
        return candidates, limited

    def _volume_waits(self) -> None:
        """Give each pending pod whose claims cannot be used that reason
        (``ClusterState.volume_wait``, ``joiner plan``'s), for the summary."""
        if not self._state.volume_waits:
            return
        for p in self._state.pending_pods():
            why = self._state.volume_wait(p)
            if why is not None:
                p.unschedulable_reason = why

    def _unschedulable(self, requests: Sequence[PodRequest], reason: str) -> None:
        """Give each of these pods that has no reason yet ``reason`` (the summary's
        unschedulable reasons)."""
        for r in requests:
            pod = self._state.pods[r.uid]
            if pod.unschedulable_reason is None:
                pod.unschedulable_reason = reason

    def _balance(self, best: Option, options: list[Option]) -> list[tuple[NodeGroup, int]]:
        return self._expander.balance(best, options)

    def _expand(self, options: list[Option]) -> Option:
        """Apply the expander chain (``expander.Expander.expand``)."""
        return self._expander.expand(options)

    def _pod_requests(self, uids: Sequence[str]) -> tuple[int, int]:
        cpu = mem = 0
        for uid in uids:
            r = self._state.pods[uid].template.requests
            cpu += r.get(quantity.CPU, 0)
            mem += r.get(quantity.MEMORY, 0)
        return cpu, mem

    # -- the ASG side ----------------------------------------------------------------------

    def _set_desired(self, g: NodeGroup, desired: int) -> None:
        self._asgs.set_desired(g, desired)

    def _node(self, claim_name: str) -> Node | None:
        return self._asgs.node(claim_name)

    def instance_gone(self, claim: NodeClaim) -> None:
        """An instance of a group is gone (reclaimed, drained by the interruption handler,
        or removed by CA): the ASG replaces it unless CA lowered the desired capacity."""
        g = self._asgs.owner(claim.name)
        if g is None:
            return
        self._asgs.forget(g, claim.name)
        self._unneeded.pop(claim.node_name or claim.name, None)
        if claim.name in self._removing:
            self._removing.discard(claim.name)
            self._draining.discard(claim.name)
            return
        self._asgs.replace_lost(g, claim)
        self.wake()

    def _terminated(self, node: Node) -> None:
        claim = self._state.claim_of(node)
        if claim is not None:
            self.instance_gone(claim)

    def handle(self, event: CloudEvent) -> None:
        """Cloud events the ASG acts on itself: a rebalance recommendation (Capacity
        Rebalancing). Interruption warnings are the termination handler's job."""
        if event.kind != REBALANCE_RECOMMENDATION or not self.settings.capacity_rebalance:
            return
        for claim in self._state.live_nodeclaims():
            if claim.instance is not None and claim.instance.instance_id in event.instance_ids:
                self.rebalance(claim)

    def rebalance(self, claim: NodeClaim) -> None:
        """A rebalance recommendation for ``claim`` (``asg.AutoScalingGroups.rebalance``)."""
        self._asgs.rebalance(claim)

    def node_ready(self, claim: NodeClaim) -> None:
        """A node turned Ready: scan again; Capacity Rebalancing drains the at-risk nodes it
        replaces (``asg.AutoScalingGroups.node_ready``)."""
        self.wake()
        self._asgs.node_ready(claim)

    # -- scale-down ------------------------------------------------------------------------

    def _scale_down(self, now: float, *, allow_removal: bool) -> None:
        s = self.settings
        candidates = self._scale_down_candidates(now)
        if not candidates:
            return
        if not allow_removal:
            self._due(now + s.scan_interval_s)
            return
        blocked_until = max(
            self._last_scale_up_s + s.scale_down_delay_after_add_s,
            self._last_delete_s + s.delay_after_delete_s,
            self._last_failure_s + s.scale_down_delay_after_failure_s,
        )
        if now < blocked_until:
            self._due(blocked_until)
            return
        candidates.sort(key=lambda c: (c[0], c[1]))
        shrink: dict[str, int] = {}
        usage = [self._ready_usage()]

        def room(g: NodeGroup, node: Node) -> bool:
            """The group stays at or above its minimum size, the cluster at or above the
            cores and memory minimums (CA ``scaledown/resource``)."""
            return g.desired - shrink.get(g.name, 0) > g.spec.min_size and removal_allowed(
                self.settings.limits, usage[0], node.capacity
            )

        empty = [c for c in candidates if not any(not p.daemon for p in c[4])]
        drained = [c for c in candidates if c not in empty]
        # CA ``budgets.ScaleDownBudgetProcessor.CropNodes``: deletions still in progress
        # count against both budgets; empty nodes first, then drains from what is left.
        parallelism = s.max_scale_down_parallelism - len(self._removing)
        drains = s.max_drain_parallelism - len(self._removing & self._draining)
        removed = 0
        for _, m, node, g, _pods in empty:
            if removed >= parallelism:
                break
            if not room(g, node):
                continue
            usage[0] = usage[0].plus(node.capacity, -1)
            shrink[g.name] = shrink.get(g.name, 0) + 1
            self._remove(m, node, g, "empty")
            removed += 1
        budget = min(parallelism - removed, drains)
        chosen: set[str] = set()
        for _, m, node, g, pods in drained:
            if len(chosen) >= budget:
                break
            workload = [p for p in pods if not p.daemon]
            wake = unblocks_at(workload, self._state, s)
            if wake is not None and wake >= now:  # CA: blocked until strictly after it
                self._due(wake)
            if room(g, node) and movable(
                node,
                workload,
                self._state,
                self.settings,
                self.replicated,
                self._scheduler,
                now_s=now,
                also_removed=frozenset(chosen),
            ):
                usage[0] = usage[0].plus(node.capacity, -1)
                shrink[g.name] = shrink.get(g.name, 0) + 1
                chosen.add(node.name)
                self._draining.add(m)
                self._remove(
                    m, node, g, f"utilisation under {s.scale_down_utilization_threshold:g}"
                )
        if removed or chosen:
            self._due(now + s.delay_after_delete_s)  # the other candidates' turn

    def _scale_down_candidates(
        self, now: float
    ) -> list[tuple[float, str, Node, NodeGroup, list[Pod]]]:
        """``(unneeded since, claim name, node, group, its pods)`` of each group member
        unneeded for ``scaleDownUnneededTime``: Ready, not deleting, at risk or
        scale-down-disabled, and under the utilisation threshold. Tracks when each became
        unneeded (forgetting the others) and asks to be woken when the next one is due."""
        s = self.settings
        candidates: list[tuple[float, str, Node, NodeGroup, list[Pod]]] = []
        for g in self.groups:
            for m in g.members:
                node = self._node(m)
                if (
                    node is None
                    or not node.ready
                    or node.deleting
                    or m in g.at_risk
                    or node.scale_down_disabled
                ):
                    self._unneeded.pop(m, None)
                    continue
                pods = self._state.pods_on(node.name)
                if self._utilisation(node, pods) >= s.scale_down_utilization_threshold:
                    self._unneeded.pop(m, None)
                    continue
                since = self._unneeded.setdefault(m, now)
                if now - since >= s.scale_down_unneeded_time_s:
                    candidates.append((since, m, node, g, pods))
                else:
                    self._due(since + s.scale_down_unneeded_time_s)
        return candidates

    def _utilisation(self, node: Node, pods: list[Pod]) -> float:
        """``scaledown.utilisation(node, pods)``, kept from the last scan while the node, its
        allocatable and its pods (the same pods in the same order) are unchanged."""
        hit = self._util.get(node.name)
        if hit is not None and hit[0] is node and hit[1] is node.allocatable and hit[2] == pods:
            return hit[3]
        value = utilisation(node, pods)
        self._util[node.name] = (node, node.allocatable, pods, value)
        return value

    def _remove(self, claim_name: str, node: Node, g: NodeGroup, why: str) -> None:
        now = self._clock.now()
        self.stats.scale_downs += 1
        self._last_delete_s = now
        self._removing.add(claim_name)
        self._unneeded.pop(claim_name, None)
        g.desired = max(g.spec.min_size, g.desired - 1)
        self._timeline.record(SCALE_DOWN, node=node.name, detail=why)
        node.deleting = True
        cordon(node)
        self._terminator.drain(node, "cluster-autoscaler scale-down")


def _options(
    candidates: list[NodeGroup],
    estimates: Mapping[str, Estimate],
    limits: ClusterLimits,
    usage: Usage,
) -> list[Option]:
    """One expansion option per candidate group whose estimated nodes, capped by its room
    under ``maxSize`` and the cluster's ``maxNodesTotal``, take some pods."""
    options: list[Option] = []
    total_room = limits.max_nodes_total - usage.nodes if limits.max_nodes_total else None
    for g in candidates:
        room = g.spec.max_size - g.desired
        if total_room is not None:
            room = min(room, total_room)
        claims = estimates[g.name].nodes[:room]
        pods = tuple(uid for c in claims for uid in c)
        if pods:
            options.append(Option(g, len(claims), pods))
    return options
