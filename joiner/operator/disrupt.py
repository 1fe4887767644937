"""``joiner disrupt``: the disruption commands successive passes would take on a running
cluster, as a dry run.

The cluster is read as ``joiner simulate`` starts from one (``sim.running.adopt``): Nodes of
a NodePool with a known instance type, zone and capacity type are launched, initialized
NodeClaims; Pods with ``spec.nodeName`` there are bound; other live Pods, and a workload's
replicas not listed as Pods, are pending; a pending Pod kube-scheduler nominated to a node
by preemption (``status.nominatedNodeName``) is listed and no pass provisions for it
(Karpenter ``IsProvisionable``). ``consolidateAfter`` counts from the node's NodeClaim's
``status.lastPodEventTime`` (else its ``Initialized`` condition's transition time) at ``at``;
when the dump has neither, it is treated as elapsed (unless ``Never``). Each pass runs the
disruption methods in Karpenter's order and the first command is applied as if it completed
at once: replacements come up, the candidates' pods move where the simulation put them, the
candidates go. Passes repeat until none produces a command;
every node no command touched is listed with the reason the last pass gave.

Budget schedules are evaluated at ``at`` (UTC). Nodes that are not managed by a NodePool
(managed node groups, Fargate) are static capacity: never disrupted, but their pods run and
count for PDBs, and their spare room takes pods, as in Karpenter's consolidation
simulation. Nodes being deleted are never candidates; their pods still count as healthy for
PDBs, as in the dump's PDB status, and must find room elsewhere.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from joiner.api import labels
from joiner.api.featuregates import FeatureGates
from joiner.api.grouping import grouped, plural
from joiner.api.manifests import ManifestSet
from joiner.api.outputs import (
    DisruptionPlan,
    NodeVerdictHistory,
    Nominated,
    PlannedDisruption,
    PlannedReplacement,
    Unconsolidatable,
)
from joiner.api.overlays import gate_warnings
from joiner.api.plan_output import StaticDeletion
from joiner.cloudprovider.catalog import Catalog
from joiner.cloudprovider.overlay import Overlays
from joiner.cloudprovider.reservations import CapacityReservation
from joiner.cloudprovider.simulated import SimulatedCloudProvider
from joiner.cloudprovider.types import (
    CloudProviderError,
    InstanceType,
    NodeClaimNotFoundError,
    SecurityGroup,
    Subnet,
)
from joiner.controllers.disruption.command import Command
from joiner.controllers.disruption.history import (
    ALL_NODES,
    HistoryEntry,
    Outcome,
    VerdictHistory,
    explain_names,
    unknown_node,
)
from joiner.controllers.disruption.verdicts import Verdict, VerdictKind
from joiner.controllers.nodeclaim.lifecycle import Lifecycle
from joiner.controllers.provisioning.provisioner import Provisioner
from joiner.controllers.static.controller import members
from joiner.controllers.termination.controller import cordon
from joiner.operator.composition import Hooks, Options, Ports, new_controllers
from joiner.operator.lint import lint_lines
from joiner.operator.plan import SpotPrices, missing_replicas, planning_cloud, price_fields
from joiner.scheduling.costopt import KARPENTER
from joiner.scheduling.static import (
    Member,
    deprovision_order,
    gated,
    is_static,
    to_deprovision,
)
from joiner.scheduling.static import gate_warnings as static_gate_warnings
from joiner.sim.clock import SimClock
from joiner.sim.running import adopt, cluster_state, last_pod_events
from joiner.sim.timeline import SimTimeline
from joiner.sim.workloads import PodFactory
from joiner.state.cluster import ClusterState
from joiner.state.staticcount import pool_count

#: Safety stop for the pass loop (each command removes or cheapens at least one node).
MAX_COMMANDS = 1000


class DryRun:
    """A running cluster read from manifests, with the controllers a disruption pass uses.

    Attributes:
        state: the cluster state; ``controller`` the disruption controller over it;
        ``warnings`` what reading the manifests warned about.
    """

    def __init__(
        self,
        m: ManifestSet,
        catalog: Catalog,
        region: str,
        *,
        at: datetime,
        subnets: Sequence[Subnet] | None = None,
        security_groups: Sequence[SecurityGroup] = (),
        feature_gates: FeatureGates | None = None,
        kwok_types: Sequence[InstanceType] | None = None,
        reservations: Sequence[CapacityReservation] = (),
        spot_prices: SpotPrices | None = None,
    ) -> None:
        gates = feature_gates or FeatureGates()
        self.spot_prices = spot_prices
        self.region = region
        self.manifests = m
        self.warnings = list(m.warnings)
        if m.capacitybuffers or gates.capacity_buffer:
            self.warnings.append(
                "not modelled: CapacityBuffer (Karpenter's CapacityBuffer feature gate) in "
                "joiner disrupt; consolidation here ignores the buffers' virtual pods"
            )
        if gates.node_repair:
            self.warnings.append(
                "not modelled: node repair (Karpenter's NodeRepair feature gate) in joiner "
                "disrupt; its passes never replace unhealthy nodes"
            )
        self.cloud = planning_cloud(
            m,
            catalog,
            region,
            subnets,
            security_groups,
            self.warnings,
            kwok_types,
            market=spot_prices.market if spot_prices is not None else None,
            reservations=reservations if gates.reserved_capacity else (),
        )
        if spot_prices is not None:
            self.warnings += spot_prices.warnings()
        # ``joiner lint``'s findings, as ``joiner plan`` prints them (``plan._plan_warnings``).
        self.warnings += lint_lines(
            m, catalog, region, (subnets, security_groups, kwok_types, reservations), gates
        )
        self.clock = SimClock()
        state, volume_warnings = cluster_state(m)
        state.nodepools = {p.name: p for p in gated(m.nodepools, gates.static_capacity)}
        self.warnings += static_gate_warnings(m.nodepools, gates.static_capacity)
        self.state = state
        self.warnings += volume_warnings
        built = new_controllers(
            Ports(
                state,
                self.cloud,
                self.clock,
                SimTimeline(self.clock),
                region,
                random.Random(0),
                self.cloud.get_instance_types,
                self.cloud.is_drifted,
            ),
            Options(
                packing=KARPENTER,
                interruption=None,
                spot_to_spot=gates.spot_to_spot_consolidation,
                epoch=at,
                event_flow=False,
            ),
            Hooks(),
        )
        self.lifecycle = built.lifecycle
        self.provisioner = built.provisioner
        self.warnings += gate_warnings(m.nodeoverlays, gates.node_overlay)
        if gates.node_overlay and m.nodeoverlays:
            self.provisioner.overlays = Overlays(m.nodeoverlays)
            self.provisioner.templates()  # resolves them, so conflicts are known now
            self.warnings += self.provisioner.overlays.warnings()
        #: The disruption controller: its passes are computed, never executed.
        self.controller = built.disruption
        self.pods = PodFactory(state, self.clock)
        #: The NodePools' Nodes the starting cluster leaves out, and why (``adopt``).
        self.left_out: dict[str, str] = {}
        self.warnings += adopt(
            m,
            state,
            self.cloud,
            self.pods,
            {w.key: w for w in m.workloads},
            settles_pending=True,
            pool_types=self.provisioner.overlaid_types(),
            left_out=self.left_out,
        )
        self._settle_pods(at)
        last_pod_events(m, state, at)
        _add_missing_replicas(m, self.pods)
        #: Pending pods nominated to a node of the dry run by preemption: never demand.
        self.nominated = [
            Nominated(pod=f"{p.namespace}/{p.name}", node=p.nominated_node_name)
            for p in state.pending_pods()
            if p.nominated_node_name is not None
        ]

    def _settle_pods(self, at: datetime) -> None:
        """Pods as they run at ``at``: started when their ``status.startTime`` says (a
        duration-valued do-not-disrupt counts from there); pods on nodes Joiner leaves
        alone keep running there and are not demand."""
        by_key = {(p.namespace, p.name): p for p in self.state.pods.values()}
        listed = {n.name for n in self.manifests.nodes}
        left: dict[bool, list[str]] = {True: [], False: []}
        for sp in self.manifests.pods:
            pod = by_key.get((sp.namespace, sp.name))
            if pod is None:
                continue
            if sp.node_name is not None and sp.node_name not in self.state.nodes:
                pod.deleted_at_s = 0.0  # stays where it runs; not part of this dry run
                left[sp.node_name in listed].append(
                    f"{sp.namespace}/{sp.name} (node {sp.node_name}, {sp.source.file})"
                )
                continue
            if sp.started_at is not None and pod.node_name is not None:
                pod.bound_at_s = (sp.started_at - at).total_seconds()
        for is_listed, where in ((True, "Joiner leaves alone"), (False, "not in the manifests")):
            if left[is_listed]:
                self.warnings.append(
                    grouped(
                        f"{plural(len(left[is_listed]), 'pod')} on nodes {where} stay there, "
                        "not part of this dry run",
                        left[is_listed],
                    )
                )

    def _offered(self, nodepool: str, type_name: str) -> bool:
        """Whether ``nodepool``'s NodeClass offers instance type ``type_name`` here."""
        pool = self.state.nodepools[nodepool]
        try:
            types = self.cloud.get_instance_types(pool.node_class_ref.name)
        except CloudProviderError:
            return False
        return any(t.name == type_name for t in types)

    def _left_alone(self, name: str) -> Verdict:
        """Why a Node of the manifests is not part of the dry run, as a candidate-selection
        verdict (no NodePool label, its NodePool missing, or an offering it cannot price)."""
        n = next(x for x in self.manifests.nodes if x.name == name)
        node_labels = dict(n.labels)
        if n.nodepool is None:
            return Verdict(VerdictKind.NOT_MANAGED)
        if n.nodepool not in self.state.nodepools:
            return Verdict(VerdictKind.POOL_UNKNOWN, pool=n.nodepool)
        type_name = node_labels.get(labels.INSTANCE_TYPE)
        if type_name is None:
            return Verdict(VerdictKind.LABEL_MISSING, detail=labels.INSTANCE_TYPE)
        zone = node_labels.get(labels.ZONE)
        if zone is None:
            return Verdict(VerdictKind.LABEL_MISSING, detail=labels.ZONE)
        if name in self.left_out and self._offered(n.nodepool, type_name):
            # adopting it failed otherwise (its capacity type, its instance ID, ...)
            return Verdict(VerdictKind.NOT_ADOPTED, detail=self.left_out[name])
        return Verdict(
            VerdictKind.OFFERING_UNKNOWN,
            pool=n.nodepool,
            detail=f"{type_name} in {zone}",
        )

    def plan(self, explain: str | Sequence[str] | None = None) -> DisruptionPlan:
        """Run passes until none produces a command; see the module docstring. ``explain``:
        node names (or ``history.ALL_NODES``, ``history.explain_names``) whose verdict
        histories the plan carries.

        Raises:
            InputError: ``explain`` names no node, or a node not of the dry run.
        """
        state = self.state
        names = explain_names(explain) if explain is not None else None
        history = VerdictHistory() if names is not None else None
        self.controller.history = history
        managed = sorted(n for n, node in state.nodes.items() if node.nodeclaim is not None)
        before = _cost(state)
        commands: list[PlannedDisruption] = []
        touched: set[str] = set()
        reasons: dict[str, Verdict] = {}
        deletions = static_scale_down(state, self.clock.now(), unresolved_claims(self.manifests))
        touched.update(d.node for d in deletions if d.node is not None)
        for _ in range(MAX_COMMANDS):
            command, ctx = self.controller.compute(elapsed=True)
            reasons = ctx.reasons
            if command is None:
                break
            commands.append(_planned(command))
            touched.update(command.names)
            _apply(command, state, self.provisioner, self.lifecycle, self.cloud, self.clock)
            if history is not None:
                history.record_command(self.clock.now(), command)
        unmanaged = {
            n.name: Verdict(VerdictKind.BEING_DELETED) if n.deleting else self._left_alone(n.name)
            for n in sorted(self.manifests.nodes, key=lambda n: n.name)
            if n.name not in managed and n.name not in touched
        }
        left = [
            Unconsolidatable(
                node=name,
                reason=Verdict(VerdictKind.BEING_DELETED).message()
                if state.nodes[name].deleting
                else _message(reasons.get(name)),
            )
            for name in managed
            if name not in touched
        ] + [Unconsolidatable(node=name, reason=v.message()) for name, v in unmanaged.items()]
        return DisruptionPlan(
            region=self.region,
            commands=commands,
            unconsolidatable=left,
            savingsPerHour=round(sum(c.savingsPerHour for c in commands), 6),
            costPerHourBefore=round(before, 6),
            costPerHourAfter=round(_cost(state, deletions), 6),
            staticDeletions=deletions,
            **price_fields(self.spot_prices),
            nominated=self.nominated,
            warnings=self.warnings,
            explain=self._explain(history, names, unmanaged)
            if history is not None and names is not None
            else None,
        )

    def _explain(
        self, history: VerdictHistory, asked: tuple[str, ...], left_alone: dict[str, Verdict]
    ) -> dict[str, NodeVerdictHistory]:
        """The verdict histories ``--explain`` asks for (``asked``: node names, or
        ``ALL_NODES``). A Node of the manifests no pass saw (``left_alone``: name -> why; or
        being deleted) has one entry, candidate selection's verdict at the first pass.

        Raises:
            InputError: a name of ``asked`` is no node of the manifests.
        """
        outside = dict(left_alone)
        for n in self.manifests.nodes:  # an unmanaged Node being deleted: no pass saw it
            if history.of(n.name) is None and n.name not in outside:
                outside[n.name] = Verdict(VerdictKind.BEING_DELETED)
        if asked == (ALL_NODES,):
            names, extra = history.nodes(), outside
        else:
            names, extra = [], {}
            for name in asked:
                if history.of(name) is not None:
                    names.append(name)
                elif name in outside:
                    extra[name] = outside[name]
                else:
                    raise unknown_node(name, [*history.nodes(), *outside])
        docs = history.to_json(names)
        for node, verdict in extra.items():
            entry = HistoryEntry(at_s=0.0, pass_number=1, outcome=Outcome.KEPT, verdict=verdict)
            docs[node] = {"omitted": 0, "entries": [entry.to_json()]}
        return {n: NodeVerdictHistory.model_validate(docs[n]) for n in sorted(docs)}


