"""What a simulation run reports besides its timeline: its warnings (load warnings, what the
run does not model, dead configuration) and the summary's ``provisioning``, ``policy`` and
``disruptions`` sections, read from a run (``SimulationRun``: ``operator/wiring.py``'s
``SimulationRuntime``) once it has ended (warnings: before it starts). It reads the run
through that protocol, so it does not import ``wiring.py`` back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from joiner.api.grouping import plural
from joiner.api.overlays import gate_warnings
from joiner.cloudprovider.reservations import select, status_entry
from joiner.operator.lint import lint_manifests
from joiner.scheduling.static import gate_warnings as static_gate_warnings
from joiner.scheduling.static import is_static
from joiner.sim.report import joiner_parameters

if TYPE_CHECKING:  # the run's types only: ``joiner lint`` imports this module too
    from joiner.cloudprovider.catalog import Catalog
    from joiner.cloudprovider.simulated import SimulatedCloudProvider
    from joiner.controllers.disruption import DisruptionController
    from joiner.controllers.expiration import ExpirationController
    from joiner.controllers.provisioning.batcher import Batcher
    from joiner.controllers.provisioning.provisioner import Provisioner
    from joiner.controllers.static import StaticCapacityController
    from joiner.sim.baseline import ClusterAutoscaler
    from joiner.sim.clock import SimClock
    from joiner.sim.nodes import KubeletModel
    from joiner.sim.scenario import Scenario
    from joiner.state.cluster import ClusterState


class SimulationRun(Protocol):
    """What this module reads of a run (``operator/wiring.py``'s ``SimulationRuntime``).

    Attributes:
        policy: the policy's name; ``joiner``: Joiner's controllers run (not the Cluster
            Autoscaler baseline, whose ``autoscaler`` is then set); ``packing``: the
            provisioner's packing; ``volume_warnings``: what reading volumes warned about.
    """

    policy: str
    joiner: bool
    packing: str
    scenario: Scenario
    catalog: Catalog
    clock: SimClock
    state: ClusterState
    cloud: SimulatedCloudProvider
    volume_warnings: list[str]
    autoscaler: ClusterAutoscaler | None
    provisioner: Provisioner
    batcher: Batcher
    kubelet: KubeletModel
    disruption: DisruptionController
    expiration: ExpirationController
    static: StaticCapacityController | None


def provisioning(rt: SimulationRun) -> dict[str, int]:
    """The summary's ``provisioning`` section: passes, NodeClaims created, launch failures
    (the Cluster Autoscaler baseline's scans and launches in its run)."""
    if rt.autoscaler is not None:
        st = rt.autoscaler.stats
        return {
            "passes": st.scans,
            "nodeClaimsCreated": st.launches,
            "launchFailures": st.launch_failures,
        }
    return {
        "passes": rt.provisioner.stats.passes,
        "nodeClaimsCreated": rt.provisioner.stats.nodeclaims_created,
        "launchFailures": rt.provisioner.stats.launch_failures,
    }


def policy(rt: SimulationRun, retry_s: float) -> dict[str, Any]:
    """The summary's ``policy`` section: the policy's name and parameters (``retry_s``: how
    long after a pass unschedulable pods are retried)."""
    boot = rt.kubelet.boot
    if rt.autoscaler is not None:
        described = rt.autoscaler.describe()
        described["parameters"]["nodeReadySecondsAfterLaunch"] = {
            "min": boot.ready_min_s,
            "max": boot.ready_max_s,
        }
        return described
    params = joiner_parameters(
        batch_idle_s=rt.batcher.idle_s,
        batch_max_s=rt.batcher.max_s,
        retry_s=retry_s,
        ready_min_s=boot.ready_min_s,
        ready_max_s=boot.ready_max_s,
        packing=rt.packing,
    )
    # With the StaticCapacity gate: the static pools' NodeClaims created and deleted (they
    # are in provisioning.nodeClaimsCreated too).
    stats = (
        {}
        if rt.static is None
        else {
            "staticNodeClaimsCreated": rt.static.created,
            "staticNodeClaimsDeleted": rt.static.deleted,
        }
    )
    return {"name": rt.policy, "parameters": params, "stats": stats}


def repair_tolerations_warning(scenario: Scenario, *, joiner: bool = True) -> str | None:
    """The warning that ``spec.settings.nodeRepairTolerations`` has no effect (node repair
    off, or the Cluster Autoscaler policy, which repairs nothing), or None: a field Joiner
    accepts has its effect or says it has none. ``joiner simulate`` and ``joiner lint``."""
    if not scenario.repair_tolerations_s or (scenario.feature_gates.node_repair and joiner):
        return None
    return f"{scenario.file}: spec.settings.nodeRepairTolerations has no effect in " + (
        "this policy's run (Cluster Autoscaler repairs no nodes)"
        if not joiner
        else "this run: node repair is off (Karpenter's NodeRepair feature gate; "
        "spec.settings.featureGates.nodeRepair: true or --feature-gates NodeRepair=true)"
    )


def overlay_warnings(rt: SimulationRun) -> list[str]:
    """NodeOverlays without effect: all of them with the ``NodeOverlay`` gate off or under
    the Cluster Autoscaler policy (which reads none); those left out for a conflict."""
    m = rt.scenario.manifests
    if not rt.joiner:
        return [
            f"{o.where}: NodeOverlay not modelled in this policy's run (Cluster Autoscaler "
            "reads no NodeOverlays)"
            for o in m.nodeoverlays
        ]
    overlays = rt.provisioner.overlays
    if overlays is not None:
        rt.provisioner.overlaid_types()  # evaluates them: the conflicts are known
        return overlays.warnings()
    return gate_warnings(m.nodeoverlays, rt.scenario.feature_gates.node_overlay)


def static_warnings(rt: SimulationRun) -> list[str]:
    """Static NodePools without effect: with the ``StaticCapacity`` gate off, or under the
    Cluster Autoscaler policy (whose node groups follow demand)."""
    m = rt.scenario.manifests
    if not rt.joiner:
        return [
            f"{p.source.file}: NodePool/{p.name}: field spec.replicas (a static NodePool) is "
            "not modelled in this policy's run (Cluster Autoscaler's node groups follow demand)"
            for p in m.nodepools
            if is_static(p)
        ]
    return static_gate_warnings(m.nodepools, rt.scenario.feature_gates.static_capacity)


def warnings(rt: SimulationRun) -> list[str]:
    """Load warnings, notes on what this run does not model, and dead configuration."""
    m = rt.scenario.manifests
    out: list[str] = [*m.warnings, *rt.volume_warnings, *rt.scenario.interruption.warnings]
    if m.capacitybuffers and not (rt.scenario.feature_gates.capacity_buffer and rt.joiner):
        names = ", ".join(b.source.ref for b in m.capacitybuffers[:3])
        out.append(
            f"{plural(len(m.capacitybuffers), 'CapacityBuffer')} ({names}) not modelled in "
            + (
                "this policy's run (Cluster Autoscaler's buffers are not modelled)"
                if not rt.joiner
                else "this run: Karpenter reads them only with its CapacityBuffer feature "
                "gate (spec.settings.featureGates.capacityBuffer: true)"
            )
        )
    out += overlay_warnings(rt)
    out += static_warnings(rt)
    repair = repair_tolerations_warning(rt.scenario, joiner=rt.joiner)
    if repair is not None:
        out.append(repair)
    for run in rt.scenario.cronjobs:
        cj = run.cronjob
        if run.defaulted and run.fire_times_s:
            out.append(
                f"{cj.source.ref} ({cj.source.file}): its pods run {run.run_for_s / 60:g}m "
                "each (the default; set runFor in a spec.workloads entry for it)"
            )
    out += [
        str(w)
        for w in lint_manifests(
            m,
            rt.catalog,
            rt.scenario.region,
            subnets=rt.scenario.subnets,
            security_groups=rt.scenario.security_groups,
            reservations=rt.cloud.reservations,
            static_capacity=rt.static is not None,
        )
    ]
    return out


def disruptions(rt: SimulationRun) -> dict[str, Any]:
    """The summary's ``disruptions`` section: commands by method, pods evicted, savings."""
    s = rt.disruption.stats
    return {
        "byMethod": dict(sorted(s.by_method.items())),
        "podsEvicted": s.pods_evicted,
        "savingsPerHour": round(s.savings_per_hour, 6),
        "expired": rt.expiration.expired,
        "rejected": s.rejected,
        "commands": s.commands,
    }


def capacity_reservations(rt: SimulationRun) -> list[dict[str, Any]]:
    """Each reservation of the simulated account at the end of the run: the NodeClasses whose
    ``capacityReservationSelectorTerms`` select it (their ``status.capacityReservations``
    entry, in Karpenter-AWS's shape), its size, and how many instances ran in it at once
    at most and at the end."""
    now = rt.clock.now()
    free = rt.cloud.reservation_counts()
    peak: dict[str, int] = {}
    events = sorted(
        (t, step, claim.instance.offering.reservation_id)
        for claim in rt.state.nodeclaims.values()
        if claim.instance is not None and claim.instance.offering.reservation_id
        for t, step in ((claim.instance.launched_at_s, 1), (claim.deleted_at_s, -1))
        if t is not None
    )
    running: dict[str, int] = {}
    for _, step, rid in events:
        running[rid] = running.get(rid, 0) + step
        peak[rid] = max(peak.get(rid, 0), running[rid])
    out = []
    for r in rt.cloud.reservations:
        by = sorted(
            nc.name
            for nc in rt.scenario.manifests.nodeclasses
            if select([r], nc.capacity_reservation_selector_terms, now)
        )
        out.append(
            {
                **status_entry(r),
                "instanceCount": r.instance_count,
                "availableInstanceCount": free.get(r.id, r.instance_count),
                "peakInstancesRunning": peak.get(r.id, 0),
                "selectedBy": by,
            }
        )
    return out
