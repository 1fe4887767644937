"""``joiner chaos run``: one FIS experiment against a scenario, and its verdict.

The experiment starts at ``at`` (by default the moment every pod of the initial workload
first runs, found by a first run of the scenario without it). The verdict window runs from
the start until every target is gone or restored and every pod that can run is Running
again, at most the experiment's length plus 30 minutes. The scenario's own faults and
hazard model stay as configured. Survived means no pod lost and no PodDisruptionBudget
violated in the window, every pod running again by its end, and every target resolved to
something (FIS fails an experiment whose targets are empty).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from joiner.api.errors import InputError
from joiner.faults.experiment import experiment_length_s
from joiner.faults.template import Template
from joiner.operator.wiring import SimulationRuntime
from joiner.sim.report import interruptions, percentile
from joiner.sim.scenario import Scenario
from joiner.sim.timeline import Entry

SETTLE_S = 1800.0


@dataclass(frozen=True)
class Verdict:
    """What ``joiner chaos run -o json`` prints."""

    survived: bool
    at_s: float
    window_end_s: float
    body: dict[str, Any]


def initial_workload_running_at(scenario: Scenario) -> float:
    """When every pod created at t=0 first ran, from a run without the experiment.

    Raises:
        InputError: some never ran (pass ``--at``).
    """
    # The workload's first minutes are enough to find its start; no need for the whole run.
    rt = SimulationRuntime(replace(scenario, duration_s=min(scenario.duration_s, 3600.0)))
    rt.run()
    first = [p for p in rt.state.pods.values() if p.created_at_s == 0.0 and not p.daemon]
    if not first or any(p.bound_at_s is None for p in first):
        raise InputError(
            "the scenario's initial workload never runs completely, so there is no default "
            "start; give --at",
            field="--at",
        )
    return max(p.bound_at_s or 0.0 for p in first)


def run_experiment(scenario: Scenario, template: Template, at_s: float | None) -> Verdict:
    """Run ``template`` in ``scenario`` at ``at_s`` and judge it (see the module docstring)."""
    if at_s is not None and at_s >= scenario.duration_s:
        raise InputError(
            f"--at must fall within the scenario's duration ({scenario.duration_s:.0f} s)",
            field="--at",
        )
    start = initial_workload_running_at(scenario) if at_s is None else at_s
    length = experiment_length_s(template)
    horizon = start + length + SETTLE_S
    # Only the verdict window matters: run to its latest end, not the scenario's.
    rt = SimulationRuntime(replace(scenario, duration_s=horizon))
    experiment = rt.add_experiment(template, start)
    rt.run()
    state = rt.state
    end_of_actions = start + length
    pods = [p for p in state.pods.values() if not p.daemon]
    pending_ends = []
    intervals = []
    for p in pods:
        until = p.bound_at_s if p.bound_at_s is not None else p.deleted_at_s
        if until is None:
            until = horizon
        if until < start or p.created_at_s > horizon:
            continue
        if until > p.created_at_s:
            intervals.append(
                (max(p.created_at_s, start), min(until, horizon), until - p.created_at_s)
            )
            pending_ends.append(until)
    window_end = min(horizon, max([end_of_actions, *pending_ends]))
    sweep = sorted(
        [(a, 1) for a, b, _ in intervals if a <= window_end]
        + [(b, -1) for a, b, _ in intervals if a <= window_end]
    )
    running = peak = 0
    for _, delta in sweep:
        running += delta
        peak = max(peak, running)
    lost = sum(
        1
        for p in pods
        if p.lost and p.deleted_at_s is not None and start <= p.deleted_at_s <= window_end
    )
    violations = sum(1 for t in rt.pdb_violation_times if start <= t <= window_end)
    window: list[Entry] = [e for e in rt.timeline.entries if start <= e.at_s <= window_end]
    figures = interruptions(state, window, violations)
    cost = 0.0
    for claim in state.nodeclaims.values():
        if claim.instance is None or claim.launched_at_s is None:
            continue
        a = max(claim.launched_at_s, start)
        b = min(claim.deleted_at_s if claim.deleted_at_s is not None else window_end, window_end)
        if b > a:
            cost += (b - a) / 3600.0 * claim.instance.offering.price_per_hour
    still_pending = sum(
        1
        for p in pods
        if p.created_at_s <= window_end
        and (p.bound_at_s is None or p.bound_at_s > window_end)
        and (p.deleted_at_s is None or p.deleted_at_s > window_end)
    )
    survived = lost == 0 and violations == 0 and still_pending == 0 and not experiment.empty
    body = {
        "survived": survived,
        "experiment": template.description or template.file,
        "atSeconds": round(start, 3),
        "windowEndSeconds": round(window_end, 3),
        "targets": len(experiment.targets),
        "podsLost": lost,
        "pdbViolations": violations,
        "maxPodsPending": peak,
        "maxPendingSeconds": round(max((w for _, _, w in intervals), default=0.0), 3),
        "replacementLeadTimeSeconds": figures["replacementLeadTimeSeconds"],
        "costDuringExperiment": round(cost, 6),
        "podsPendingAtEnd": still_pending,
        "failedTargets": list(experiment.empty),
        "p50PendingSeconds": round(percentile([w for _, _, w in intervals], 0.5), 3),
    }
    return Verdict(survived, start, window_end, body)