def build_disruption_plan(
    m: ManifestSet,
    catalog: Catalog,
    region: str,
    *,
    at: datetime,
    subnets: Sequence[Subnet] | None = None,
    security_groups: Sequence[SecurityGroup] = (),
    feature_gates: FeatureGates | None = None,
    kwok_types: Sequence[InstanceType] | None = None,
    reservations: Sequence[CapacityReservation] = (),
    explain: str | Sequence[str] | None = None,
    spot_prices: SpotPrices | None = None,
) -> DisruptionPlan:
    """The dry run; see the module docstring. ``at`` is a timezone-aware UTC instant.
    ``spot_prices``: per-pool Spot prices (``plan.SpotPrices``, read at ``at``) for the
    running nodes and their replacements; None prices Spot regionally.
    ``kwok_types``: Karpenter-kwok's instance types, for KWOKNodeClass NodePools.
    ``reservations``: capacity reservations replacements may launch into (a Scenario's).
    ``explain``: nodes (or ``history.ALL_NODES``) whose verdict histories to include.

    Raises:
        InputError: from reading the NodeClasses against the VPC; ``explain`` names no node
            of the dry run.
    """
    return DryRun(
        m,
        catalog,
        region,
        at=at,
        subnets=subnets,
        security_groups=security_groups,
        feature_gates=feature_gates,
        kwok_types=kwok_types,
        reservations=reservations,
        spot_prices=spot_prices,
    ).plan(explain)


