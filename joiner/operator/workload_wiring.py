"""The simulation's workload controllers, built from the scenario (part of the composition
root, split from ``wiring.py``): a ``DeploymentController`` per replicated workload, the HPA
controllers (the scenario's ``hpa:`` shorthand and ``autoscaling/v2`` objects), Jobs run to
completion, CronJobs, and how ``spec.schedules`` minimums reach them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api import durations
from joiner.api.labels import DO_NOT_DISRUPT
from joiner.controllers.provisioning.buffers import Buffers
from joiner.sim.clock import SimClock
from joiner.sim.hpa import ManifestHpaController
from joiner.sim.hpa import initial_replicas as hpa_initial_replicas
from joiner.sim.proportional import ProportionalController
from joiner.sim.scenario import Scenario
from joiner.sim.workloads import (
    CronJobController,
    DeploymentController,
    HpaController,
    JobController,
    PodFactory,
)
from joiner.state.cluster import ClusterState, Pod


class WorkloadControllers:
    """Every workload controller of a run; ``by_owner`` maps an owner key (``ns/name``) to
    the controller that replaces its evicted or lost pods (CronJobs' Jobs join it as they
    are created)."""

    def __init__(
        self,
        scenario: Scenario,
        state: ClusterState,
        clock: SimClock,
        pods: PodFactory,
        on_deleted: Callable[[Pod], None],
    ) -> None:
        m = scenario.manifests
        self.deployments = _deployments(scenario, state, clock, pods, on_deleted)
        self.by_owner: dict[str, Any] = {d.key: d for d in self.deployments}
        self.hpas: list[HpaController | ManifestHpaController] = [
            HpaController(w.hpa, self.by_owner[w.deployment], clock)
            for w in scenario.workloads
            if w.hpa is not None
        ]
        self.hpas += [
            ManifestHpaController(w.manifest_hpa, self.by_owner[w.deployment], clock)
            for w in scenario.workloads
            if w.manifest_hpa is not None
        ]
        self.jobs = [
            JobController(
                w.deployment,
                next(d.template for d in m.deployments if d.key == w.deployment),
                state,
                clock,
                pods,
                parallelism=w.replicas,
                completions=next(
                    d.completions or 0 for d in m.deployments if d.key == w.deployment
                ),
                run_for_s=w.run_for_s,
            )
            for w in scenario.workloads
            if w.run_for_s is not None
        ]
        self.by_owner.update({j.key: j for j in self.jobs})
        self.proportional = [
            ProportionalController(cpa, self.by_owner[cpa.target_key], state, clock)
            for cpa in m.proportional
            if cpa.params is not None
            and isinstance(self.by_owner.get(cpa.target_key), DeploymentController)
        ]
        self.cronjobs = [
            CronJobController(
                c.cronjob,
                c.fire_times_s,
                state,
                clock,
                pods,
                run_for_s=c.run_for_s,
                register=self._register_job,
            )
            for c in scenario.cronjobs
        ]

    def _register_job(self, job: JobController) -> None:
        self.by_owner[job.key] = job

    def scheduled_minimum(
        self, kind: str, target: str, minimum: int, buffers: Buffers | None
    ) -> bool:
        """Apply a ``spec.schedules`` minimum: a workload's HPA (its ``minReplicas``) or, with
        none, its replicas; a CapacityBuffer's size in ``buffers`` (None: the gate is off or
        the policy has no buffers). True when a buffer changed (the provisioner should run).
        """
        if kind == "buffer":
            if buffers is None:
                return False
            buffers.floors[target] = minimum
            return True
        hpa = next((h for h in self.hpas if h.deployment.key == target), None)
        if hpa is not None:
            hpa.set_floor(minimum)
        else:
            self.by_owner[target].set_floor(minimum)
        return False


def _deployments(
    scenario: Scenario,
    state: ClusterState,
    clock: SimClock,
    pods: PodFactory,
    on_deleted: Callable[[Pod], None],
) -> list[DeploymentController]:
    by_key = {w.deployment: w for w in scenario.workloads}
    out = []
    for d in scenario.manifests.deployments:
        w = by_key.get(d.key)
        dnd = durations.do_not_disrupt(dict(d.annotations).get(DO_NOT_DISRUPT))
        if w is not None and w.run_for_s is not None:
            continue  # a Job run to completion (jobs)
        if w is not None and w.hpa is not None:
            replicas = HpaController.initial_replicas(w.hpa)
        elif w is not None and w.manifest_hpa is not None:
            replicas = hpa_initial_replicas(w.manifest_hpa, w.replicas)
        elif w is not None and w.trace is None:
            replicas = w.replicas
        else:
            replicas = d.replicas
        out.append(
            DeploymentController(
                d.key,
                d.template,
                state,
                clock,
                pods,
                replicas=replicas,
                trace=w.trace if w is not None else None,
                do_not_disrupt=dnd[0],
                do_not_disrupt_for_s=dnd[1],
                on_deleted=on_deleted,
            )
        )
    return out
