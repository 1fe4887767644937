"""The simulation's runtime: reading this file shows the whole simulated system.

``SimulationRuntime`` wires a scenario into: the virtual clock, cluster state, the simulated
cloud, the controllers (``operator/composition.py``'s ``new_controllers``: the NodeClaim
lifecycle, the provisioner behind its batcher, termination, interruption, disruption,
expiration, node repair), the kube-scheduler and kubelet models as its cluster adapter, and
the workload controllers; ``run`` advances virtual time to the end and
returns the summary.

Event flow: pod created -> batcher trigger and kube-scheduler kick -> (batch window) ->
provisioner pass -> NodeClaims launched -> node registers, DaemonSet pods bind -> node Ready
-> kube-scheduler binds pending pods. Pods still unschedulable, or left pending on the node
planned for them, are retried by a later pass.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from joiner.api import durations, timeline
from joiner.api.manifests import ManifestSet
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.overlay import Overlays
from joiner.cloudprovider.repair import AWS_REPAIR_POLICIES, with_tolerations
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.simulated.market import SpotMarket, market_seed
from joiner.cloudprovider.types import Instance
from joiner.controllers.disruption.history import ALL_NODES, VerdictHistory, explain_names
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.provisioning.buffers import Buffers
from joiner.controllers.termination.pdb import violated
from joiner.faults.experiment import Experiment
from joiner.faults.template import Template
from joiner.operator import run_report
from joiner.operator.composition import ControllerHost, Hooks, Options, Ports, new_controllers
from joiner.operator.workload_wiring import WorkloadControllers
from joiner.scheduling import costopt as packing_costopt
from joiner.scheduling.static import gated
from joiner.sim import windows
from joiner.sim.baseline import (
    CLUSTER_AUTOSCALER,
    COST_OPTIMAL,
    JOINER,
    ClusterAutoscaler,
    build_autoscaler,
)
from joiner.sim.baseline.autoscaler import SCALE_UP
from joiner.sim.clock import SimClock
from joiner.sim.kube_scheduler import KubeScheduler
from joiner.sim.nodes import KubeletModel
from joiner.sim.report import build_summary
from joiner.sim.running import adopt, cluster_state, last_pod_events
from joiner.sim.scenario import Scenario
from joiner.sim.schedules import ScheduleRunner
from joiner.sim.timeline import SimTimeline
from joiner.sim.workloads import (
    JobController,
    PodFactory,
)
from joiner.state.cluster import ClusterState, NodeClaim, Pod

log = logging.getLogger(__name__)

#: Unschedulable pods are retried this long after a pass that could not place them
#: (Karpenter re-triggers on the pod controller's periodic requeue).
RETRY_UNSCHEDULABLE_S = 60.0


@dataclass
class RunResult:
    """What a run leaves behind: the summary document and the final state."""

    summary: dict[str, Any]
    state: ClusterState
    cloud: SimulatedCloudProvider


class SimulationRuntime(ControllerHost):
    """Builds and runs one scenario in virtual time. One instance runs once.

    ``policy`` is ``joiner`` (Karpenter-style provisioning with the scenario's
    ``spec.settings.packing``), ``cost-optimal`` (the same with ``packing: cost-optimal``:
    provisioning and consolidation's replacements both use ``CostOptimalScheduler``) or
    ``cluster-autoscaler`` (the baseline of ``joiner.sim.baseline``: the provisioner is not
    wired, CA's loop and ASGs launch the nodes, the interruption handler behaves as NTH on ASGs).
    """

    def __init__(
        self, scenario: Scenario, catalog: Catalog | None = None, *, policy: str = JOINER
    ) -> None:
        if policy not in (JOINER, COST_OPTIMAL, CLUSTER_AUTOSCALER):
            raise ValueError(f"unknown policy {policy!r}")
        self.policy = policy
        #: Joiner's controllers run (``joiner`` or ``cost-optimal``), not the baseline.
        self.joiner = policy != CLUSTER_AUTOSCALER
        self.packing = packing_costopt.COST_OPTIMAL if policy == COST_OPTIMAL else scenario.packing
        self.scenario = scenario
        self.catalog = catalog or Catalog.load()
        self.clock = SimClock()
        # Independent streams, so adding draws to one model does not shift another's.
        root = random.Random(scenario.seed)
        self.rng_cloud = random.Random(root.getrandbits(64))
        self.rng_names = random.Random(root.getrandbits(64))
        self.rng_boot = random.Random(root.getrandbits(64))
        # The Spot market draws from its own counter-based stream (market_seed); this draw
        # stays so the streams after it keep their seeds.
        self.rng_hazard = random.Random(root.getrandbits(64))
        self.rng_faults = random.Random(root.getrandbits(64))
        self.timeline = SimTimeline(self.clock)
        m = scenario.manifests
        #: What reading the manifests' volumes warned about.
        # Static pools keep their replicas only with the gate on, in Joiner's policies.
        static = scenario.feature_gates.static_capacity and self.joiner
        self.state, self.volume_warnings = _cluster_state(m, static)
        self.cloud = SimulatedCloudProvider(
            self.catalog,
            scenario.region,
            self.clock,
            self.rng_cloud,
            subnets=scenario.subnets,
            security_groups=scenario.security_groups,
            node_classes=m.nodeclasses,
            market=SpotMarket(market_seed(scenario.seed), scenario.hazard, scenario.market),
            reservations=scenario.capacity_reservations
            if scenario.feature_gates.reserved_capacity
            else (),
        )
        self.autoscaler: ClusterAutoscaler | None = None
        self.take(
            new_controllers(
                Ports(
                    self.state,
                    self.cloud,
                    self.clock,
                    self.timeline,
                    scenario.region,
                    self.rng_names,
                    self.cloud.get_instance_types,
                    self.cloud.is_drifted,
                ),
                Options(
                    packing=self.packing,
                    interruption=scenario.interruption,
                    spot_to_spot=scenario.feature_gates.spot_to_spot_consolidation,
                    epoch=scenario.start_time,
                    event_flow=self.joiner,
                    #: Node repair (``NodeRepair`` gate, Joiner's policy only: CA has none).
                    repair=with_tolerations(
                        AWS_REPAIR_POLICIES, dict(scenario.repair_tolerations_s)
                    )
                    if scenario.feature_gates.node_repair and self.joiner
                    else None,
                    static_capacity=static,
                ),
                Hooks(
                    flush=self._flush,
                    unschedulable=self._retry_later,
                    launched=self._launched,
                    changed=self._changed,
                    cluster=self._cluster,
                ),
            )
        )
        self._gated_inputs(scenario)
        if self.joiner:
            self.kube_scheduler.on_bound.append(lambda _pod: self._kick_disruption())
        if policy == CLUSTER_AUTOSCALER:
            self.autoscaler = build_autoscaler(
                self.state,
                self.cloud,
                self.lifecycle,
                self.clock,
                random.Random(root.getrandbits(64)),
                self.terminator,
                self.timeline,
                scenario.autoscaler,
                replicated=lambda pod: pod.owner in self._by_owner,
            )
            self.cloud.event_listeners.append(self.autoscaler.handle)
        self.pods.on_created.append(self._pod_created)
        self.kubelet.on_ready.append(self._node_ready)
        self.cloud.event_listeners.append(self.interruption.handle)
        self.cloud.reclaim_listeners.append(self._reclaimed)
        self.terminator.on_evicted.append(self._gone)
        self.kube_scheduler.on_bound.append(self._bound)
        self._retry_scheduled = False
        #: Pod uid -> names of the NodeClaims nominated for it, from the NodeClaims'
        #: log up to ``_nominated_seen`` (``_room_taken``).
        self._nominated_in: dict[str, list[str]] = {}
        self._nominated_seen = 0
        if self.joiner:
            self.kube_scheduler.on_unplaced.append(self._room_taken)
        workloads = WorkloadControllers(
            scenario, self.state, self.clock, self.pods, lambda _pod: self._kick_disruption()
        )
        self.workloads = workloads
        self.deployments = workloads.deployments
        self._by_owner: dict[str, Any] = workloads.by_owner
        self.hpas = workloads.hpas
        self.jobs = workloads.jobs
        self.cronjobs = workloads.cronjobs
        self._violated: set[str] = set()
        self.pdb_violations = 0
        self.pdb_violation_times: list[float] = []
        self.experiments: list[tuple[float, Experiment]] = [
            (at, self._experiment(t)) for at, t in scenario.faults
        ]
        #: ``--explain``'s nodes (``keep_verdicts``), or None.
        self.explain: tuple[str, ...] | None = None

    def _gated_inputs(self, scenario: Scenario) -> None:
        """The provisioner's inputs behind Karpenter feature gates (Joiner's policy only):
        CapacityBuffers (``CapacityBuffer``) and NodeOverlays (``NodeOverlay``)."""
        m = scenario.manifests
        if scenario.feature_gates.capacity_buffer and self.joiner:
            self.provisioner.buffers = Buffers(m.capacitybuffers, self._live_replicas)
        if scenario.feature_gates.node_overlay and self.joiner and m.nodeoverlays:
            self.provisioner.overlays = Overlays(m.nodeoverlays)

    def keep_verdicts(self, explain: str | Sequence[str]) -> None:
        """Record each node's disruption verdict changes over the run (Joiner's policies;
        the baseline has no disruption controller); the summary's ``explain`` carries those
        of ``explain``: node names or ``history.ALL_NODES`` (``history.explain_names``).
        Decisions do not change.

        Raises:
            InputError: ``explain`` names no node."""
        self.explain = explain_names(explain)
        if self.joiner:
            history = self.disruption.history = VerdictHistory()

            def expired(_claim: NodeClaim, node: str | None) -> None:
                if node is not None:
                    history.record_expired(self.clock.now(), node)

            self.expiration.expired_listeners.append(expired)

    def explained_nodes(self) -> list[str]:
        """The nodes whose verdicts the run recorded (none unless ``keep_verdicts``)."""
        history = self.disruption.history if self.joiner else None
        return history.nodes() if history is not None else []

    def node_names_seen(self) -> set[str]:
        """Names of the nodes of this run: those in the cluster now and those its timeline
        names (scaled down, interrupted, replaced), for either policy. A Cluster Autoscaler
        scale-up entry names a node group, not a node, and is left out."""
        return set(self.state.nodes) | {
            e.node for e in self.timeline.entries if e.node and e.kind != SCALE_UP
        }

    def _explain(self) -> dict[str, Any] | None:
        """The summary's ``explain``: the asked-for nodes' verdict histories, or None."""
        history = self.disruption.history if self.joiner else None
        if self.explain is None or history is None:
            return None
        names = history.nodes() if ALL_NODES in self.explain else list(self.explain)
        return dict(history.to_json(names))

    def _cluster(self, lifecycle: Lifecycle) -> None:
        """The cluster adapter: the kube-scheduler and kubelet models (the kubelet watches
        launches before any controller does); the Terminator evicts by itself."""
        self.kube_scheduler = KubeScheduler(
            self.state, self.clock, preempt=lambda victim, by: self.terminator.preempt(victim, by)
        )
        self.pods = PodFactory(self.state, self.clock)
        self.kubelet = KubeletModel(self.state, self.clock, self.rng_boot, lifecycle, self.pods)

    def _experiment(self, template: Template) -> Experiment:
        return Experiment(
            template,
            self.cloud,
            self.clock,
            self.rng_faults,
            self.timeline,
            self._zone_outage,
            self.scenario.region,
            instance_outage=self._instance_outage,
        )

    def add_experiment(self, template: Template, at_s: float) -> Experiment:
        """Run ``template`` at ``at_s`` as well (``joiner chaos run``)."""
        exp = self._experiment(template)
        self.experiments.append((at_s, exp))
        return exp

    def _instance_outage(self, instance: Instance, until_s: float | None) -> None:
        """A stopped instance: its node is NotReady until ``until_s`` (FIS restarts it), if
        nothing terminated it meanwhile; None: reclaimed now."""
        if until_s is None:
            self.cloud.reclaim(instance.provider_id)
            return
        claim = next(
            (
                c
                for c in self.state.live_nodeclaims()
                if c.instance is not None and c.instance.instance_id == instance.instance_id
            ),
            None,
        )
        node = self.state.node_of_claim(claim) if claim is not None else None
        if node is None or node.deleted_at_s is not None:
            return
        node.ready = False
        node.set_condition("Ready", "Unknown", self.clock.now())
        self.timeline.record("unreachable", node=node.name, detail="instance stopped")

        def restart() -> None:
            alive = {i.instance_id for i in self.cloud.list()}
            if node.deleted_at_s is None and instance.instance_id in alive:
                node.ready = True
                node.set_condition("Ready", "True", self.clock.now())
                self.timeline.record("reachable", node=node.name, detail="instance restarted")
                self.kube_scheduler.kick()

        self.clock.at(until_s, restart, label="instance-restart")
        self._check_pdbs()

    def _zone_outage(self, zones: frozenset[str], until_s: float) -> None:
        """Nodes in ``zones`` are unreachable (NotReady) until ``until_s``."""
        hit = [
            n
            for n in self.state.nodes.values()
            if n.deleted_at_s is None
            and n.ready
            and n.labels.get("topology.kubernetes.io/zone") in zones
        ]
        for n in hit:
            n.ready = False
            n.set_condition("Ready", "Unknown", self.clock.now())
            self.timeline.record("unreachable", node=n.name)

        def restore() -> None:
            for n in hit:
                if n.deleted_at_s is None:
                    n.ready = True
                    n.set_condition("Ready", "True", self.clock.now())
                    self.timeline.record("reachable", node=n.name)
            self.kube_scheduler.kick()

        self.clock.at(until_s, restore, label="zone-outage-end")
        self._check_pdbs()

    def _flush(self) -> None:
        """The batch window closed: Joiner provisions; the baseline only notes the change
        (Cluster Autoscaler acts on its own scan)."""
        if self.autoscaler is not None:
            self.autoscaler.wake()
        else:
            self.provisioner.reconcile()

    def _scheduled_minimum(self, kind: str, target: str, minimum: int) -> None:
        """``spec.schedules`` (``WorkloadControllers.scheduled_minimum``)."""
        if self.workloads.scheduled_minimum(kind, target, minimum, self.provisioner.buffers):
            self.batcher.trigger()

    # -- interruption plumbing -----------------------------------------------------------

    def _launched(self, claim: NodeClaim) -> None:
        for node in claim.replaces:
            self.timeline.record(
                timeline.REPLACEMENT_LAUNCHED,
                node=node,
                detail=claim.name,
            )

    def _changed(self) -> None:
        """Something disruption decisions depend on changed: note it and wake the controller."""
        self.state.touch()
        self._kick_disruption()

    def _live_replicas(self, workload: str) -> int:
        """A workload's current replicas: its live pods not shutting down."""
        return sum(
            1
            for p in self.state.live_pods()
            if p.owner == workload and p.terminating_until_s is None
        )

    def _kick_disruption(self) -> None:
        """Wake Joiner's disruption controller (the baseline has none: CA scales down)."""
        if self.joiner:
            self.disruption.kick()

    def _node_ready(self, claim: NodeClaim) -> None:
        self._changed()
        for node in claim.replaces:
            self.timeline.record(timeline.REPLACEMENT_READY, node=node, detail=claim.name)
        self.interruption.node_ready()
        if self.autoscaler is not None:
            self.autoscaler.node_ready(claim)
        self.kube_scheduler.kick()

    def _bound(self, pod: Pod) -> None:
        controller = self._by_owner.get(pod.owner)
        if isinstance(controller, JobController):
            controller.bound(pod)
        if pod.replaces is not None:
            self.timeline.record(
                timeline.POD_REBOUND,
                node=pod.node_name,
                pod=f"{pod.namespace}/{pod.name}",
                detail=f"replaces {self.state.pods[pod.replaces].name}",
            )

    def _gone(self, pod: Pod) -> None:
        """A pod was evicted or lost: its controller replaces it; budgets are checked."""
        controller = self._by_owner.get(pod.owner)
        if controller is not None:
            controller.replace(pod)
        self._check_pdbs()

    def _check_pdbs(self) -> None:
        now_violated = {f"{p.namespace}/{p.name}" for p in violated(self.state)}
        fresh = len(now_violated - self._violated)
        self.pdb_violations += fresh
        self.pdb_violation_times += [self.clock.now()] * fresh
        self._violated = now_violated

    def _reclaimed(self, instance: Instance) -> None:
        """EC2 took the instance: the node is gone and whatever ran there is lost."""
        now = self.clock.now()
        claim = next(
            (
                c
                for c in self.state.nodeclaims.values()
                if c.instance is not None and c.instance.provider_id == instance.provider_id
            ),
            None,
        )
        if claim is None or claim.deleted_at_s is not None:
            return
        node = self.state.node_of_claim(claim)
        name = node.name if node is not None else claim.name
        self.timeline.record(timeline.RECLAIMED, node=name)
        claim.deleted_at_s = now
        if self.autoscaler is not None:
            self.autoscaler.instance_gone(claim)
        if node is None:
            return
        node.deleted_at_s = now
        for pod in self.state.pods_on(node.name):
            pod.deleted_at_s = now
            if pod.daemon:
                continue
            pod.lost = True
            cut_short = pod.terminating_until_s is not None
            self.timeline.record(
                timeline.POD_LOST,
                node=name,
                pod=f"{pod.namespace}/{pod.name}",
                detail="its shutdown (preStop, grace period) was cut short" if cut_short else "",
            )
            if not cut_short:  # an evicted pod's replacement already exists
                self._gone(pod)
        self._changed()
        self.batcher.trigger()

    def _pod_created(self, pod: Any) -> None:
        if pod.daemon:
            return
        self._changed()
        self.batcher.trigger()
        self.kube_scheduler.kick()

    def _room_taken(self, pending: list[Pod]) -> None:
        """After a kube-scheduler pass: a pod planned onto a NodeClaim whose node is Ready
        but still pending lost its room to pods kube-scheduler bound there instead (it binds
        its own way, not by the plan). Karpenter's pod controller keeps re-triggering the
        provisioner while a pod is provisionable (``provisioning/controller.go``
        ``PodController.Reconcile``: "even if a provisioning loop is successful, the pod may
        require another provisioning loop"); here such a pod is retried as an unschedulable
        one (``_retry_later``). Without it the pod waited for the next pod event (523 s on
        examples/clinic-spikes with the cost-optimal repair on small launches)."""
        claims = self.state.nodeclaims
        # Index the NodeClaims written since the last call by the pods they were made for
        # (``nominated`` is fixed at creation), rather than walk every NodeClaim ever seen.
        for name in claims.log[self._nominated_seen :]:
            claim = claims.get(name)
            for uid in claim.nominated if claim is not None else ():
                self._nominated_in.setdefault(uid, []).append(name)
        self._nominated_seen = len(claims.log)
        for p in pending:
            for name in self._nominated_in.get(p.uid, ()):
                claim = claims.get(name)
                if claim is None or p.uid not in claim.nominated:
                    continue  # removed, or a NodeClaim made anew under that name
                node = self.state.node_of_claim(claim)
                if node is not None and node.ready:
                    self._retry_later(None)
                    return

    def _retry_later(self, _uids: Any) -> None:
        if self._retry_scheduled:
            return
        self._retry_scheduled = True

        def retry() -> None:
            self._retry_scheduled = False
            if self.state.pending_pods():
                self.batcher.trigger()

        self.clock.after(RETRY_UNSCHEDULABLE_S, retry, label="retry-unschedulable")

    def warnings(self) -> list[str]:
        """Load warnings, notes on what this run does not model, and dead configuration."""
        return run_report.warnings(self)

    def run(self, progress: Callable[[float], None] | None = None) -> RunResult:
        """Run the scenario to its end and build the summary. Log lines (``-v``) carry the
        simulated time (``[t=1h2m3s]``) while it runs."""
        stamp = _SimTime(self.clock)
        handlers = list(logging.getLogger().handlers)
        for h in handlers:
            h.addFilter(stamp)
        try:
            return self._run(progress)
        finally:
            for h in handlers:
                h.removeFilter(stamp)

    def _run(self, progress: Callable[[float], None] | None) -> RunResult:
        warnings = self.warnings()
        warnings += self._adopt_running()
        for w in warnings:
            log.warning("%s", w)
        self._start_workloads()
        if self.autoscaler is not None:
            self.autoscaler.start(self.scenario.duration_s)
        for at_s, event in self.scenario.events:
            self.clock.at(at_s, partial(self.cloud.inject, event), label="captured-event")
        for at_s, experiment in self.experiments:
            experiment.start(at_s)
        if self.joiner:
            for claim in self.state.live_nodeclaims():  # adopted from a running cluster
                self.expiration.watch(claim)
            self.disruption.start()
            if self.health is not None:
                self.health.start()
            if self.static is not None:
                self.static.start()
        self.clock.run_until(self.scenario.duration_s, progress=progress)
        return RunResult(summary=self._summary(warnings), state=self.state, cloud=self.cloud)

    def _adopt_running(self) -> list[str]:
        """Start from the running cluster the manifests describe (``sim.running.adopt``);
        returns its warnings."""
        in_flight: list[NodeClaim] = []
        warnings = adopt(
            self.scenario.manifests,
            self.state,
            self.cloud,
            self.pods,
            self._by_owner,
            on_in_flight=in_flight.append,
            pool_types=self.provisioner.overlaid_types(),
        )
        # consolidateAfter counts from the dump's last pod events, startTime being t=0.
        last_pod_events(self.scenario.manifests, self.state, self.scenario.start_time)
        for claim in in_flight:  # launched before t=0: the kubelet model registers it
            for listener in self.lifecycle.launch_listeners:
                listener(claim)
        for claim in self.state.live_nodeclaims():
            node = self.state.node_of_claim(claim)
            if claim.initialized_at_s is None and node is not None and node.ready:
                # Ready but not initialized in the dump: its initialization completes at
                # the start (a NotReady one waits, as Karpenter's initialization does).
                self.clock.at(0.0, partial(self.kubelet.ready, claim), label="node-ready")
        for node in [n for _, n in sorted(self.state.nodes.items()) if n.deleting]:
            # Being deleted in the dump: Karpenter's termination controller drains it.
            self.clock.at(0.0, partial(self.terminator.drain, node, "deleting"), label="drain")
        return warnings

    def _start_workloads(self) -> None:
        """Start the workload controllers and ``spec.schedules`` for the run's duration."""
        duration_s = self.scenario.duration_s
        for d in self.deployments:
            d.start(duration_s)
        for h in self.hpas:
            h.start(duration_s)
        for cpa in self.workloads.proportional:
            cpa.start(duration_s)
        ScheduleRunner(self.scenario.schedules, self.clock, self._scheduled_minimum).start()
        for j in self.jobs:
            j.start()
        for c in self.cronjobs:
            c.start(duration_s)

    def _summary(self, warnings: list[str]) -> dict[str, Any]:
        """The run's summary document (``sim.report.build_summary``), once it has ended."""
        summary = build_summary(
            name=self.scenario.name,
            region=self.scenario.region,
            seed=self.scenario.seed,
            duration_s=self.scenario.duration_s,
            state=self.state,
            catalog=self.catalog,
            warnings=warnings,
            timeline=self.timeline.entries,
            pdb_violations=self.pdb_violations,
            provisioning=run_report.provisioning(self),
            policy=run_report.policy(self, RETRY_UNSCHEDULABLE_S),
            disruptions=run_report.disruptions(self),
            reclaim_events=self.cloud.reclaim_events,
        )
        if self.cloud.reservations:
            summary["capacityReservations"] = run_report.capacity_reservations(self)
        if self.scenario.windows:
            summary["windows"] = windows.summarize(
                self.state, self.scenario.duration_s, self.scenario.windows
            )
        explain = self._explain()
        if explain is not None:
            summary["explain"] = explain
        return summary


class _SimTime(logging.Filter):
    """Prefixes each log record with the simulated time of the run."""

    def __init__(self, clock: SimClock) -> None:
        super().__init__()
        self._clock = clock

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "joiner_sim_time", False):
            record.msg = f"[t={durations.format_seconds(self._clock.now())}] {record.msg}"
            record.joiner_sim_time = True
        return True


def _cluster_state(m: ManifestSet, static: bool) -> tuple[ClusterState, list[str]]:
    """``sim.running.cluster_state`` with its NodePools as the ``StaticCapacity`` gate
    leaves them (``scheduling.static.gated``: ``static`` False drops ``replicas``)."""
    state, warnings = cluster_state(m)
    state.nodepools = {p.name: p for p in gated(m.nodepools, static)}
    return state, warnings