def _cost(state: ClusterState, leaving: Sequence[StaticDeletion] = ()) -> float:
    """The live NodeClaims' hourly price, but for those of ``leaving``."""
    gone = {d.nodeClaim for d in leaving}
    return sum(
        c.instance.offering.cost_per_hour
        for c in state.live_nodeclaims()
        if c.instance is not None and c.name not in gone
    )


def unresolved_claims(m: ManifestSet) -> dict[str, list[str]]:
    """The manifests' NodeClaims not launched yet (no ``status.providerID``) nor being
    deleted, by NodePool, by name: the dry run's cluster holds no such NodeClaim, but
    Karpenter's ``NodePoolState`` counts them and static deprovisioning deletes them first
    (``getDeprovisioningCandidates``), as ``joiner plan`` does (``plan_static``)."""
    out: dict[str, list[str]] = {}
    for c in sorted(m.nodeclaims, key=lambda c: c.name):
        if c.nodepool is not None and not c.launched and not c.deleting:
            out.setdefault(c.nodepool, []).append(c.name)
    return out


def static_scale_down(
    state: ClusterState, now_s: float, unresolved: dict[str, list[str]] | None = None
) -> list[StaticDeletion]:
    """Karpenter's static deprovisioning over the dry run's cluster: each static pool
    running more than ``replicas`` (``scheduling.static``) has its surplus NodeClaims, in
    upstream's order, marked deleting (their pods are demand for the passes that follow,
    and consolidation leaves them alone). ``unresolved``: each pool's NodeClaims not in
    ``state`` because not launched (``unresolved_claims``), counted and deleted first."""
    out: list[StaticDeletion] = []
    for name in sorted(state.nodepools):
        pool = state.nodepools[name]
        if not is_static(pool):
            continue
        waiting = (unresolved or {}).get(name, [])
        count = pool_count(state, name, frozenset())
        n = to_deprovision(pool, replace(count, active=count.active + len(waiting)))
        ranked = [Member(name=c, resolved=False) for c in waiting]
        ranked += members(state, pool, frozenset(), now_s)
        for claim_name in deprovision_order(ranked, n):
            out.append(_delete_static(state, name, claim_name))
    if out:
        state.touch()
    return out


def _delete_static(state: ClusterState, pool: str, claim_name: str) -> StaticDeletion:
    """Mark NodeClaim ``claim_name``'s Node deleting (cordoned); a NodeClaim not in
    ``state`` (not launched) has none."""
    claim = state.nodeclaims.get(claim_name)
    node = state.node_of_claim(claim) if claim is not None else None
    if node is not None:
        cordon(node)
        node.deleting = True
    return StaticDeletion(nodePool=pool, nodeClaim=claim_name, node=node.name if node else None)


def _add_missing_replicas(m: ManifestSet, pods: PodFactory) -> None:
    """Pending pods for workload replicas not listed as Pods (as ``joiner plan`` adds them)."""
    for w, name in missing_replicas(m):
        pods.create(w.key, w.template, name=name.split("/", 1)[1])


def _message(verdict: Verdict | None) -> str:
    """Why a managed node was left alone, in English."""
    return verdict.message() if verdict is not None else "no disruption method applies to it"


def _planned(command: Command) -> PlannedDisruption:
    return PlannedDisruption(
        method=command.method.value,
        reason=command.reason.value,
        candidates=command.names,
        replacements=[
            PlannedReplacement(
                instanceType=r.instance_type.name,
                zone=r.offering.zone,
                capacityType=r.offering.capacity_type,
                pricePerHour=round(r.offering.cost_per_hour, 6),
            )
            for r in command.replacements
        ],
        savingsPerHour=round(command.savings_per_hour, 6),
        detail="; ".join(c.drifted for c in command.candidates if c.drifted),
    )


def _apply(
    command: Command,
    state: ClusterState,
    provisioner: Provisioner,
    lifecycle: Lifecycle,
    cloud: SimulatedCloudProvider,
    clock: SimClock,
) -> None:
    """Complete ``command`` at once: replacements up, pods moved, candidates gone."""
    now = clock.now()
    for rep in command.replacements:
        claim = provisioner.create_nodeclaim(
            rep.new,
            capacity_types=rep.capacity_types,
            instance_types=rep.instance_types,
            replaces=tuple(command.names),
        )
        if claim.deleted_at_s is not None:
            continue
        lifecycle.register(claim, claim.name)
        lifecycle.initialize(claim)
        for uid in rep.new.pods:
            pod = state.pods[uid]
            if pod.node_name is not None and pod.node_name in command.names:
                pod.node_name = claim.name
    for uid, node in command.placements:
        state.pods[uid].node_name = node
    for c in command.candidates:
        for pod in state.pods_on(c.name):
            if is_static(c.pool) and not pod.daemon:
                # StaticDrift simulates no rescheduling: its pods are pending again.
                pod.node_name = None
                continue
            pod.deleted_at_s = now  # DaemonSet pods (workload pods moved above)
        c.node.deleted_at_s = now
        c.claim.deleted_at_s = now
        assert c.claim.instance is not None
        try:
            cloud.delete(c.claim.instance.provider_id)
        except NodeClaimNotFoundError:
            continue  # already gone: nothing left to delete
    state.touch()
